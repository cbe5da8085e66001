// The cluster as fracpack knows it: the store of pods and nodes the
// informers keep (k8s/cluster_informers.h feeds it), and the ledger the
// pod-to-ledger path builds from them (k8s/ledger_builder.h: what a bound
// pod holds, inference, fail-closed rules). Allocations are durable only as
// pod annotations (the Binding writes them atomically with spec.nodeName),
// so a restart rebuilds the same ledger from a list.
//
//   pod events   a bound pod holds what its record says (keyed by UID: a pod
//                re-created under the same name is a different pod); a
//                terminal phase or a deletion releases it; a confirmed record
//                replaces the matching assumed reservation; a pending pod
//                holds nothing.
//   relist       replaces the store: objects absent from the list are gone,
//                with what they held; an assumed reservation for a pod the
//                store never saw is left to its TTL (the list may predate it).
//   proven gone  when the API server shows an assumed pod's UID gone (the
//                reconciler's GET), its reservation is dropped and events
//                about it still in flight are ignored until the informer sees
//                it go: a lagging watch must not resurrect it.
//
// The reservations of binds in flight, after kube-scheduler's internal
// cache (assume -> confirm / forget / expire), are the ledger's (Ledger).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/contract/contract.h"
#include "k8s/informer.h"
#include "k8s/ledger_builder.h"
#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "scheduling/workload.h"

namespace fracpack::k8s {

// A card whose records sum past it, and the pods holding it.
struct OverCommittedCard {
  std::string node;
  int index = 0;
  int cores = 0;           // milli, of 1000
  int64_t memory_mib = 0;  // held, of capacity_mib
  int64_t capacity_mib = 0;
  std::vector<std::pair<std::string, std::string>> pods;  // (namespace/name, uid)
};

struct SyncOptions {
  std::shared_ptr<const Contract> contract;  // null: the fracpack contract with its default names
  // An assumed bind not confirmed within this is checked with the API server
  // (reconcile_assumptions) and released if its pod is not bound.
  std::chrono::milliseconds assume_ttl{30000};
  // Called (under the state's lock) when a node starts or stops being left
  // alone because another profile's node agent registered it ("" reason:
  // no longer); the daemon logs it.
  std::function<void(const std::string& node, const std::string& reason)> on_node_left_alone;
  // How bound pods' records are trusted (k8s/record_signature.h; default:
  // as written), and where what the ledger says of a pod's record goes
  // (called under the state's lock; the daemon posts an Event on the pod).
  RecordTrust trust;
  LedgerBuilder::RecordSink on_record_report;
};

struct SyncCounters {
  uint64_t pod_events = 0;
  uint64_t node_events = 0;
  uint64_t malformed_pods = 0;         // pods whose contract values or record could not be read
  uint64_t malformed_nodes = 0;
  uint64_t malformed_config_maps = 0;  // the contract's ConfigMaps that could not be decoded
  uint64_t inferred_allocations = 0;   // bound GPU pods charged by inference
  uint64_t overcommit_reports = 0;     // confirmations that left a card over capacity
  uint64_t expired_assumptions = 0;
  uint64_t relist_deletions = 0;       // objects found gone by a relist
  uint64_t reconciled_assumptions = 0; // assumed binds resolved by a consistent list or a GET
  uint64_t stale_events = 0;           // events about pods already proven gone (ignored)
  uint64_t fence_caught_up = 0;        // bound pods a bind's fence read before the watch delivered them
  uint64_t rejected_records = 0;       // allocation records not fracpack's, or holding more than asked
  uint64_t changed_records = 0;        // records changed after their pod was charged (charge kept)
  uint64_t ignored_records = 0;        // records on pods that ask no GPU
};

// One problem kept for /debug and the logs.
struct SyncProblem {
  std::string object;
  std::string message;
};

class ClusterState {
 public:
  explicit ClusterState(SyncOptions options);

  // Both initial lists applied.
  bool ready() const;

  // Reads the ledger under a shared lock: fn(const Ledger&).
  template <class Fn>
  auto read(Fn&& fn) const {
    std::shared_lock lock(mu_);
    return fn(builder_.ledger());
  }

