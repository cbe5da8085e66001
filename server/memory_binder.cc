#include "server/memory_binder.h"

#include <algorithm>

namespace fracpack::server {

void InMemoryBinder::bind(Job job, std::shared_ptr<Listener> listener) {
  const k8s::BindTarget& target = job.target;
  if (auto current = state_.pod(target.uid); current && !current->node_name.empty() && current->node_name != target.node) {
    listener->finished(Outcome{Error{"pod " + target.namespace_name + "/" + target.name + " is already assigned to node " + current->node_name}}, target);
    return;
  }
  k8s::Pod& pod = job.pod;
  pod.node_name = target.node;
  for (const auto& kv : target.annotations) {
    auto it = std::find_if(pod.meta.annotations.begin(), pod.meta.annotations.end(), [&](const auto& e) { return e.first == kv.first; });
    if (it != pod.meta.annotations.end()) {
      it->second = kv.second;
    } else {
      pod.meta.annotations.emplace_back(kv.first, kv.second);
    }
  }
  pod.phase = "Running";
  state_.apply_pod(pod);  // confirms the reservation from the record, as the watch would
  listener->finished(Outcome{}, target);
}

}  // namespace fracpack::server
