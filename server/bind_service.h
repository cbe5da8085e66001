// The bind verb, from kube-scheduler's ExtenderBindingArgs to the answer:
//
//   1. admit     the pod is known (informer, or a recent filter), is the one
//                the UID names, not bound elsewhere, of a scheduler fracpack
//                serves, and was judged by filter or prioritize;
//   2. reserve   the policy's best cards on the chosen node, chosen and reserved
//                in one step under the store's lock (k8s/reservations.h): two
//                binds never choose the same capacity. A retried bind reuses
//                its first attempt's reservation; a pod without cards
//                reserves its CPU and memory on kube-scheduler's node;
//   3. record    the contract's allocation record for those cards, signed
//                (k8s/record_signature.h), carried by the Binding;
//   4. post      handed to the Binder (server/binder.h), which calls back
//                through one BindInFlight per bind: recheck after the bind
//                fence (the reservation kept, moved, or refused beside what
//                the API server has bound on the node), finished (the
//                reservation settled: accepted, released, or kept while the
//                outcome is unknown), settled (where an unknown outcome
//                turned out to stand);
//   5. answer    ExtenderBindingResult, a log line and an Event naming the cards.
//
// Under a contract whose binds take a node lock (Contract::node_lock), the
// nodes with a GPU bind in flight here are counted, for prioritize to rank
// them last (ExtenderService).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
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
  // Count GPU binds in flight per node (the contract's binds take a node
  // lock, and the binder posts to an API server): see binding_to().
  bool one_bind_per_node = false;
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

  // Answers through `reply` once the binder is done. The bind timeout
  // counts from `arrived` (the request's arrival).
  void bind(const std::string& body, Reply reply, std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());

  // With one_bind_per_node: whether a GPU bind to each node is in flight
  // here (its lock may not be visible yet, and the bind holds it until that
  // pod's Allocate). Empty when none is in flight at all.
  std::vector<bool> binding_to(const std::vector<std::string_view>& nodes) const;
  bool any_binding() const;

 private:
  class BindInFlight;  // the Binder::Listener of one bind
  friend class BindInFlight;

  // What bind decided before the binder takes over.
  struct Placement {
    const char* refusal = nullptr;  // set: refused (a bind failure class), `reason` says why
    std::string reason;             // why these cards, for the placement log line
    bool reserved = false;          // this bind reserved (a retried one did not)
    bool gpu = false;               // cards to write (and fence)
    bool quota = false;             // its namespace has a GPU quota: the fence reads the namespace too
    scheduling::PodRequest request;
    scheduling::Allocation allocation;
  };
  Placement place(const k8s::Pod& pod, const std::string& node, const std::string& who);
  // The policy's best cards on the node as the ledger has it now.
  Result<scheduling::Allocation> choose_cards(const scheduling::PodRequest& req, const scheduling::Ledger& ledger,
                                              const std::string& node, const std::string& who, std::string* reason);
  void write_record(const k8s::Pod& pod, const scheduling::Allocation& allocation, k8s::BindTarget& target) const;
  // The fence's recheck of the reservation (Binder::Listener::recheck).
  Status recheck(const k8s::Pod& pod, const scheduling::PodRequest& req, const std::string& who,
                 const std::vector<k8s::Pod>& fresh, const std::vector<k8s::Pod>& in_namespace, k8s::BindTarget& target, bool* moved);
  void finish(Binder::Outcome o, const k8s::BindTarget& written, const std::string& who, bool reserved, const std::string& reason,
              const Reply& reply);
  // Where a bind whose outcome was unknown turned out to stand.
  void settle(k8s::Presence p, const std::string& uid, const std::string& who, const std::string& node);
  // Binds in flight: counted when handed to the binder, uncounted when finished.
  void count_in_flight(const std::string& uid, const std::string& node, bool per_node);
  void uncount_in_flight(const std::string& uid, const std::string& node, bool per_node);

  k8s::ClusterState& state_;
  const k8s::Contract& contract_;
  scheduling::Evaluator& evaluator_;
  Binder& binder_;
  Metrics& metrics_;
  RecentPods& recent_;
  BindOptions options_;
  const std::vector<std::string> record_keys_;  // contract_.record_keys(): what is signed
  mutable std::mutex in_flight_mu_;
  std::map<std::string, int, std::less<>> binding_to_;  // with one_bind_per_node: GPU binds in flight per node
  std::multiset<std::string> binding_uids_;              // binds in flight, by pod UID
};

}  // namespace fracpack::server
