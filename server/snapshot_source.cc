#include "server/snapshot_source.h"

#include "k8s/file_io.h"
#include "k8s/objects.h"

namespace fracpack::server {

Result<LoadedSnapshot> load_snapshot_state(const config::Config& c, k8s::ClusterState& state) {
  auto text = k8s::read_file(c.cluster.snapshot);
  if (!text) return Error{"snapshot: " + text.message()};
  auto read = k8s::read_snapshot(*text, c.names);
  if (!read) return Error{"snapshot " + c.cluster.snapshot + ": " + read.message()};
  k8s::pad(*text);
  auto list = k8s::parse_list(*text, state.selection());
  if (!list) return Error{"snapshot " + c.cluster.snapshot + ": " + list.message()};
  state.load_snapshot(*list);

  LoadedSnapshot out;
  out.nodes = read->nodes.size();
  out.bound_pods = read->bound.size();
  out.pending_pods = read->pending.size();
  out.problems = std::move(read->problems);
  if (!c.workload.file.empty()) {
    auto w = k8s::read_file(c.workload.file);
    if (!w) return Error{"workload.file: " + w.message()};
    auto parsed = k8s::parse_workload(*w);
    if (!parsed) return Error{"workload.file " + c.workload.file + ": " + parsed.message()};
    out.workload = std::make_shared<scheduling::ShapeCounts>(std::move(*parsed));
    out.workload_source = c.workload.file;
  } else if (read->workload) {
    out.workload = std::make_shared<scheduling::ShapeCounts>(std::move(*read->workload));
    out.workload_source = "the snapshot's ConfigMap";
  } else {
    out.workload = std::make_shared<scheduling::ShapeCounts>(std::move(read->shapes));
    out.workload_source = "the snapshot's pods";
  }
  return out;
}

}  // namespace fracpack::server
