// Cluster snapshots: a Kubernetes v1 List of nodes and pods, as
// `kubectl get nodes,pods -A -o json` writes it (and fracpack's
// /debug/snapshot and `convert`). Read into what a replay needs: the nodes'
// cards, the bound pods' allocations, the pending pods in creation order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/contract.h"
#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/workload.h"

namespace fracpack::k8s {

// A ConfigMap of this name (any namespace) in a snapshot carries the target
// workload (pod shapes and counts), key "workload.json"; `convert` writes the
// trace's shapes there.
inline constexpr const char* kWorkloadConfigMap = "fracpack-target-workload";
inline constexpr const char* kWorkloadKey = "workload.json";

struct SnapshotProblem {
  std::string object;   // "node n1", "pod ns/name"
  std::string message;  // names the object too
};

struct BoundPod {
  scheduling::PodFacts facts;
  scheduling::Allocation allocation;  // empty containers: no fracpack cards (CPU/memory only)
  int64_t gpu_demand = 0;
};

struct SnapshotState {
  std::vector<scheduling::NodeSpec> nodes;       // sorted by name
  std::vector<BoundPod> bound;                   // running pods and their cards
  std::vector<scheduling::PodRequest> pending;   // unscheduled pods, in creation order
  std::optional<scheduling::ShapeCounts> workload;  // from the workload ConfigMap, if present
  scheduling::ShapeCounts shapes;                   // every valid pod's shape (a workload otherwise)
  std::vector<SnapshotProblem> problems;         // objects that could not be read, and why
  size_t terminal_pods = 0;
  size_t skipped_items = 0;
};

// Reads a snapshot. Objects with invalid contract values are reported in
// `problems` (and left out), never silently dropped; a bound GPU pod without
// an allocation record is reported and counted for its CPU/memory only.
// With `scheduler_name`, only pending pods of that scheduler are replayed.
Result<SnapshotState> read_snapshot(std::string_view json, const ContractNames& names,
                                    const std::string& scheduler_name = "");

// The ledger a snapshot describes (nodes and bound pods).
void load_ledger(const SnapshotState& state, scheduling::Ledger& ledger);

// JSON writers for the reduced objects (what fracpack knows of them).
std::string node_json(const Node& node);
std::string pod_json(const Pod& pod);
std::string config_map_json(const ConfigMap& config_map);
std::string list_json(const std::vector<std::string>& items);

// {"shapes":[{"cpuMilli":3152,"cards":1,"cores":81,"memoryMiB":0,"memoryPercent":0,"models":"","count":1047},...]}
std::string format_workload(const scheduling::ShapeCounts& workload);
Result<scheduling::ShapeCounts> parse_workload(std::string_view json);

// The openb experiment as a snapshot: nodes named with the seed's permutation
// prefix, the tuned arrivals as pending pods created in arrival order (one
// second apart), the trace's shapes as the workload ConfigMap.
Result<std::string> openb_snapshot_json(const replay::ExperimentSetup& setup, const ContractNames& names,
                                        int64_t seed);

// Seconds since the epoch of an RFC 3339 time ("2024-05-01T10:00:00Z",
// fractions and offsets allowed); nullopt if malformed.
std::optional<double> parse_rfc3339(std::string_view text);
std::string format_rfc3339(int64_t epoch_seconds);

}  // namespace fracpack::k8s
