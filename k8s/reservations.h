// The reservations of binds in flight: the Assumed state of a pod, after
// kube-scheduler's internal cache (pkg/scheduler/internal/cache/interface.go:
// assume -> confirm / expire / forget). A bind reserves its cards before its
// Binding is posted, so the next pod's verdicts see them; the reservation
// lives in the ledger (scheduling::PodRecord, phase kAssumed) under the
// store's lock, and this class is every way into and out of that state.
//
//                reserve()                    the watch (or a fence read) brings the
//   (absent) --------------> Assumed -------------------------------------> Confirmed
//                            |  ^   bound pod with its record (ClusterState)
//                            +--+ recheck(): kept, or moved to other cards
//                            |  ^
//                            +--+ settle(kBindingAccepted): kept, noting when the
//                                 API server accepted the Binding
//
//   Assumed -> (absent), the cards released; each exit and who takes it:
//     recheck()                   the bind fence read pods bound on the node that
//                                 the watch had not delivered, and no cards fit
//                                 beside them (the bind service)
//     settle(kNotBound)           the Binding was refused, never posted, or a read
//                                 after an unknown outcome shows the pod unbound
//                                 (the bind service)
//     settle(kPodGone)            404, the name now holds another UID, or the pod
//                                 finished; older events about it are ignored
//                                 until the informer sees it go (the bind
//                                 service, the reconciler)
//     settle(kBoundElsewhere)     the API server has it bound on another node (the
//                                 reconciler)
//     settle(kUnboundPastTtl)     past its TTL and the API server shows it unbound:
//                                 the Binding never took effect (the reconciler;
//                                 counted as expired)
//     the store, on its own       the pod deleted or terminal (watch, relist); a
//                                 consistent relist that started after the
//                                 Binding was accepted and lacks the pod
//     release_expired()           blind expiry past the TTL, bound or not: tests
//                                 and offline tools only. serve never expires a
//                                 reservation on its own: a bound pod's watch
//                                 event may simply be late (found by the chaos
//                                 soak: it let the next pod take a bound pod's
//                                 cards).
//
// A reservation past its TTL is offered to the reconciler (stale()), which
// asks the API server and settles it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "common/result.h"

namespace fracpack::k8s {

class ClusterState;

class Reservations {
 public:
  // Chooses cards on the ledger as it is at that moment, under the store's
  // write lock (or says why there are none).
  using Chooser = std::function<Result<scheduling::Allocation>(const scheduling::Ledger&)>;

  // Chooses and reserves in one step, so two binds never choose the same
  // capacity. A pod without cards reserves its CPU and memory on the node
  // (an allocation with no containers).
  Result<scheduling::Allocation> reserve(const scheduling::PodFacts& pod, const Chooser& choose, scheduling::Clock::time_point now);

  // The bind fence (k8s/bind_fence.h): `fresh` are the pods the API server
  // has bound to `node`, read after the bind of `uid` arrived. The bound
  // pods the ledger does not hold there (another writer's binds the watch
  // has not delivered) are applied as their watch events would be — except
  // pods the informer has already seen deleted — and the reservation of
  // `uid` is judged beside them: kept when it still fits, otherwise chosen
  // again with `choose`, or released (the error says why). `in_namespace`:
  // the pods of its namespace, read the same way where the namespace has a
  // GPU quota; those bound on any node are applied too, and the reservation
  // is released when they leave no room in the quota.
  struct Rechecked {
    scheduling::Allocation allocation;  // what `uid` holds now
    size_t applied = 0;                 // pods the watch had not delivered yet
    bool moved = false;                 // the reservation moved to other cards
  };
  Result<Rechecked> recheck(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid, const Chooser& choose,
                            const std::vector<Pod>& in_namespace = {});

  // What became of a reserved pod's Binding, as the bind service or the
  // reconciler learned it from the API server.
  enum class Settlement {
    kBindingAccepted,  // stays assumed until the watch confirms it
    kNotBound,         // released
    kPodGone,          // released, and the UID tombstoned
    kBoundElsewhere,   // released
    kUnboundPastTtl,   // released, counted as expired
  };
  // Returns whether a reservation was released (kBindingAccepted: whether
  // one was there to note).
  bool settle(const std::string& uid, Settlement how, std::chrono::steady_clock::time_point when = std::chrono::steady_clock::now());

  // Reservations made at least `min_age` ago and not yet confirmed.
  struct Stale {
    std::string uid;
    std::string namespace_name;
    std::string name;
    std::string node;       // where it is reserved
    bool past_ttl = false;  // its TTL has run out
  };
  std::vector<Stale> stale(scheduling::Clock::time_point now, std::chrono::milliseconds min_age) const;

  // Releases every reservation past its TTL, bound or not; returns how many.
  size_t release_expired(scheduling::Clock::time_point now);

  std::chrono::milliseconds ttl() const { return ttl_; }

 private:
  friend class ClusterState;
  Reservations(ClusterState& store, std::chrono::milliseconds ttl) : store_(store), ttl_(ttl) {}

  // Called by the store with its lock held exclusively.
  // The pod's record was confirmed, or the pod was deleted: the Binding's time is no longer needed.
  void confirmed_or_deleted_locked(const std::string& uid) { accepted_at_.erase(uid); }
  // Whether an event or list item about `uid` predates its proven end
  // (kPodGone); `listing` is the generation of the list in progress (0: a watch event).
  bool tombstoned_locked(const std::string& uid, uint64_t listing);
  // The informer itself saw the pod go: nothing older can follow.
  void forget_tombstone_locked(const std::string& uid) { gone_.erase(uid); }
  // A pod list of `generation` ended. Tombstones it did not contain are past
  // their deletion. `consistent`: a quorum read started at `started`; a
  // reservation whose Binding was accepted before it and that it lacks
  // (`listed` says) is gone.
  void pod_list_ended_locked(uint64_t generation, bool consistent, std::chrono::steady_clock::time_point started,
                             const std::function<bool(const std::string&)>& listed);
  bool release_locked(const std::string& uid);

  ClusterState& store_;
  const std::chrono::milliseconds ttl_;
  // Reserved pods whose Binding the API server accepted, and when.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> accepted_at_;
  struct Tombstone {
    scheduling::Clock::time_point at;
    uint64_t listed = 0;  // generation of the last list that still contained it (a stale list)
  };
  std::unordered_map<std::string, Tombstone> gone_;  // UIDs proven deleted, until the informer agrees
};

}  // namespace fracpack::k8s
