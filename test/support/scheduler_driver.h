// A test double of kube-scheduler's HTTPExtender side
// (../shared/reference/kubernetes-protocol.md §2, checklist §2.10): it sends compact bodies with
// every PascalCase key (null for the unused Nodes/NodeNames), filters
// through the extenders in order (ignorable ones last), prioritizes only
// when at least two nodes remain, adds score x weight x 10, binds through
// the first interested extender with a bind verb, treats any status but
// 200 as a failure, enforces the per-extender timeout (5 s default), and
// reads replies case-insensitively with null as absent, as Go does.
//
// Thread-safe: each call takes a connection from a small pool, so a bind
// can run on another thread while the next pod is filtered, as in
// kube-scheduler.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/api_client.h"
#include "common/result.h"

namespace fracpack::testing {

// One entry of KubeSchedulerConfiguration.extenders (§3).
struct ExtenderConfig {
  std::string url_prefix;  // "http://127.0.0.1:8888/" or "https://..."
  k8s::TlsOptions tls;     // with https (enableHTTPS + tlsConfig)
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string bind_verb = "bind";
  std::string preempt_verb = "preempt";
  int64_t weight = 1;
  bool node_cache_capable = true;
  bool ignorable = false;
  std::chrono::milliseconds http_timeout{0};  // 0: 5 s
  std::vector<std::string> managed_resources;  // empty: interested in every pod
};

// A candidate node: its name and, for nodeCacheCapable: false extenders,
// its Node object.
struct CandidateNode {
  std::string name;
  std::string json;
};

struct FilterOutcome {
  std::vector<std::string> nodes;                      // passed, in the extender's order
  std::map<std::string, std::string> failed;           // Unschedulable
  std::map<std::string, std::string> unresolvable;     // UnschedulableAndUnresolvable
};

struct CycleResult {
  std::string node;   // chosen; empty if none
  std::string error;  // the cycle failed with an error (not a fit failure)
  FilterOutcome filter;
  std::map<std::string, int64_t> scores;  // total extender score per node (prioritize was called)
  bool prioritized = false;
};

class SchedulerDriver {
 public:
  // Validates the configuration as kube-scheduler does (§3): at most one
  // bind verb, positive weights for extenders that prioritize.
  static Result<std::unique_ptr<SchedulerDriver>> create(std::vector<ExtenderConfig> extenders);
  ~SchedulerDriver();

  // One scheduling cycle for `pod_json` (a Pod object) over the candidates
  // (the nodes in-tree plugins kept, in order). Ties of the total score go
  // to the first in candidate order (kube-scheduler draws at random; tests
  // want determinism).
  CycleResult schedule(const std::string& pod_json, const std::vector<CandidateNode>& candidates);

  // The verbs, one extender each (index into the configuration order).
  Result<FilterOutcome> filter(size_t extender, const std::string& pod_json, const std::vector<CandidateNode>& candidates);
  Result<std::map<std::string, int64_t>> prioritize(size_t extender, const std::string& pod_json,
                                                    const std::vector<CandidateNode>& candidates);
  // Through the binding extender: ok, or the error kube-scheduler would report.
  Status bind(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node);
  // kube-scheduler binds only a pod its cycle has just filtered (fracpack
  // binds only pods it has judged): for tests that bind by hand, the pod
  // sent to every filtering extender (over no node), then bound.
  Status introduce(const std::string& pod_json);
  Status introduce_and_bind(const std::string& pod_json, const std::string& node);
  std::future<Status> introduce_and_bind_async(std::string pod_json, std::string node);
  std::future<Status> bind_async(std::string ns, std::string name, std::string uid, std::string node);
  // NodeNameToMetaVictims in (UIDs per node), the extender's answer out.
  Result<std::map<std::string, std::vector<std::string>>> preempt(size_t extender, const std::string& pod_json,
                                                                  const std::map<std::string, std::vector<std::string>>& victims);

  bool interested(size_t extender, const std::string& pod_json) const;
  const std::vector<ExtenderConfig>& extenders() const { return extenders_; }

  // The raw exchange (status and body) for protocol tests.
  Result<k8s::HttpResponse> post(size_t extender, const std::string& verb, const std::string& body);

 private:
  explicit SchedulerDriver(std::vector<ExtenderConfig> extenders);
  // POST and decode the reply (nlohmann::json), failing as kube-scheduler does.
  Result<nlohmann::json> call(size_t extender, const std::string& verb, const std::string& body);
  struct Pool;
  std::vector<ExtenderConfig> extenders_;
  std::vector<size_t> order_;  // non-ignorable first, each group in configuration order
  std::vector<std::unique_ptr<Pool>> pools_;
};

// kube-scheduler's in-tree NodeResourcesFit for CPU and memory over its
// own cache (the pods it bound): extenders only see the nodes that pass
// (§2.2). Requests are the pod's effective requests (max of the app
// containers' sum and each init container).
class ResourceFitFilter {
 public:
  Status add_node(const std::string& node_json);
  // The nodes with room for the pod, in the order they were added (their
  // Node objects too with `with_objects`, for nodeCacheCapable: false).
  std::vector<CandidateNode> feasible(const std::string& pod_json, bool with_objects = false) const;
  void assume(const std::string& pod_json, const std::string& node);
  size_t size() const { return nodes_.size(); }

 private:
  struct Room {
    CandidateNode node;
    int64_t cpu_left = 0;
    int64_t memory_left = 0;
  };
  static std::pair<int64_t, int64_t> requests(const std::string& pod_json);
  std::vector<Room> nodes_;
  std::map<std::string, size_t> index_;
};

// Body builders (compact, every key present).
std::string extender_args_json(const std::string& pod_json, const std::vector<CandidateNode>& candidates,
                               bool node_cache_capable);

}  // namespace fracpack::testing
