// Cluster snapshots: a Kubernetes v1 List of nodes and pods, as
// `kubectl get nodes,pods,resourcequotas -A -o json` writes it (and fracpack's
// /debug/snapshot and `convert`). Parsed once (parse_snapshot); then either
// loaded into a ClusterState (serve --snapshot, inspect) or read into what a
// replay needs (read_snapshot). Both reach the ledger by the same path as the
// watch (k8s/ledger_builder.h), with the same fail-closed rules.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/contract/contract.h"
#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"
#include "scheduling/replay/sequence.h"
#include "scheduling/workload.h"

namespace fracpack::k8s {

struct SnapshotProblem {
  std::string object;   // "node n1", "pod ns/name"
  std::string message;  // names the object too
};

struct BoundPod {
  scheduling::PodFacts facts;
  scheduling::Allocation allocation;  // empty containers: no cards (CPU/memory only)
  int64_t gpu_demand = 0;
};

struct SnapshotState {
  std::vector<scheduling::NodeSpec> nodes;       // as the ledger holds them (cordons included), sorted by name
  std::vector<BoundPod> bound;                   // what the bound pods hold, by their records or by inference
  std::vector<scheduling::PodRequest> pending;   // unscheduled pods, in creation order
  // The namespaces' GPU quotas (k8s/quota.h) from the snapshot's
  // ResourceQuotas: a replay honours them, so a quota can be tried offline.
  std::map<std::string, std::vector<scheduling::QuotaLimit>> quotas;
  std::optional<scheduling::ShapeCounts> workload;  // from the workload ConfigMap, if present
  scheduling::ShapeCounts shapes;                   // every valid pod's shape (a workload otherwise)
  std::vector<SnapshotProblem> problems;         // objects that could not be read, and why
  size_t terminal_pods = 0;
  size_t skipped_items = 0;
};

// The List, decoded as `contract` needs it; errors say where the JSON is bad.
Result<ObjectList> parse_snapshot(std::string text, const Contract& contract);

// What a replay needs. Nodes and bound pods go through the pod-to-ledger
// path; an object with invalid contract values is reported in `problems`,
// never silently dropped. With `scheduler_name`, only pending pods of that
// scheduler are replayed.
SnapshotState read_snapshot(const ObjectList& list, const Contract& contract, const std::string& scheduler_name = "");

// The target workload a snapshot names (its workload ConfigMap), if any;
// `problems` gets what is wrong with one that cannot be read.
std::optional<scheduling::ShapeCounts> snapshot_workload(const ObjectList& list, std::vector<SnapshotProblem>& problems);

// The ledger a snapshot describes (nodes, bound pods and quotas).
void load_ledger(const SnapshotState& state, scheduling::Ledger& ledger);

// `replay snapshot` for one policy: a fresh ledger of the snapshot, the
// pending pods placed in creation order over the nodes in name order,
// fragmentation measured against `metric`.
replay::SequenceResult replay_snapshot(const SnapshotState& state, scheduling::Policy& policy,
                                       const scheduling::Workload& metric, const replay::SequenceOptions& options);

}  // namespace fracpack::k8s
