// The extender verbs that judge without writing: filter, prioritize and
// preempt, each decode -> evaluate -> encode (../shared/reference/kubernetes-protocol.md §1-§2).
// bind is the BindService's (server/bind_service.h). One pod's filter:
// HTTP body -> k8s/extender_codec (decode) -> the contract (PodRequest) ->
// scheduling::Evaluator over the ClusterState's ledger -> the reply writer.
// The namespace's GPU quota (scheduling/quota.h) is checked first when the
// pod counts the same on every node (a refusal fails them all), else on each
// node's own cards. In names mode, filter and prioritize answer from replies
// kept per candidate list and demand, redone only for the nodes that changed
// (server/reply_cache.h; the node list itself: server/node_name_cache.h) —
// not when the quota is checked per node. preempt offers no victims that
// would leave the preemptor over its namespace's quota.
//
//   filter       ExtenderArgs -> ExtenderFilterResult
//   prioritize   ExtenderArgs -> HostPriorityList (0..10, the best alone 10)
//   preempt      ExtenderPreemptionArgs -> ExtenderPreemptionResult
#pragma once

#include <string>

#include "k8s/cluster_state.h"
#include "k8s/extender_codec.h"
#include "scheduling/evaluator.h"
#include "server/bind_service.h"
#include "server/reply_cache.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/node_name_cache.h"
#include "server/recent_pods.h"

namespace fracpack::server {

struct ExtenderOptions {
  // A filter reply past this many bytes is refused (400) rather than built:
  // twice limits.maxRequestBytes (a full-Node reply echoes at most the
  // request, plus a bounded reason per distinct node).
  size_t max_reply_bytes = 128 << 20;
  // Unresolvable nodes are listed in FailedNodes too, for kube-schedulers
  // before 1.21 (k8s::FilterReplyWriter::list_unresolvable_as_failed).
  bool unresolvable_as_failed = false;
};

class ExtenderService {
 public:
  // `recent`: the pods judged here, remembered for bind (shared with the
  // BindService); `binds`: the binds in flight, ranked last by prioritize
  // under a contract whose binds take a node lock.
  ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Metrics& metrics, RecentPods& recent,
                  const BindService& binds, ExtenderOptions options);

  // (The body as the transport read it: padded, parsed in place.)
  HttpResponse filter(const PaddedText& body);
  HttpResponse prioritize(const PaddedText& body);
  HttpResponse preempt(std::string_view body);

 private:
  // A node whose agent is serving another pod's bind (the contract's node
  // lock) takes this pod's bind only after that pod's Allocate; so does a
  // node this replica is binding a GPU pod to (its lock may not be visible
  // yet): ranked last (score 0).
  void rank_held_nodes_last(const k8s::Pod& pod, std::vector<k8s::HostPriority>& scores) const;
  bool any_node_held() const;

  k8s::ClusterState& state_;
  const k8s::Contract& contract_;
  scheduling::Evaluator& evaluator_;
  Metrics& metrics_;
  RecentPods& recent_;
  const BindService& binds_;
  ExtenderOptions options_;
  NodeNameCache names_;
  FilterReplyCache replies_;
  PrioritizeReplyCache priorities_;
};

}  // namespace fracpack::server