  // The pending (or bound) pod with this UID as the informer last saw it.
  std::optional<Pod> pod(const std::string& uid) const;
  std::optional<Pod> pod_by_name(const std::string& namespace_name, const std::string& name) const;

  // --- the store, fed by list+watch (ClusterInformers' sinks) ---
  // A pod list begins (`consistent`: a quorum read, reflecting every write
  // that completed before it started); items follow; at its end the pods it
  // did not contain are gone. The same for nodes.
  void begin_pod_list(bool consistent);
  Status list_pod(std::string_view object_json);
  void end_pod_list();
  void abort_pod_list();
  Result<std::string> pod_event(WatchEventType type, std::string_view object_json);  // its resourceVersion
  void begin_node_list(bool consistent = false);  // (a flag of pod lists; nodes ignore it)
  Status list_node(std::string_view object_json);
  void end_node_list();
  void abort_node_list();
  Result<std::string> node_event(WatchEventType type, std::string_view object_json);
  // The contract's ConfigMaps (Contract::node_config_map_namespace; only
  // watched when it names one).
  void begin_config_map_list(bool consistent = false);
  Status list_config_map(std::string_view object_json);
  void end_config_map_list();
  void abort_config_map_list();
  Result<std::string> config_map_event(WatchEventType type, std::string_view object_json);
  // Decoded objects, applied directly (snapshots and tests).
  void apply_pod(const Pod& pod);
  void delete_pod(const Pod& pod);
  void apply_node(const Node& node);
  void delete_node(const std::string& name);
  // Standalone mode: the state is a snapshot's (nodes, pods), complete.
  void load_snapshot(const ObjectList& list);

  // --- the bind path: reserve, then confirm (via the watch) or forget ---
  Status assume(const scheduling::PodFacts& pod, scheduling::Allocation allocation, scheduling::Clock::time_point now);
  // Chooses and reserves in one step under the write lock, so two binds
  // never choose the same capacity: `choose` sees the ledger as it is and
  // returns the allocation (or why there is none).
  using Chooser = std::function<Result<scheduling::Allocation>(const scheduling::Ledger&)>;
  Result<scheduling::Allocation> assume_chosen(const scheduling::PodFacts& pod, const Chooser& choose,
                                               scheduling::Clock::time_point now);
  // The bind fence (k8s/bind_fence.h): `fresh` are the pods the API server
  // has bound to `node`, read after the bind of `uid` arrived. The bound
  // pods the ledger does not hold there (the watch has not delivered them:
  // another writer's binds) are applied as their watch events would be —
  // except pods the informer has already seen deleted — and the assumed
  // reservation of `uid` is checked beside them: kept when it still fits,
  // otherwise chosen again with `choose` (or released, with why). Returns
  // what `uid` holds now.
  struct CaughtUp {
    scheduling::Allocation allocation;
    size_t applied = 0;     // pods the watch had not delivered yet
    bool rechosen = false;  // the reservation moved to other cards
  };
  Result<CaughtUp> catch_up(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid, const Chooser& choose);
  bool forget(const std::string& uid);
  // The API server accepted the pod's Binding (at `when`): a consistent list
  // started later that lacks the pod proves it gone.
  void note_bound(const std::string& uid, std::chrono::steady_clock::time_point when = std::chrono::steady_clock::now());
  // Drops every assumed reservation past its TTL, bound or not; returns how
  // many. Blind: for tests and offline tools. `serve` releases a reservation
  // past its TTL only when the API server shows the pod unbound
  // (reconcile_assumptions, then note_expired): a bound pod's watch event may
  // simply be late.
  size_t expire(scheduling::Clock::time_point now);

  // Assumed pods reserved at least `min_age` ago and not yet confirmed.
  struct Stale {
    std::string uid;
    std::string namespace_name;
    std::string name;
    std::string node;  // where it is assumed
    bool past_ttl = false;  // its assume TTL has run out
  };
  std::vector<Stale> stale_assumptions(scheduling::Clock::time_point now, std::chrono::milliseconds min_age) const;
  // The API server says this assumed pod is no longer bound here (bound
  // elsewhere): its reservation is dropped.
  void note_reconciled(const std::string& uid);
  // Past its TTL and the API server shows the pod unbound: the Binding never
  // took effect; its reservation is dropped (counted as expired).
  void note_expired(const std::string& uid);
  // The API server says this pod UID is gone (404, the name now holds
  // another UID, or it finished): its reservation is dropped, and until the
  // informer itself sees it go, older events still in flight about it are
  // ignored; they would resurrect it, with nothing left to remove it.
  void note_gone(const std::string& uid);

