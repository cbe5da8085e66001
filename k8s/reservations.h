// The reservations of binds in flight: the Assumed state of a pod, after
// kube-scheduler's internal cache (pkg/scheduler/internal/cache/interface.go:
// assume -> confirm / expire / forget). A bind reserves its cards before its
// Binding is posted, so the next pod's verdicts see them; the reservation
// lives in the ledger (scheduling::PodRecord, phase kAssumed) under the
// store's lock. This class makes every reservation and decides every exit a
// bind, a read or the reconciler learns of; the store's own events (the
// watch's confirm, a deletion, a relist) change the ledger and then tell it.
//
//                reserve()                    the watch (or a fence read) brings the
//   (absent) --------------> Assumed -------------------------------------> Confirmed
//                            |  ^   bound pod with its record (ClusterState)
//                            +--+ recheck(): kept, or moved to other cards
//                            |  ^
//                            +--+ settle(kBindingAccepted): kept, noting when the
//                                 API server accepted the Binding
//
//   Assumed -> (absent), the cards released; each exit and the call that
//   decides it:
//     recheck()                   the bind fence read pods bound on the node that
//                                 the watch had not delivered, and no cards fit
//                                 beside them
//     bind_finished()             the Binding was refused or never posted
//                                 (kNotBound), or the pod is gone (kPodGone)
//     bind_settled()              a read after an unknown outcome shows the pod
//                                 unbound (kNotBound, unless a retry of its bind
//                                 is in flight) or gone (kPodGone)
//     pod_read()                  the reconciler's GET: 404, the name now holds
//                                 another UID, or the pod finished (kPodGone:
//                                 older events about it are ignored until the
//                                 informer sees it go); bound on another node
//                                 (kBoundElsewhere); past its TTL and unbound
//                                 (kUnboundPastTtl, counted as expired)
//     removed(), pod_list_ended() the store: the pod deleted or terminal (watch,
//                                 relist); a consistent relist that started
//                                 after the Binding was accepted and lacks the
//                                 pod
//     release_expired()           blind expiry past the TTL, bound or not: tests
//                                 and offline tools only. serve never expires a
//                                 reservation on its own: a bound pod's watch
//                                 event may simply be late (found by the chaos
//                                 soak: it let the next pod take a bound pod's
//                                 cards).
//
// A reservation past its TTL is offered to the reconciler (stale()), which
// asks the API server and hands the answer here (pod_read()).
//
// Which exit a reservation takes is decided here alone, from what the
// caller learned: bind_finished() (the Binding's outcome), bind_settled()
// (a read after an unknown outcome), pod_read() (the reconciler's GET); the
// store tells of confirms and removals (confirmed(), removed()). The binds
// in flight are counted here too (bind_started(), bind_ended()): a read
// that finds a pod unbound while kube-scheduler's retry is binding it must
// not release the retry's reservation.
//
// The store (ClusterState) keeps the ledger and its lock; this class reaches
// them only through the narrow ReservationStore, and the store reaches this
// class only through its public calls.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string_view>

#include "k8s/binding.h"
#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "common/result.h"

namespace fracpack::scheduling {
class Evaluator;
}  // namespace fracpack::scheduling

namespace fracpack::k8s {

class Contract;
class ClusterState;

// Proof that the caller is the store, holding its lock exclusively: the
// calls that take one change what only that lock guards (a passkey: only
// ClusterState can make one; it opens those calls, not the class).
class StoreLockHeld {
  friend class ClusterState;
  StoreLockHeld() = default;
};

// What Reservations needs of the store that keeps the ledger (ClusterState).
class ReservationStore {
 public:
  // The ledger under the store's lock, held for as long as this lives:
  // exclusively (Writing) or shared (Reading).
  template <class Lock, class L>
  struct Locked {
    Lock lock;
    L& ledger;
  };
  using Writing = Locked<std::unique_lock<std::shared_mutex>, scheduling::Ledger>;
  using Reading = Locked<std::shared_lock<std::shared_mutex>, const scheduling::Ledger>;
  virtual Writing write_ledger() = 0;
  virtual Reading read_ledger() const = 0;
  // Only while a Writing lives:
  // whether the informer saw the pod deleted lately (a read that predates
  // the deletion must not bring it back);
  virtual bool deleted_lately(const std::string& uid) const = 0;
  // applies a bound pod the API server showed, as its watch event would;
  virtual void apply_bound_pod(const Pod& pod) = 0;
  // keeps a problem for /debug and the logs.
  virtual void report_problem(std::string object, std::string message) = 0;

