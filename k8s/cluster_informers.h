// The informers that keep a ClusterState's store in step with the API
// server, apart from the store they feed (as kube-scheduler keeps its cache
// apart from the event handlers): one list+watch for the live pods
// (kLivePodsSelector), one for the nodes (and one for the ConfigMaps of a
// contract that reads some, one for the ResourceQuotas of a contract with
// quota keys), each on its own thread, and the
// sinks that hand their objects to the store. Used by the daemon, the test
// harness and the sync bench.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/cluster_state.h"
#include "k8s/informer.h"

namespace fracpack::k8s {

// One informer's health, for /readyz, metrics and the logs.
struct SourceHealth {
  std::string resource;  // "pods", "nodes"
  InformerStats stats;
};

struct ClusterInformersOptions {
  // Adjusts each informer's options (tests shorten backoffs, page sizes).
  std::function<void(InformerOptions&)> tune;
  // Wraps the pod sink (a test's tracing sink); null: none.
  std::function<std::unique_ptr<InformerSink>(InformerSink& store_sink)> wrap_pod_sink;
  uint64_t pod_seed = std::random_device{}(), node_seed = std::random_device{}();  // jitter
};

class ClusterInformers {
 public:
  ClusterInformers(const ClientConfig& client, ClusterState& state, ClusterInformersOptions options = {});
  ~ClusterInformers();  // stops
  ClusterInformers(const ClusterInformers&) = delete;
  ClusterInformers& operator=(const ClusterInformers&) = delete;

  void start();
  // Stops both informers (interrupting a blocked read) and joins their threads.
  void stop();

  InformerStats pod_stats() const { return pods_->stats(); }
  InformerStats node_stats() const { return nodes_->stats(); }
  std::vector<SourceHealth> health() const;

 private:
  class StoreSink;
  std::unique_ptr<StoreSink> pod_sink_, node_sink_, config_map_sink_, quota_sink_;
  std::unique_ptr<InformerSink> wrapped_pod_sink_;
  // The contract's ConfigMaps (Contract::node_config_map_namespace): null
  // when it reads none.
  // The ResourceQuotas of the namespace GPU quota (Contract::quota_keys):
  // null when the contract has none.
  std::unique_ptr<Informer> pods_, nodes_, config_maps_, quotas_;
  std::jthread pod_thread_, node_thread_, config_map_thread_, quota_thread_;
};

}  // namespace fracpack::k8s
