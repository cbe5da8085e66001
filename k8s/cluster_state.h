// The cluster as fracpack knows it: the store of pods and nodes (and the
// contract's ConfigMaps, the namespace GPU quota's ResourceQuotas, k8s/quota.h)
// the informers keep (k8s/cluster_informers.h feeds it), and the ledger the
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
// The reservations of binds in flight (the Assumed state, after
// kube-scheduler's internal cache) have one home: k8s/reservations.h, which
// draws every way in and out. They are kept in the ledger, under this
// store's lock, which the store lends them through the narrow
// ReservationStore interface; the store tells them of confirms and
// removals by their public calls (Reservations::confirmed, removed).
#pragma once

#include <chrono>
#include <condition_variable>
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
#include "k8s/quota.h"
#include "k8s/reservations.h"
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
  // A ResourceQuota limit of the contract's keys that cannot be read (called
  // under the state's lock, once per change of the object; the daemon posts
  // an Event on the ResourceQuota).
  std::function<void(const ObjectMeta& quota, const std::string& message)> on_quota_problem;
  // The bind fence's marker pod (k8s/bind_fence.h), "namespace" and "name";
  // empty: none. Its writes, delivered by the pod watch, tell how far the
  // ledger has caught up (wait_fence_marker).
  std::string fence_marker_namespace, fence_marker_name;
};

struct SyncCounters {
  uint64_t pod_events = 0;
  uint64_t node_events = 0;
  uint64_t malformed_pods = 0;         // pods whose contract values or record could not be read
  uint64_t malformed_nodes = 0;
  uint64_t malformed_config_maps = 0;  // the contract's ConfigMaps that could not be decoded
  uint64_t malformed_quotas = 0;       // ResourceQuotas that could not be decoded, or limits that cannot be read
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

class ClusterState final : private ReservationStore {
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
  // The ResourceQuotas of the namespace GPU quota (k8s/quota.h; only
  // watched when the contract has quota keys).
  void begin_resource_quota_list(bool consistent = false);
  Status list_resource_quota(std::string_view object_json);
  void end_resource_quota_list();
  void abort_resource_quota_list();
  Result<std::string> resource_quota_event(WatchEventType type, std::string_view object_json);
  // Decoded objects, applied directly (snapshots and tests).
  void apply_pod(const Pod& pod);
  void delete_pod(const Pod& pod);
  void apply_node(const Node& node);
  void delete_node(const std::string& name);
  void apply_resource_quota(const ResourceQuota& quota);
  void delete_resource_quota(const std::string& namespace_name, const std::string& name);
  // Standalone mode: the state is a snapshot's (nodes, pods), complete.
  void load_snapshot(const ObjectList& list);

  // --- the bind path: the reservations of binds in flight (k8s/reservations.h) ---
  Reservations& reservations() { return reservations_; }
  const Reservations& reservations() const { return reservations_; }

  // Cards whose records sum past the card (two writers placed on it, or a
  // late Binding of an old leader), with the pods holding them. They take
  // nothing new until they drain; the reconciler reports them.
  std::vector<OverCommittedCard> overcommitted() const;
  // The cards `pod` counts for on its node, by the ledger's rules
  // (LedgerBuilder::counted_record): what the ledger keeps charged for it,
  // else what its record would be charged; a record the ledger rejects
  // counts nothing.
  std::vector<scheduling::CardCharge> counted_record(const Pod& pod) const;

  // Every quota limit with its namespace's usage (/debug/quota, `fracpack
  // inspect quota`, the fracpack_quota_* metrics), by namespace and object.
  struct QuotaRow {
    std::string namespace_name;
    scheduling::QuotaLimit limit;
    int64_t used = 0;  // in the limit's unit
  };
  std::vector<QuotaRow> quota_rows() const;

  SyncCounters counters() const;
  // Bound pods by the key id that signed their record (LedgerBuilder::records_by_key).
  std::map<std::string, int> records_by_key() const;
  std::vector<SyncProblem> problems() const;  // the latest problems, newest last
  // The current nodes and pods as a v1 List (replayable with `replay snapshot`).
  std::string snapshot_json() const;
  // The workload seen so far: shapes of the pods in the store.
  scheduling::ShapeCounts observed_shapes() const;

  const Contract& contract() const { return *contract_; }
  // Per node, the pod its agent's lock names (Contract::node_lock; ""
  // none); empty when no node is held.
  std::vector<std::string> held_by(const std::vector<std::string_view>& nodes) const;
  // Whether any node lock is held now (held_by would name someone).
  bool any_held() const;
  // What the decoders keep: the contract's, and the bind fence's marker.
  const Selection& selection() const { return selection_; }

