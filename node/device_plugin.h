// The kubelet device plugin (API v1beta1, ../shared/reference/node-side.md §B1): registers the
// contract's card resource (fracpack.io/gpu) with kubelet, advertises each
// card as `slots` device IDs so several containers can share it, streams
// their health (ListAndWatch), steers kubelet to the chosen card's IDs
// (GetPreferredAllocation) and answers Allocate with the cards the
// extender's allocation record names (DevicesAndPods / AllocationMatcher).
//
// Device IDs are tokens: "<card UUID>-<slot>". kubelet hands each out once,
// so a card's `slots` bound how many containers hold it at once; the agent
// publishes the same number as the card's maxSharers in
// fracpack.io/gpu-devices, so the extender never places more containers on
// a card than kubelet has IDs for it. Which card a container gets is the
// record's choice, never the ID's: the IDs only count.
//
// Lifecycle (§B1.3): serve on <dir>/<socket>, then Register on
// <dir>/kubelet.sock; kubelet restarting removes the plugin's socket and
// recreates its own: the plugin then serves afresh and registers again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "node/devices_and_pods.h"
#include "node/isolation.h"
#include "common/result.h"

namespace v1beta1 {
class ContainerAllocateResponse;
class ListAndWatchResponse;
}  // namespace v1beta1

namespace grpc {
class Server;
}

namespace fracpack::node {

struct DevicePluginOptions {
  std::string resource = std::string(k8s::kDefaultGpuResource);  // the agent sets the contract's device resource
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string socket = "fracpack-gpu.sock";
  int slots = 32;  // device IDs per card
  // What Allocate hands the container runtime (../shared/reference/node-side.md §B4).
  bool visible_devices_env = true;  // NVIDIA_VISIBLE_DEVICES=<uuid>,...
  bool cdi = true;                  // cdi_devices: <cdi_kind>=<uuid>
  std::string cdi_kind = "nvidia.com/gpu";
  // What holds each container to its share (node/isolation.h).
  IsolationOptions isolation;
  // How long an Allocate waits for the pod watch to show its record.
  std::chrono::milliseconds record_wait{10000};
  // How long GetPreferredAllocation waits for it (then kubelet picks the
  // IDs itself; Allocate still waits record_wait).
  std::chrono::milliseconds preferred_wait{1000};
  // Where the plugin reports what it did: each container served
  // (problem false), each refusal and failed registration (problem true;
  // a registration failure once per distinct message). Default: stderr.
  // The agent hands it to its log.
  std::function<void(bool problem, const std::string& message)> report;
};

// The IDs of a device: "<uuid>-<slot>" (kubelet allows 63 characters; a
// longer UUID gives "gpu<index>-<slot>").
std::vector<std::string> device_ids(const GpuDevice& device, int slots);
// The slot's device in `devices`, or null.
const GpuDevice* device_of_id(const std::vector<GpuDevice>& devices, const std::string& id, int slots);

// ListAndWatch's message: every ID, its health and NUMA node.
void fill_list(const std::vector<GpuDevice>& devices, int slots, v1beta1::ListAndWatchResponse& out);

// Allocate's answer for one container: the record's cards as
// NVIDIA_VISIBLE_DEVICES and CDI names, the shares as FRACPACK_GPU_*, and
// what the cards' isolation adds (node/isolation.h: MPS's pipe and limits,
// HAMi-core's library and limits). Refuses a card the node does not have
// (index and UUID must agree) or that is unhealthy (its limiter down
// too), and a container that would lift its own limit.
Status fill_container(const Assignment& assignment, const std::vector<GpuDevice>& devices, const DevicePluginOptions& options,
                      v1beta1::ContainerAllocateResponse& out);

// Counters the agent's /metrics shows.
struct DevicePluginStats {
  std::atomic<uint64_t> registrations{0};
  std::atomic<bool> registered{false};          // kubelet has the plugin now
  std::atomic<uint64_t> allocations{0};         // containers served
  std::atomic<uint64_t> allocation_failures{0}; // containers refused
  std::atomic<uint64_t> list_updates{0};        // ListAndWatch messages sent
  std::atomic<uint64_t> wakeups{0};             // passes of the registration loop (a spin shows here)
};

class DevicePluginServer {
 public:
  DevicePluginServer(DevicePluginOptions options, DevicesAndPods& state);
  ~DevicePluginServer();

  // Serves and registers; on failure says why (kubelet not there yet: the
  // caller retries).
  Status start();
  // Serves until `stop`: re-registers whenever kubelet restarts (its socket
  // is recreated) or the plugin's socket disappears; retries a failed
  // registration every `retry`.
  void run(std::stop_token stop, std::chrono::milliseconds retry = std::chrono::milliseconds(1000));
  void shutdown();

  const DevicePluginStats& stats() const { return stats_; }
  const DevicePluginOptions& options() const { return options_; }
  std::string socket_path() const;
  std::string kubelet_socket() const;

  class Service;
  // How long the plugin may go with no ListAndWatch stream open before
  // kubelet counts as gone: after a stream ended (kubelet replaces it at
  // once when it re-dials), and after a registration no stream followed.
  static constexpr std::chrono::milliseconds kStreamGrace{500};
  static constexpr std::chrono::milliseconds kFirstStreamGrace{5000};

 private:
  Status serve();
  Status register_with_kubelet();
  // No stream open now, past the grace (above); `opened_before`: the
  // streams opened before the registration at `registered_at`.
  bool kubelet_holds_no_stream(std::chrono::steady_clock::time_point registered_at, uint64_t opened_before);
  uint64_t streams_opened();

  DevicePluginOptions options_;
  DevicesAndPods& state_;
  DevicePluginStats stats_;
  std::unique_ptr<Service> service_;
  std::mutex mu_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace fracpack::node
