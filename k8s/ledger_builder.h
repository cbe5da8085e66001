// The one path from Kubernetes objects to the ledger, for the watch
// (ClusterState) and for snapshots (k8s/snapshot.h) alike, with one set of
// fail-closed rules, whatever the contract:
//
//   node        its cards as the contract reads them; a node that cannot be
//               read keeps its last good cards, cordoned (none if it never
//               had any).
//   bound pod   (its first charge decided by charge_bound_pod,
//               k8s/bound_pod_charge.h, which the reconciler counts by too)
//               what its record says (Contract::recorded_allocation), when
//               fracpack's extender wrote it (a signature that verifies,
//               k8s/record_signature.h) and it holds at most what the pod
//               asks; a record that is not fracpack's, or that holds more,
//               is reported on the pod and the pod charged as one without
//               a record; a pod that asks no GPU is charged no card,
//               whatever its annotations say. Once charged, a pod keeps its
//               charge: a record changed later (a user's patch) is
//               reported, never followed.
//                 the record          confirmed as written;
//                 a flat card list    matched to the request (the app
//                                     containers' cards in order);
//                 nothing usable      the cards its request would take now,
//                                     on the node with its cordons open (the
//                                     pod is already there);
//                 not even that       its CPU and memory are charged, and
//                                     (trusted records only: snapshots,
//                                     replays) its node takes no new
//                                     placement until the pod is resolved
//                                     or gone;
//               a pod whose contract values cannot be read is charged for
//               nothing (and closes its node the same way, trusted records
//               only). Where records are verified a pod is a tenant's input:
//               closing a node on its account would let any pod creator
//               stop placements there; it is reported instead.
//               A pod bound before its node is known waits for the node.
//   gone        whatever the pod held is released.
//
// Every such case is counted and reported, never a crash. Not thread-safe:
// the owner serializes (ClusterState under its write lock).
#pragma once

#include <functional>
#include <map>
#include <string_view>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "k8s/contract/contract.h"
#include "k8s/objects.h"
#include "k8s/record_signature.h"
#include "scheduling/ledger.h"

namespace fracpack::k8s {

struct LedgerCounters {
  uint64_t malformed_pods = 0;        // pods whose contract values or record could not be read
  uint64_t malformed_nodes = 0;
  uint64_t inferred_allocations = 0;  // bound GPU pods charged by inference
  uint64_t overcommit_reports = 0;    // confirmations that left a card over capacity
  uint64_t rejected_records = 0;      // records not fracpack's (unsigned, forged) or holding more than asked
  uint64_t changed_records = 0;       // records changed after their pod was charged (the charge kept)
  uint64_t ignored_records = 0;       // records on pods that ask no GPU
};

// What a pod's owner is told about its record (an Event on the pod, in its
// own namespace, naming only that pod).
struct RecordReport {
  std::string namespace_name, name, uid;
  std::string reason;   // FracpackRecordRejected, FracpackRecordChanged, FracpackRecordIgnored
  std::string message;
};

class LedgerBuilder {
 public:
  // Called with the object ("pod ns/name", "node n") and what is wrong.
  using ProblemSink = std::function<void(std::string object, std::string message)>;

  using RecordSink = std::function<void(const RecordReport&)>;

  // `trust`: how records are checked (default: taken as written).
  LedgerBuilder(const Contract& contract, ProblemSink problems, RecordTrust trust = {}, RecordSink records = {});

  scheduling::Ledger& ledger() { return ledger_; }
  const scheduling::Ledger& ledger() const { return ledger_; }
  const Contract& contract() const { return contract_; }
  const LedgerCounters& counters() const { return counters_; }
  // Bound pods by the key that signed their record ("unsigned" for records
  // trusted without one, "none" for pods charged without a record): what a
  // key rotation waits on.
  std::map<std::string, int> records_by_key() const;

