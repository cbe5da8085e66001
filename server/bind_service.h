// The bind verb, from kube-scheduler's ExtenderBindingArgs to the answer, in
// the steps of kube-scheduler's binding cycle (pkg/scheduler/framework:
// Reserve, PreBind, Bind, PostBind, and Unreserve on any failure). One
// BindCycle object carries a bind through them all, and bind_service.cc
// runs every step itself, top-down in the order they run:
//
//   admit      the pod is known (informer, or a recent filter), is the one
//              the UID names, not bound elsewhere, of a scheduler fracpack
//              serves, and was judged by filter or prioritize;
//   reserve    the policy's best cards on the chosen node, chosen and
//              reserved in one step under the store's lock
//              (Reservations::reserve with a CardChoice): two binds never
//              choose the same capacity. A retried bind reuses its first
//              attempt's reservation; a pod without cards reserves its CPU
//              and memory on kube-scheduler's node. The contract's
//              allocation record for those cards, signed
//              (k8s/record_signature.h), is what the Binding carries;
//   -- the rest runs as one job on a binder's worker (server/binder.h),
//      with the worker's connection; standalone, at once with none --
//   pre-bind   the contract's node lock (Contract::node_lock), the bind
//              fence (the pods the API server has bound on the node), and
//              the recheck: the reservation kept, moved, or refused beside
//              them;
//   bind       the Binding posted (standalone: applied to the store);
//   post-bind  the one rollback of a failed bind (the node lock released
//              where the Binding certainly was not applied, a FailedBinding
//              Event), the reservation's exit (Reservations::bind_finished:
//              kept for the watch to confirm, released — unreserve — or kept
//              while the outcome is unknown), then the answer: a log line
//              and a GPUAllocated Event naming the cards;
//   settle     where a bind whose outcome was unknown turned out to stand
//              (a few reads of the pod, Reservations::bind_settled).
//
// The binds in flight are counted by Reservations (bind_started/ended): the
// per-node count under a node lock lets prioritize rank those nodes last
// (ExtenderService).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "k8s/cluster_state.h"
#include "k8s/events.h"
#include "k8s/record_signature.h"
#include "k8s/scheduler_names.h"
#include "scheduling/evaluator.h"
#include "server/binder.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/recent_pods.h"

namespace fracpack::server {

struct BindOptions {
  // A bind not posted within this of its arrival is refused (cluster.bindTimeout).
  std::chrono::milliseconds bind_timeout{4000};
  // Binds post to an API server: a GPU bind takes the contract's node lock
  // (Contract::node_lock, when its binds take it) before the fence.
  bool take_node_lock = false;
  // bind places only pods of these schedulers (k8s::placed_by_fracpack).
  std::vector<std::string> scheduler_names = k8s::default_scheduler_names();
  // Signs every allocation record the Binding writes (null: unsigned,
  // security.records: unsigned).
  std::shared_ptr<const k8s::RecordSigner> signer;
  // Where placements are told to the pod's owner (a Normal GPUAllocated
  // Event naming the node and cards); null: none.
  k8s::EventRecorder* events = nullptr;
};

class BindService {
 public:
  // `recent`: the pods filter and prioritize saw (shared with ExtenderService).
  BindService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics, RecentPods& recent,
              BindOptions options);

  // Answers through `reply` once the bind's job is done. The bind timeout
  // counts from `arrived` (the request's arrival).
  void bind(std::string_view body, Reply reply, std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());

  // Whether a GPU bind holding each node's lock is in flight here (its lock
  // may not be visible yet, and the bind holds it until that pod's
  // Allocate): Reservations::binding_to. Empty when none is in flight.
  std::vector<bool> binding_to(const std::vector<std::string_view>& nodes) const;
  bool any_binding() const;

  // A Binding is posted only with at least this much of its bind timeout
  // left (a quarter of the timeout when that is less).
  static constexpr std::chrono::milliseconds kMinPostBudget{500};
  // How long a bind in a namespace with a GPU quota waits for the pod watch
  // to deliver the fence's marker write (milliseconds when the watch is
  // live) before it reads the namespace's pods instead.
  static constexpr std::chrono::milliseconds kWatchCatchUp{100};
  // Reads that settle a bind whose outcome was unknown.
  static constexpr int kSettleReads = 5;
  static constexpr std::chrono::milliseconds kSettleSpacing{500};

 private:
  class BindCycle;  // one bind's state, from admit to settle

  // The steps, in the order they run (bind_service.cc).
  bool admit(BindCycle& cycle);           // false: refused (answered)
  const char* reserve(BindCycle& cycle);  // the refusal's class, or null
  void write_record(BindCycle& cycle, const scheduling::Allocation& allocation);
  // On the binder's worker (a null Worker: never ran, shutting down):
  struct Posted;  // what became of the Binding (bind_service.cc)
  static Posted too_late(const k8s::BindTarget& target, const std::string& doing);
  void run_on_worker(BindCycle& cycle, const Binder::Worker* worker);
  Posted pre_bind(BindCycle& cycle, const Binder::Worker& worker);
  Posted fence_and_recheck(BindCycle& cycle, const Binder::Worker& worker);
  Posted post_binding(BindCycle& cycle, const Binder::Worker& worker);
  Posted bind_in_memory(const BindCycle& cycle);
  void post_bind(BindCycle& cycle, const Binder::Worker* worker, const Posted& posted);
  void settle(BindCycle& cycle, const Binder::Worker& worker);
  void refuse(BindCycle& cycle, const char* reason, const std::string& message);

  k8s::ClusterState& state_;
  k8s::Reservations& reservations_;
  const k8s::Contract& contract_;
  scheduling::Evaluator& evaluator_;
  Binder& binder_;
  Metrics& metrics_;
  RecentPods& recent_;
  BindOptions options_;
  const std::vector<std::string> record_keys_;  // contract_.record_keys(): what is signed
  // The contract's node lock, when binds take it (else null).
  const k8s::NodeLock* node_lock_;
};

}  // namespace fracpack::server
