// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1;
// kubernetes-protocol.md §1): decoded from request bodies with simdjson,
// reading only what fracpack needs, and encoded as Go would encode them:
// PascalCase keys, every field present, null for nil.
//
// Decoding follows Go's encoding/json: keys match case-insensitively (an
// exact match wins), unknown keys are ignored, null leaves a field absent.
// A body that is not JSON, or a field of the wrong type, is an error naming
// the field.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/result.h"

namespace fracpack::k8s {

// A Node sent in full (nodeCacheCapable: false): what fracpack reads of it,
// and its text, to echo back unmodified when it passes.
struct ExtenderNode {
  Node node;
  std::string_view json;  // a view into the request body
};

// ExtenderArgs: the body of filter and prioritize.
struct ExtenderArgs {
  std::optional<Pod> pod;
  std::optional<std::vector<std::string_view>> node_names;  // NodeNames (views into the body, or into storage)
  std::optional<std::vector<ExtenderNode>> nodes;           // Nodes.items
  std::deque<std::string> storage;                          // names that had JSON escapes, decoded
  // The NodeNames array's text in the body (empty if a name had escapes):
  // kube-scheduler sends the same candidate list for pod after pod.
  std::string_view node_names_text;
};

// `body` must outlive the result (names and node texts are views into it).
// `capacity`: the size of the buffer holding `body`; with simdjson's padding
// to spare (body.size() + 64) it is parsed in place, else copied.
Result<ExtenderArgs> parse_extender_args(std::string_view body, const Selection& selection, size_t capacity = 0);

// Reasons and errors in replies are cut to this many bytes (with "..."):
// they may quote what the pod asked for, and a reply must not grow with it.
inline constexpr size_t kMaxReasonBytes = 512;

// ExtenderFilterResult, written as verdicts come (no maps, no copies of
// reasons). Passing nodes are answered the way they came: pass() each one's
// name, or its unmodified object text with `full_nodes`; fail() each
// rejected one (FailedNodes, or FailedAndUnresolvableNodes); then finish().
// The caller answers each distinct node once (FailedNodes is a map).
class FilterReplyWriter {
 public:
  // `max_bytes`: the reply's budget; past it, what was written is dropped
  // and over_budget() tells the caller to refuse the request instead.
  FilterReplyWriter(bool full_nodes, size_t expected, size_t max_bytes = SIZE_MAX);
  void pass(std::string_view name_or_object);
  void fail(std::string_view node, std::string_view reason, bool unresolvable);
  bool over_budget() const { return over_; }
  // `no_nodes`: neither NodeNames nor Nodes (the request had neither).
  std::string finish(std::string_view error = "", bool no_nodes = false);

 private:
  void charge();
  bool full_nodes_;
  bool over_ = false;
  size_t max_bytes_;
  size_t passes_ = 0;
  std::string passed_, failed_, unresolvable_;
};

// HostPriorityList: a bare array.
struct HostPriority {
  std::string_view host;  // a view (into the request, or the caller's names)
  int64_t score = 0;
};
std::string format_host_priorities(const std::vector<HostPriority>& list);

// ExtenderBindingArgs / ExtenderBindingResult.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
Result<BindingArgs> parse_binding_args(std::string_view body);
std::string format_binding_result(std::string_view error);

// ExtenderPreemptionArgs: the preemptor and, per candidate node, the victims
// kube-scheduler proposes (UIDs; full pods are reduced to theirs).
struct PreemptionArgs {
  std::optional<Pod> pod;
  std::map<std::string, std::vector<std::string>> victims;  // node -> pod UIDs
  std::map<std::string, int64_t> pdb_violations;            // node -> NumPDBViolations
  bool meta = true;  // NodeNameToMetaVictims (true) or NodeNameToVictims
};
Result<PreemptionArgs> parse_preemption_args(std::string_view body, const Selection& selection);

// ExtenderPreemptionResult: NodeNameToMetaVictims.
struct MetaVictims {
  std::vector<std::string> uids;
  int64_t pdb_violations = 0;
};
std::string format_preemption_result(const std::map<std::string, MetaVictims>& victims);


}  // namespace fracpack::k8s
