// Standalone mode's state: a cluster snapshot file (kubectl get nodes,pods,resourcequotas
// -A -o json, or fracpack convert's output) loaded into a ClusterState, and
// the target workload chosen as the daemon does it (workload.file, else the
// snapshot's workload ConfigMap, else the shapes of the snapshot's pods).
// `fracpack serve --snapshot` and `fracpack inspect --snapshot` share it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "k8s/cluster_state.h"
#include "k8s/snapshot.h"
#include "common/result.h"
#include "scheduling/workload.h"

namespace fracpack::server {

struct LoadedSnapshot {
  std::shared_ptr<const scheduling::ShapeCounts> workload;
  std::string workload_source;               // where the workload came from (for logs)
  size_t nodes = 0, bound_pods = 0, pending_pods = 0;
  std::vector<k8s::SnapshotProblem> problems;  // objects left out, and why
};

// Reads c.cluster.snapshot (and c.workload.file) into `state`; errors name the file.
Result<LoadedSnapshot> load_snapshot_state(const config::Config& c, k8s::ClusterState& state);

}  // namespace fracpack::server
