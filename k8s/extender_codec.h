// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1;
// ../shared/reference/kubernetes-protocol.md §1): decoded from request bodies with simdjson,
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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json/padded_text.h"
#include "k8s/objects.h"
#include "common/result.h"

namespace fracpack::k8s {

// A Node sent in full (nodeCacheCapable: false): its name, and its text, to
// echo back unmodified when it passes. A node the ledger knows is judged
// by the ledger's view of it (the informer's, with fail-closed cordons), so
// only its name is read; the rest is decoded (parse_node(json)) only for a
// node the ledger does not know.
struct ExtenderNode {
  std::string_view name;  // metadata.name: a view into the body (or into storage, if escaped)
  std::string_view json;  // a view into the request body
  size_t item = 0;        // its index in Nodes.items (for messages)
};

// A NodeNames list decoded before. kube-scheduler sends the same candidates
// for pod after pod: a request whose list is this one byte for byte takes
// these names whole instead of decoding 5 000 strings again.
struct KnownNodeNames {
  std::string text;                     // the array as it was sent, brackets included
  std::vector<std::string_view> names;  // views into text
  // From a request's list: `text` its array text, `names` views into it
  // (null if one is not).
  static std::shared_ptr<const KnownNodeNames> copy_of(std::string_view text, const std::vector<std::string_view>& names);
};

// ExtenderArgs: the body of filter and prioritize.
struct ExtenderArgs {
  std::optional<Pod> pod;
  // NodeNames: views into the body, into storage, or into known_names.
  std::optional<std::vector<std::string_view>> node_names;
  std::optional<std::vector<ExtenderNode>> nodes;  // Nodes.items
  std::deque<std::string> storage;                 // names that had JSON escapes, decoded
  // The NodeNames array's text in the body, brackets included (empty if a
  // name had escapes): what a repeated candidate list is recognised by.
  std::string_view node_names_text;
  // Set when NodeNames was one of the known lists given to the parser.
  std::shared_ptr<const KnownNodeNames> known_names;
};

// `body` must outlive the result (names and node texts are views into it);
// a padded body (common/json/padded_text.h) is parsed in place, any other
// copied first. `known`: lists to take NodeNames from when the body's is
// one of them.
Result<ExtenderArgs> parse_extender_args(PaddedText body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known = {});

// Reasons and errors in replies are cut to this many bytes (with "..."):
// they may quote what the pod asked for, and a reply must not grow with it.
inline constexpr size_t kMaxReasonBytes = 512;

// ExtenderFilterResult, written as verdicts come (no maps, no copies of
// reasons). Passing nodes are answered the way they came: pass() each one's
// name, or its unmodified object text with `full_nodes`; fail() each
// rejected one (FailedNodes, or FailedAndUnresolvableNodes); then finish().
// The caller answers each distinct node once (FailedNodes is a map).
// `text` with every '%' written as " percent": kube-scheduler records an
// extender's reasons as a printf format (its Events would read
// "65%!c(MISSING)ompute").
std::string printf_safe(std::string_view text);

class FilterReplyWriter {
 public:
  // `max_bytes`: the reply's budget; past it, what was written is dropped
  // and over_budget() tells the caller to refuse the request instead.
  FilterReplyWriter(bool full_nodes, size_t expected, size_t max_bytes = SIZE_MAX);
  // Room for this many bytes of passing entries (a full NodeList's objects:
  // the reply is then written without growing).
  void reserve(size_t bytes);
  void pass(std::string_view name_or_object);
  void fail(std::string_view node, std::string_view reason, bool unresolvable);
  // The same, pre-rendered (a cache of answers keeps them): a passing
  // node's entry as pass() writes it, a failing one's as fail() does.
  static void render_pass(std::string& out, std::string_view name_or_object, bool full_nodes);
  static void render_fail(std::string& out, std::string_view node, std::string_view reason);
  void pass_rendered(std::string_view entry);
  void fail_rendered(std::string_view entry, bool unresolvable);
  bool over_budget() const { return over_; }
  // Also list each unresolvable node in FailedNodes: kube-scheduler before
  // 1.21 knows no FailedAndUnresolvableNodes and drops those nodes without
  // their reason ("0/50 nodes are available: ."); later ones let that map
  // win (../shared/reference/kubernetes-protocol.md §2.4).
  void list_unresolvable_as_failed(bool on) { unresolvable_as_failed_ = on; }
  // `no_nodes`: neither NodeNames nor Nodes (the request had neither).
  // Once: the writer is spent after it.
  std::string finish(std::string_view error = "", bool no_nodes = false);

 private:
  // The part an entry goes to, after its separator; null once over budget.
  std::string* next_passed();
  std::string* next_failed(bool unresolvable);
  void charge();
  void also_failed(std::string_view entry);
  bool full_nodes_;
  bool unresolvable_as_failed_ = false;
  bool over_ = false;
  size_t max_bytes_;
  size_t passes_ = 0;
  std::string passed_;  // the reply's start, up to the passing entries
  std::string failed_, unresolvable_;
};

// HostPriorityList: a bare array.
struct HostPriority {
  std::string_view host;  // a view (into the request, or the caller's names)
  int64_t score = 0;
};
std::string format_host_priorities(const std::vector<HostPriority>& list);
// One HostPriority as format_host_priorities writes it. Scores 0..10 (all
// an extender gives) take two characters, `"Score": 9` and `"Score":10`, so
// a kept reply can write a changed score over in place: returns where they
// are in `out`.
size_t append_host_priority(std::string& out, std::string_view host, int64_t score);
void write_score(char* at, int64_t score);  // 0..10, at the position append_host_priority returned

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
