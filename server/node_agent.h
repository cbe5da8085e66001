// `fracpack node-agent` as an object (the DaemonSet on GPU nodes; the
// parts are in node/): it discovers the node's cards through NVML,
// publishes them to the extender as the Node's fracpack.io/gpu-devices,
// serves kubelet's device plugin API for the contract's card resource,
// follows the pods bound to its node (their allocation records say which
// cards each container gets), marks cards unhealthy on NVML's Xid and ECC
// events, keeps what it has allocated in a state file, and answers
// /healthz, /readyz and /metrics. The command-line entry
// (cmd/node_agent.cc) and the end-to-end tests build it the same way.
//
// Threads: the pod informer; the device plugin's registration loop (gRPC
// serves on its own threads); NVML's health wait; the publisher, woken by
// every device change and re-reading the Node every publish_recheck.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/api_client.h"
#include "k8s/contract/fracpack.h"
#include "k8s/informer.h"
#include "k8s/scheduler_names.h"
#include "node/device_plugin.h"
#include "node/devices_and_pods.h"
#include "node/nvml.h"
#include "node/pod_watch.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fracpack::server {

struct NodeAgentOptions {
  std::string node_name;
  k8s::ClientConfig client;
  k8s::ContractNames names;          // the fracpack contract's names (resource, annotations)
  // The contract the pods were placed under: null is fracpack's with
  // `names`; the tke profile's serves tencent.com/vcuda-core with the same
  // record (k8s/contract/tke.h).
  std::shared_ptr<const k8s::Contract> contract;
  // Pods of other schedulers are never served; records are served only
  // when fracpack's extender signed them (security:).
  std::vector<std::string> scheduler_names = k8s::default_scheduler_names();
  k8s::RecordTrust trust;
  node::DevicePluginOptions plugin;  // its resource is the contract's device resource
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sysfs = "/sys";
  std::string state_file;            // "" keeps no state (tests)
  // Without NVML or without cards: stay up doing nothing (a DaemonSet
  // that also lands on CPU nodes) instead of failing.
  bool idle_without_devices = false;
  std::string listen_address = "0.0.0.0";
  uint16_t listen_port = 8890;       // 0: any free port (tests)
  bool serve_http = true;
  std::chrono::milliseconds health_wait{5000};       // one NVML event wait
  std::chrono::milliseconds limiter_check{1000};     // how often the limiter's readiness is read
  std::chrono::milliseconds mps_stale_after{15000};  // an MPS status heartbeat older than this: the daemon is gone
  std::chrono::milliseconds publish_recheck{60000};  // the annotation re-read
  std::chrono::milliseconds retry{1000};             // after a failed write or registration
  std::string version = "dev";
  std::function<void(k8s::InformerOptions&)> tune_informer;
};

class NodeAgent {
 public:
  explicit NodeAgent(NodeAgentOptions options);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Discovers, restores the state file, listens and starts the threads.
  // Errors: no node name, the state file unreadable, NVML missing or
  // failing or no cards (unless idle_without_devices), the port taken.
  Status start();
  void stop();

  // Started without devices (idle_without_devices): why.
  bool idle() const { return !idle_reason_.empty(); }
  const std::string& idle_reason() const { return idle_reason_; }
  // Ready: registered with kubelet, the pod list synced, the cards published.
  Status ready() const;
  uint16_t port() const;
  std::string metrics_text() const { return metrics_.serialize(); }
  node::DevicesAndPods& state() { return state_; }
  const node::DevicePluginStats* plugin_stats() const { return plugin_ ? &plugin_->stats() : nullptr; }
  uint64_t annotation_writes() const { return annotation_writes_.load(); }

 private:
  Status serve_http();
  void handle(HttpRequest&& request, Reply reply);
  void publish_loop(std::stop_token stop);
  void health_loop(std::stop_token stop);
  // Whether each card's limiter can serve (node/isolation.h), every second.
  void limiter_loop(std::stop_token stop);
  void check_limiters();
  // The pods' fields the agent reads: the contract's, and each container's
  // env and mounts.
  k8s::Selection pod_selection() const;
  void add_metrics();
  // Confirms with the API server that the pod an Allocate is for still
  // waits as the watch showed it (DevicesAndPods::CheckPod).
  node::DevicesAndPods::PodCheck check_pod(const node::Assignment& a);
  // The pods the API server lists as waiting on this node
  // (DevicesAndPods::set_waiting_lister).
  Result<std::vector<node::WaitingPod>> list_waiting();

  NodeAgentOptions options_;
  // How pods are read: through the fracpack contract with the configured
  // names, as the extender reads them.
  node::RecordRules record_rules_;
  node::DevicesAndPods state_;
  Metrics metrics_;
  std::unique_ptr<node::Nvml> nvml_;
  std::string driver_version_;
  std::string idle_reason_;
  std::unique_ptr<node::PodWatch> pods_;
  std::unique_ptr<k8s::Informer> informer_;
  std::unique_ptr<node::DevicePluginServer> plugin_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> published_{false};
  std::atomic<uint64_t> annotation_writes_{0}, annotation_errors_{0}, health_events_{0}, state_errors_{0};
  std::mutex check_mu_;
  std::unique_ptr<k8s::ApiClient> check_client_;  // check_pod's connection (kubelet admits one pod at a time)
  mutable std::mutex error_mu_;
  std::string publish_error_;
  std::atomic<uint64_t> limiter_changes_{0};
  std::jthread informer_thread_, plugin_thread_, health_thread_, publish_thread_, limiter_thread_;
};

}  // namespace fracpack::server