  // Waits until the pod watch has delivered the marker pod carrying
  // `value` (a value of the bind fence's annotation, written by this
  // process) and every event before it has been applied, or `until`. Then
  // the ledger holds every pod bound before that write: what a namespace
  // read would have told a bind (the quota's fence), without the read.
  bool wait_fence_marker(const std::string& value, std::chrono::steady_clock::time_point until) const;

 private:
  // ReservationStore: what the reservations reach of the store.
  Writing write_ledger() override;
  Reading read_ledger() const override;
  bool deleted_lately(const std::string& uid) const override { return deleted_.contains(uid); }
  void apply_bound_pod(const Pod& pod) override { apply_pod_locked(pod); }
  void report_problem(std::string object, std::string message) override { problem_locked(std::move(object), std::move(message)); }

  struct PodEntry {
    Pod pod;
    uint64_t listed = 0;  // generation of the last list that contained it
  };

  // All below hold mu_ exclusively.
  // Returns the stored entry (null when the pod holds no place in the store).
  PodEntry* apply_pod_locked(Pod pod);
  void delete_pod_locked(const std::string& uid);
  void apply_node_locked(const Node& node);
  void delete_node_locked(const std::string& name);
  // The objects beside pods and nodes (cluster_state_side_objects.cc): the
  // contract's ConfigMaps and the ResourceQuotas, each kept by its list and
  // watch through the same steps.
  struct SideObjects {
    const char* kind;              // "configmap", "resourcequota": what cannot be decoded is counted and reported by it
    std::set<std::string> listed;  // "namespace/name" seen by the list in progress
    bool synced = false;           // a list has ended
  };
  struct SideObjectRef {
    std::string namespace_name;
    std::string name;
  };
  // A listed or watched object, decoded by `decode` (without the lock),
  // then applied or deleted under it; its resourceVersion.
  template <class Object, class Apply, class Remove>
  Result<std::string> side_object_arrived(SideObjects& side, Result<Object> (*decode)(std::string_view, const Selection&),
                                          std::string_view json, const char* how, WatchEventType type, bool listed, Apply apply,
                                          Remove remove);
  // A list begins or is given up: nothing is listed yet.
  void reset_side_list(SideObjects& side);
  // A list ended: what is `kept` but was not listed is removed.
  void end_side_list(SideObjects& side, const std::function<std::vector<SideObjectRef>()>& kept,
                     const std::function<void(const SideObjectRef&)>& remove);
  Result<std::string> config_map_arrived(std::string_view json, const char* how, WatchEventType type, bool listed);
  Result<std::string> resource_quota_arrived(std::string_view json, const char* how, WatchEventType type, bool listed);
  void apply_resource_quota_locked(const ResourceQuota& quota);
  void problem_locked(std::string object, std::string message);
  // An object of `kind` ("pod", "node") a list or a watch (`how`) sent that cannot be decoded.
  void undecodable_locked(const char* kind, const char* how, const std::string& why);

  SyncOptions options_;
  std::shared_ptr<const Contract> contract_;
  Selection selection_;
  // The marker values the watch delivered, the latest last (a few hundred),
  // and the value of the relist in progress (promoted when it ends: until
  // then its earlier items may not all be applied).
  void marker_seen_locked(const Pod& pod, bool listing);
  mutable std::mutex marker_mu_;
  mutable std::condition_variable marker_cv_;
  std::deque<std::string> markers_seen_;
  std::string listed_marker_;
  mutable std::shared_mutex mu_;
  LedgerBuilder builder_;                                      // the ledger and the pod-to-ledger rules
  std::unordered_map<std::string, PodEntry> pods_;             // by UID
  std::unordered_map<std::string, std::string> uid_by_key_;   // namespace/name -> UID
  std::map<std::string, Node> nodes_;                          // by name
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
  SideObjects config_map_list_{"configmap", {}, false};
  std::set<std::string> config_maps_;  // "namespace/name" applied
  // Only a contract with quota keys waits for the ResourceQuotas: until
  // they are known, no namespace's quota could be checked.
  SideObjects quota_list_{"resourcequota", {}, false};
  QuotaBook quotas_{contract_->quota_keys()};
  Reservations reservations_{*this, *contract_, options_.assume_ttl};
};

}  // namespace fracpack::k8s
