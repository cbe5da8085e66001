// Binds in memory (standalone mode, `serve --snapshot`): the pod becomes
// bound in the ClusterState at once, its annotations set as the Binding would
// set them. A single writer: no fence.
#pragma once

#include "k8s/cluster_state.h"
#include "server/binder.h"

namespace fracpack::server {

class InMemoryBinder final : public Binder {
 public:
  explicit InMemoryBinder(k8s::ClusterState& state) : state_(state) {}
  void bind(Job job, std::shared_ptr<Listener> listener) override;

 private:
  k8s::ClusterState& state_;
};

}  // namespace fracpack::server