  // Cards whose records sum past the card (two writers placed on it, or a
  // late Binding of an old leader), with the pods holding them. They take
  // nothing new until they drain; the reconciler reports them.
  std::vector<OverCommittedCard> overcommitted() const;

  SyncCounters counters() const;
  // Bound pods by the key id that signed their record (LedgerBuilder::records_by_key).
  std::map<std::string, int> records_by_key() const;
  std::vector<SyncProblem> problems() const;  // the latest problems, newest last
  // The current nodes and pods as a v1 List (replayable with `replay snapshot`).
  std::string snapshot_json() const;
  // The workload seen so far: shapes of the pods in the store.
  scheduling::ShapeCounts observed_shapes() const;

  const Contract& contract() const { return *contract_; }
  // Per node, the pod its agent's lock names (Contract::node_held_by; ""
  // none); empty when no node is held.
  std::vector<std::string> held_by(const std::vector<std::string_view>& nodes) const;
  // Whether any node lock is held now (held_by would name someone).
  bool any_held() const;
  const Selection& selection() const { return contract_->selection(); }
  std::chrono::milliseconds assume_ttl() const { return options_.assume_ttl; }

 private:
  struct PodEntry {
    Pod pod;
    uint64_t listed = 0;  // generation of the last list that contained it
  };

  // All below hold mu_ exclusively.
  // Returns the stored entry (null when the pod holds no place in the store).
  PodEntry* apply_pod_locked(Pod pod);
  bool drop_locked(const std::string& uid);  // an assumed reservation and its Binding time; false if none
  void delete_pod_locked(const std::string& uid);
  void apply_node_locked(const Node& node);
  // A listed or watched ConfigMap of the contract, applied or deleted.
  Result<std::string> config_map_arrived(std::string_view json, const char* how, WatchEventType type, bool listed);
  void delete_node_locked(const std::string& name);
  void problem_locked(std::string object, std::string message);
  // An object of `kind` ("pod", "node") a list or a watch (`how`) sent that cannot be decoded.
  void undecodable_locked(const char* kind, const char* how, const std::string& why);

  SyncOptions options_;
  std::shared_ptr<const Contract> contract_;
  mutable std::shared_mutex mu_;
  LedgerBuilder builder_;                                      // the ledger and the pod-to-ledger rules
  std::unordered_map<std::string, PodEntry> pods_;             // by UID
  std::unordered_map<std::string, std::string> uid_by_key_;   // namespace/name -> UID
  std::map<std::string, Node> nodes_;                          // by name
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> bound_at_;  // assumed pods whose Binding succeeded
  struct Tombstone {
    scheduling::Clock::time_point at;
    uint64_t listed = 0;  // generation of the last list that still contained it (a stale list)
  };
  std::unordered_map<std::string, Tombstone> gone_;  // UIDs proven deleted, until the informer agrees
  // UIDs the informer saw deleted lately (oldest first), so a read that
  // predates a deletion the watch already applied cannot bring a pod back.
  std::deque<std::pair<scheduling::Clock::time_point, std::string>> deleted_order_;
  std::unordered_set<std::string> deleted_;
  // Lists in progress: pods carry the generation of the last list that
  // contained them; nodes are collected by name.
  uint64_t pod_list_generation_ = 0;
  bool pod_list_consistent_ = false;
  std::chrono::steady_clock::time_point pod_list_started_{};
  bool pod_listing_ = false;
  std::unordered_set<std::string> listed_nodes_;
  SyncCounters counters_;
  std::vector<SyncProblem> problems_;
  bool pods_synced_ = false;
  bool nodes_synced_ = false;
  // Only a contract that reads ConfigMaps waits for them.
  bool config_maps_synced_ = false;
  std::set<std::string> config_maps_;         // "namespace/name" applied
  std::set<std::string> listed_config_maps_;  // seen by the list in progress
};

}  // namespace fracpack::k8s