  void apply_node(const Node& node);
  // Told when a node starts (reason) or stops ("") being excluded.
  void on_left_alone(std::function<void(const std::string& node, const std::string& reason)> fn) { left_alone_ = std::move(fn); }
  void delete_node(const std::string& name);
  // Who the contract's node lock (Contract::node_lock) named when the node was last seen ("" none).
  std::string held_by(std::string_view node) const;
  bool any_held() const { return !held_by_.empty(); }
  // A ConfigMap the contract reads beside its nodes (Contract::
  // config_map_nodes): kept and applied to each node it names, now and
  // whenever that node changes; what cannot be read is reported.
  void apply_config_map(const ConfigMap& config_map);
  void delete_config_map(const std::string& namespace_name, const std::string& name);
  // The ConfigMaps kept, by "namespace/name".
  const std::map<std::string, ConfigMap>& config_maps() const { return config_maps_; }
  // A pod bound to pod.node_name and not terminal: what it holds.
  void apply_bound_pod(const Pod& pod);
  // The cards a bound pod counts for, by the ledger's rules: what the
  // ledger keeps charged for it when it has charged it already (a record
  // changed since is not followed), else what apply_bound_pod would charge
  // from its record (charge_bound_pod, k8s/bound_pod_charge.h): nothing for
  // a record the ledger rejects, a pod that asks no GPU, or cards it would
  // have to infer. The reconciler sums the API server's pods by it
  // (k8s/reconciler.h).
  std::vector<scheduling::CardCharge> counted_record(const Pod& pod) const;
  // The pod holds nothing any more (deleted, finished, gone from a list).
  void remove_pod(const std::string& uid);
  // The pod was seen again but no longer bound (a stale event): an
  // inference waiting for it is dropped; a record stays (pods never unbind).
  void forget_unresolved(const std::string& uid);

 private:
  void resolve_node(const std::string& node);
  // The pod's record as written; an over-commit it causes is reported.
  void confirm_record(const Pod& pod, const scheduling::PodFacts& facts, scheduling::Allocation allocation);
  void push_effective_spec(const std::string& node);
  // Reports what of the ConfigMap cannot apply to the node's cards (its
  // effect is applied by push_effective_spec, silently).
  void check_config_map(const std::string& key, const ConfigMap& config_map, const scheduling::NodeSpec& spec);
  // Charges the pod from a partial record or by inference; false if its
  // cards cannot be known (yet).
  bool infer(const Pod& pod);
  // The ledger's charge of a pod it charged already and keeps as it is
  // (apply_bound_pod changes nothing for it); null otherwise.
  const scheduling::PodRecord* kept_charge(const Pod& pod) const;
  // The node's cards as the contract read them (no ConfigMap marks, no
  // cordons): what a record is read and checked against. Null: not known.
  const scheduling::NodeSpec* cards_of(const std::string& node) const;
  void unresolve(const std::string& uid);
  // Reports to the log and on the pod.
  void report_record(const Pod& pod, const char* reason, const std::string& message);
  // The pod was charged from a record with this digest (and key).
  void charged(const Pod& pod, std::string digest, std::string key);

  const Contract& contract_;
  ProblemSink problems_;
  RecordTrust trust_;
  RecordSink records_;
  const std::vector<std::string> record_keys_;  // contract_.record_keys()
  // What each charged pod was charged from.
  struct Charged {
    std::string digest;           // sha256 of its record_message: a later event with the same is no change
    std::string key;              // records_by_key's key
    bool change_reported = false;
  };
  std::unordered_map<std::string, Charged> charged_;
  std::unordered_set<std::string> rejected_;  // pods whose record is not to be read (inference only)
  scheduling::Ledger ledger_;
  std::map<std::string, scheduling::NodeSpec> specs_;   // last good card description, by node
  std::set<std::string> malformed_nodes_;               // nodes whose current object could not be read
  // Bound GPU pods whose cards are not known yet, by node (their node is
  // closed to new placements meanwhile), and the pods themselves.
  std::map<std::string, std::set<std::string>> unresolved_;
  std::unordered_map<std::string, Pod> unresolved_pods_;
  LedgerCounters counters_;
  std::function<void(const std::string&, const std::string&)> left_alone_;
  std::map<std::string, std::string, std::less<>> held_by_;  // node -> pod between bind and Allocate
  // The contract's ConfigMaps by "namespace/name", and the nodes each names.
  std::map<std::string, ConfigMap> config_maps_;
  std::map<std::string, std::set<std::string>> config_maps_of_node_;
};

}  // namespace fracpack::k8s