 protected:
  ~ReservationStore() = default;
};

// What the reservations counted (added to ClusterState::counters()).
struct ReservationCounters {
  uint64_t expired_assumptions = 0;
  uint64_t reconciled_assumptions = 0;  // resolved by a consistent list or a GET
  uint64_t fence_caught_up = 0;         // bound pods a bind's fence read before the watch delivered them
};

class Reservations {
 public:
  Reservations(ReservationStore& store, const Contract& contract, std::chrono::milliseconds ttl)
      : store_(store), contract_(contract), ttl_(ttl) {}

  // Chooses cards on the ledger as it is at that moment, under the store's
  // write lock (or says why there are none).
  using Chooser = std::function<Result<scheduling::Allocation>(const scheduling::Ledger&)>;

  // A bind's choice: the policy's best cards for `request` on `node`
  // (Evaluator::evaluate_one, then scheduling::materialize), made on the
  // ledger as it is under the store's write lock. `who` ("namespace/name")
  // names the pod in a refusal; `reason`, when set, is told why these cards.
  struct CardChoice {
    scheduling::Evaluator& evaluator;
    const scheduling::PodRequest& request;
    const std::string& node;
    const std::string& who;
    std::string* reason = nullptr;
  };

  // Chooses and reserves in one step, so two binds never choose the same
  // capacity. A pod without cards reserves its CPU and memory on the node
  // (an allocation with no containers).
  Result<scheduling::Allocation> reserve(const scheduling::PodFacts& pod, const Chooser& choose, scheduling::Clock::time_point now);
  // A bind's reserve: a retried bind (its answer was lost) reuses what the
  // pod already holds on the node — its first attempt's reservation, or its
  // record; otherwise the choice is reserved.
  struct Reserved {
    scheduling::Allocation allocation;
    bool retried = false;          // reused: this bind did not reserve it
    bool namespace_quota = false;  // the pod's namespace has a GPU quota (the bind fence reads it too)
  };
  Result<Reserved> reserve(const scheduling::PodFacts& pod, const CardChoice& choice, scheduling::Clock::time_point now);
  // Reserves what the caller chose without the ledger (a pod without
  // cards: its CPU and memory on kube-scheduler's node).
  Status reserve(const scheduling::PodFacts& pod, const scheduling::Allocation& chosen, scheduling::Clock::time_point now);

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
  Result<Rechecked> recheck(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid, const CardChoice& choice,
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
  // one was there to note). The deciding calls below choose `how`.
  bool settle(const std::string& uid, Settlement how, std::chrono::steady_clock::time_point when = std::chrono::steady_clock::now());

  // What a reservation's exit was.
  enum class Exit {
    kNone,      // nothing to settle (not reserved by this bind, or gone already)
    kAccepted,  // kept: the Binding is applied, the watch confirms it
    kKept,      // kept: the outcome is unknown (the pod may hold its cards)
    kReleased,  // released
  };
  // The Binding a bind posted: applied, or refused (`pod_gone`: the pod no
  // longer exists), or of unknown outcome.
  struct BindResult {
    bool bound = false;
    bool pod_gone = false;
    bool outcome_unknown = false;
  };
  Exit bind_finished(const std::string& uid, const BindResult& result);
  // Where a pod whose Binding's outcome was unknown turned out to stand (a
  // read of it): there, not there (released, unless a retry of its bind is
  // in flight: the retry reuses the reservation), gone, or still unknown.
  Exit bind_settled(const std::string& uid, Presence presence);

  // --- binds in flight, from the hand-over to the binder to their outcome ---
  // `holds_node`: a GPU bind under the contract's node lock, counted per node.
  void bind_started(const std::string& uid, const std::string& node, bool holds_node);
  void bind_ended(const std::string& uid, const std::string& node, bool holds_node);
  bool bind_in_flight(const std::string& uid) const;
  // Per node, whether a bind holding its lock is in flight; empty when none is.
  std::vector<bool> binding_to(const std::vector<std::string_view>& nodes) const;
  bool any_binding() const;

  // Reservations made at least `min_age` ago and not yet confirmed.
  struct Stale {
    std::string uid;
    std::string namespace_name;
    std::string name;
    std::string node;       // where it is reserved
    bool past_ttl = false;  // its TTL has run out
  };
  std::vector<Stale> stale(scheduling::Clock::time_point now, std::chrono::milliseconds min_age) const;
  // The reconciler's GET of a stale reservation's pod (null: 404). Only
  // releases: gone, re-created under another UID, finished, bound elsewhere,
  // or past its TTL and unbound; bound here or pending within its TTL: kept
  // for the informer to confirm (a GET may predate a deletion the watch has
  // applied).
  Exit pod_read(const Stale& stale, const Pod* pod);

  // Releases every reservation past its TTL, bound or not; returns how many.
  size_t release_expired(scheduling::Clock::time_point now);

  std::chrono::milliseconds ttl() const { return ttl_; }

  // --- told by the store, under its lock held exclusively (StoreLockHeld:
  // only the store can make one, so only it can call these) ---
  // The pod's record was confirmed: the Binding's time is no longer needed.
  void confirmed(StoreLockHeld, const std::string& uid) { accepted_at_.erase(uid); }
  // The informer saw the pod go: nothing older can follow.
  void removed(StoreLockHeld, const std::string& uid) {
    accepted_at_.erase(uid);
    gone_.erase(uid);
  }
  // Whether an event or list item about `uid` predates its proven end
  // (kPodGone); `listing` is the generation of the list in progress (0: a watch event).
  bool tombstoned(StoreLockHeld, const std::string& uid, uint64_t listing);
  // A pod list of `generation` ended. Tombstones it did not contain are past
  // their deletion. `consistent`: a quorum read started at `started`; a
  // reservation whose Binding was accepted before it and that it lacks
  // (`listed` says) is gone.
  void pod_list_ended(StoreLockHeld, scheduling::Ledger& ledger, uint64_t generation, bool consistent, std::chrono::steady_clock::time_point started,
                      const std::function<bool(const std::string&)>& listed);
  // Read by the store under its lock.
  const ReservationCounters& counters(StoreLockHeld) const { return counters_; }

 private:
  Result<Rechecked> recheck_locked(scheduling::Ledger& ledger, const std::string& node, const std::vector<Pod>& fresh,
                                   const std::string& uid, const Chooser& choose, const std::vector<Pod>& in_namespace);
  bool release_locked(scheduling::Ledger& ledger, const std::string& uid);
  bool settle_locked(scheduling::Ledger& ledger, const std::string& uid, Settlement how, std::chrono::steady_clock::time_point when);

  ReservationStore& store_;
  const Contract& contract_;
  const std::chrono::milliseconds ttl_;
  // Reserved pods whose Binding the API server accepted, and when.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> accepted_at_;
  struct Tombstone {
    scheduling::Clock::time_point at;
    uint64_t listed = 0;  // generation of the last list that still contained it (a stale list)
  };
  std::unordered_map<std::string, Tombstone> gone_;  // UIDs proven deleted, until the informer agrees
  ReservationCounters counters_;
  // Binds in flight (their own lock: counted outside the store's).
  mutable std::mutex in_flight_mu_;
  std::map<std::string, int, std::less<>> binding_to_;  // binds holding a node's lock, per node
  std::multiset<std::string> binding_uids_;
};

}  // namespace fracpack::k8s
