// The extender verbs kube-scheduler calls (kubernetes-protocol.md §1-§2),
// each decode -> evaluate -> encode. One pod's path: HTTP body ->
// k8s/extender (decode) -> the contract (PodRequest) -> scheduling::Evaluator
// over the ClusterState's ledger (filter, prioritize) -> at bind,
// ClusterState::assume_chosen (the cards, reserved under the write lock) ->
// a Binder (the Binding with the contract's allocation annotations, §5.1)
// -> the informer confirms it from the annotations, or the reservation is
// released. In names mode, filter and prioritize answer from replies kept
// per candidate list and demand, redone only for the nodes that changed
// (server/reply_cache.h; the node list itself: server/node_name_cache.h).
//
//   filter       ExtenderArgs -> ExtenderFilterResult
//   prioritize   ExtenderArgs -> HostPriorityList (0..10, the best alone 10)
//   bind         ExtenderBindingArgs -> ExtenderBindingResult
//   preempt      ExtenderPreemptionArgs -> ExtenderPreemptionResult
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "k8s/cluster_state.h"
#include "k8s/events.h"
#include "k8s/record_signature.h"
#include "scheduling/evaluator.h"
#include "server/binder.h"
#include "server/reply_cache.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/node_name_cache.h"
#include "server/recent_pods.h"

namespace fracpack::server {

struct ExtenderOptions {
  // Pods remembered from filter requests, for a bind the informer has not
  // seen yet: at most this many, and this many bytes.
  size_t recent_pods = 4096;
  size_t recent_pod_bytes = 64 << 20;
  // A filter reply past this many bytes is refused (400) rather than built:
  // twice limits.maxRequestBytes (a full-Node reply echoes at most the
  // request, plus a bounded reason per distinct node).
  size_t max_reply_bytes = 128 << 20;
  // A bind not posted within this of its arrival is refused (cluster.bindTimeout).
  std::chrono::milliseconds bind_timeout{4000};
  // The node agent serves one bind per node at a time (HAMi's node lock):
  // prioritize ranks a node last while a GPU bind to it is in flight here,
  // as well as while another pod's lock is on it. Without this, the cycles
  // kube-scheduler runs before a lock is visible all pick the same node and
  // queue behind it.
  bool one_bind_per_node = false;
  // bind places only pods of these schedulers (schedulerNames).
  std::vector<std::string> scheduler_names = {"fracpack"};
  // Signs every allocation record the Binding writes (null: unsigned,
  // security.records: unsigned).
  std::shared_ptr<const k8s::RecordSigner> signer;
  // Unresolvable nodes are listed in FailedNodes too, for kube-schedulers
  // before 1.21 (k8s::FilterReplyWriter::list_unresolvable_as_failed).
  bool unresolvable_as_failed = false;
  // Where placements are told to the pod's owner (a Normal GPUAllocated
  // Event naming the node and cards); null: none.
  k8s::EventRecorder* events = nullptr;
};

class ExtenderService {
 public:
  ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                  ExtenderOptions options);

  HttpResponse filter(const std::string& body);
  HttpResponse prioritize(const std::string& body);
  // Answers through `reply` once the binder is done. The bind timeout
  // counts from `arrived` (the request's arrival).
  void bind(const std::string& body, Reply reply, std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());
  HttpResponse preempt(const std::string& body);

 private:
  // What bind decided before the binder takes over.
  struct Placement {
    const char* refusal = nullptr;  // set: refused (a bind failure class), `reason` says why
    std::string reason;             // why these cards, for the placement log line
    bool reserved = false;          // this bind reserved (a retried one did not)
    bool gpu = false;               // cards to write (and fence)
    scheduling::PodRequest request;
    scheduling::Allocation allocation;
  };
  Placement place(const k8s::Pod& pod, const std::string& node, const std::string& who);
  // The policy's best cards on the node as the ledger has it now.
  Result<scheduling::Allocation> choose_cards(const scheduling::PodRequest& req, const scheduling::Ledger& ledger,
                                              const std::string& node, const std::string& who, std::string* reason);
  void write_record(const k8s::Pod& pod, const scheduling::Allocation& allocation, k8s::BindTarget& target) const;
  void finish_bind(Binder::Outcome o, const k8s::BindTarget& written, const std::string& who, bool reserved,
                   const std::string& reason, const Reply& reply);
  // Where a bind whose outcome was unknown turned out to stand (Binder::Job::settled).
  void settle_bind(k8s::Presence p, const std::string& uid, const std::string& who, const std::string& node);
  bool binds_in_flight() {
    std::lock_guard lock(binding_mu_);
    return !binding_to_.empty();
  }

  k8s::ClusterState& state_;
  const k8s::Contract& contract_;
  scheduling::Evaluator& evaluator_;
  Binder& binder_;
  Metrics& metrics_;
  ExtenderOptions options_;
  RecentPods recent_;
  const std::vector<std::string> record_keys_;  // contract_.record_keys(): what is signed
  NodeNameCache names_;
  FilterReplyCache replies_;
  PrioritizeReplyCache priorities_;
  // With one_bind_per_node: GPU binds in flight per node.
  std::mutex binding_mu_;
  std::map<std::string, int, std::less<>> binding_to_;  // looked up by string_view
  std::multiset<std::string> binding_uids_;              // binds in flight, by pod UID
};

}  // namespace fracpack::server
