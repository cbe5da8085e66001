#include "k8s/cluster_informers.h"

#include <pthread.h>

namespace fracpack::k8s {

// The sinks: an informer's list and watch events, handed to the store.
class ClusterInformers::PodSink final : public InformerSink {
 public:
  explicit PodSink(ClusterState& s) : s_(s) {}
  void begin_list(bool consistent) override { s_.begin_pod_list(consistent); }
  Status list_item(std::string_view json) override { return s_.list_pod(json); }
  void end_list(const std::string&) override { s_.end_pod_list(); }
  void abort_list() override { s_.abort_pod_list(); }
  Result<std::string> event(WatchEventType type, std::string_view json) override { return s_.pod_event(type, json); }

 private:
  ClusterState& s_;
};

class ClusterInformers::NodeSink final : public InformerSink {
 public:
  explicit NodeSink(ClusterState& s) : s_(s) {}
  void begin_list(bool) override { s_.begin_node_list(); }
  Status list_item(std::string_view json) override { return s_.list_node(json); }
  void end_list(const std::string&) override { s_.end_node_list(); }
  void abort_list() override { s_.abort_node_list(); }
  Result<std::string> event(WatchEventType type, std::string_view json) override { return s_.node_event(type, json); }

 private:
  ClusterState& s_;
};

ClusterInformers::ClusterInformers(const ClientConfig& client, ClusterState& state, ClusterInformersOptions options)
    : pod_sink_(std::make_unique<PodSink>(state)), node_sink_(std::make_unique<NodeSink>(state)) {
  InformerOptions pods;
  pods.resource = "/api/v1/pods";
  pods.field_selector = kLivePodsSelector;
  InformerOptions nodes;
  nodes.resource = "/api/v1/nodes";
  if (options.tune) {
    options.tune(pods);
    options.tune(nodes);
  }
  InformerSink* pod_sink = pod_sink_.get();
  if (options.wrap_pod_sink) {
    wrapped_pod_sink_ = options.wrap_pod_sink(*pod_sink_);
    pod_sink = wrapped_pod_sink_.get();
  }
  pods_ = std::make_unique<Informer>(client, pods, *pod_sink, options.pod_seed);
  nodes_ = std::make_unique<Informer>(client, nodes, *node_sink_, options.node_seed);
}

ClusterInformers::~ClusterInformers() { stop(); }

void ClusterInformers::start() {
  pod_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "pod-informer");
    pods_->run(st);
  });
  node_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "node-informer");
    nodes_->run(st);
  });
}

void ClusterInformers::stop() {
  for (std::jthread* t : {&pod_thread_, &node_thread_}) {
    if (t->joinable()) {
      t->request_stop();
      t->join();
    }
  }
}

}  // namespace fracpack::k8s
