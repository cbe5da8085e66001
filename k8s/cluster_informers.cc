#include "k8s/cluster_informers.h"

#include <pthread.h>

namespace fracpack::k8s {

// The sinks: an informer's list and watch events, handed to the store.
// One shape for both kinds: which store operations it calls.
struct StoreCalls {
  void (ClusterState::*begin)(bool consistent);
  Status (ClusterState::*item)(std::string_view json);
  void (ClusterState::*end)();
  void (ClusterState::*abort)();
  Result<std::string> (ClusterState::*event)(WatchEventType type, std::string_view json);
};

class ClusterInformers::StoreSink final : public InformerSink {
 public:
  StoreSink(ClusterState& s, StoreCalls calls) : s_(s), calls_(calls) {}
  void begin_list(bool consistent) override { (s_.*calls_.begin)(consistent); }
  Status list_item(std::string_view json) override { return (s_.*calls_.item)(json); }
  void end_list(const std::string&) override { (s_.*calls_.end)(); }
  void abort_list() override { (s_.*calls_.abort)(); }
  Result<std::string> event(WatchEventType type, std::string_view json) override { return (s_.*calls_.event)(type, json); }

 private:
  ClusterState& s_;
  StoreCalls calls_;
};

ClusterInformers::ClusterInformers(const ClientConfig& client, ClusterState& state, ClusterInformersOptions options)
    : pod_sink_(std::make_unique<StoreSink>(state, StoreCalls{&ClusterState::begin_pod_list, &ClusterState::list_pod,
                                                              &ClusterState::end_pod_list, &ClusterState::abort_pod_list,
                                                              &ClusterState::pod_event})),
      node_sink_(std::make_unique<StoreSink>(state, StoreCalls{&ClusterState::begin_node_list, &ClusterState::list_node,
                                                               &ClusterState::end_node_list, &ClusterState::abort_node_list,
                                                               &ClusterState::node_event})) {
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
  if (const std::string ns = state.contract().node_config_map_namespace(); !ns.empty()) {
    config_map_sink_ = std::make_unique<StoreSink>(
        state, StoreCalls{&ClusterState::begin_config_map_list, &ClusterState::list_config_map, &ClusterState::end_config_map_list,
                          &ClusterState::abort_config_map_list, &ClusterState::config_map_event});
    InformerOptions config_maps;
    config_maps.resource = "/api/v1/namespaces/" + ns + "/configmaps";
    if (options.tune) options.tune(config_maps);
    config_maps_ = std::make_unique<Informer>(client, config_maps, *config_map_sink_, options.node_seed + 1);
  }
  if (!state.contract().quota_keys().empty()) {
    quota_sink_ = std::make_unique<StoreSink>(
        state, StoreCalls{&ClusterState::begin_resource_quota_list, &ClusterState::list_resource_quota,
                          &ClusterState::end_resource_quota_list, &ClusterState::abort_resource_quota_list,
                          &ClusterState::resource_quota_event});
    InformerOptions quotas;
    quotas.resource = "/api/v1/resourcequotas";
    if (options.tune) options.tune(quotas);
    quotas_ = std::make_unique<Informer>(client, quotas, *quota_sink_, options.node_seed + 2);
  }
}

std::vector<SourceHealth> ClusterInformers::health() const {
  std::vector<SourceHealth> out = {{"pods", pod_stats()}, {"nodes", node_stats()}};
  if (config_maps_) out.push_back({"configmaps", config_maps_->stats()});
  if (quotas_) out.push_back({"resourcequotas", quotas_->stats()});
  return out;
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
  if (config_maps_) {
    config_map_thread_ = std::jthread([this](std::stop_token st) {
      pthread_setname_np(pthread_self(), "cm-informer");
      config_maps_->run(st);
    });
  }
  if (quotas_) {
    quota_thread_ = std::jthread([this](std::stop_token st) {
      pthread_setname_np(pthread_self(), "quota-informer");
      quotas_->run(st);
    });
  }
}

void ClusterInformers::stop() {
  for (std::jthread* t : {&pod_thread_, &node_thread_, &config_map_thread_, &quota_thread_}) {
    if (t->joinable()) {
      t->request_stop();
      t->join();
    }
  }
}

}  // namespace fracpack::k8s
