#include "server/snapshot_source.h"

#include "common/file_io.h"
#include "k8s/objects.h"
#include "k8s/workload_codec.h"

namespace fracpack::server {

Result<LoadedSnapshot> load_snapshot_state(const config::Config& c, k8s::ClusterState& state) {
  auto text = read_file(c.cluster.snapshot);
  if (!text) return Error{"snapshot: " + text.message()};
  // Parsed once; the state's own path turns it into the ledger.
  auto list = k8s::parse_snapshot(std::move(*text), state.contract());
  if (!list) return Error{"snapshot " + c.cluster.snapshot + ": " + list.message()};
  state.load_snapshot(*list);

  LoadedSnapshot out;
  out.nodes = list->nodes.size();
  for (const k8s::Pod& p : list->pods) {
    if (p.terminal()) continue;
    ++(p.node_name.empty() ? out.pending_pods : out.bound_pods);
  }
  for (const auto& p : state.problems()) out.problems.push_back({p.object, p.message});
  auto configured = k8s::snapshot_workload(*list, out.problems);
  if (!c.workload.file.empty()) {
    auto w = read_file(c.workload.file);
    if (!w) return Error{"workload.file: " + w.message()};
    auto parsed = k8s::parse_workload(*w);
    if (!parsed) return Error{"workload.file " + c.workload.file + ": " + parsed.message()};
    out.workload = std::make_shared<scheduling::ShapeCounts>(std::move(*parsed));
    out.workload_source = c.workload.file;
  } else if (configured) {
    out.workload = std::make_shared<scheduling::ShapeCounts>(std::move(*configured));
    out.workload_source = "the snapshot's ConfigMap";
  } else {
    out.workload = std::make_shared<scheduling::ShapeCounts>(state.observed_shapes());
    out.workload_source = "the snapshot's pods";
  }
  return out;
}

}  // namespace fracpack::server
