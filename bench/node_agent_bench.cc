// The node agent's kubelet-facing latencies, over the real gRPC API on Unix
// sockets (the device plugin against the kubelet double, in one process):
//
//   admit   one container's admission as kubelet does it: GetPreferredAllocation
//           then Allocate, the matcher finding the pod among W other waiting
//           pods (which ask another device count, so they are scanned, not
//           chosen); p50 / p99 per container.
//           Once per isolation: none (the answer names the cards and the
//           share) and mps (it adds the MPS client's environment and
//           mounts, node/isolation.h).
//   health  a card turning unhealthy (DevicesAndPods::mark_unhealthy, as the NVML
//           health thread calls it) until kubelet's ListAndWatch stream has the
//           new list; p50 / p99.
//
// Usage: node_agent_bench [--admissions N] [--health N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "node/device_plugin.h"
#include "node/devices_and_pods.h"
#include "test/support/kubelet_double.h"
#include "test/support/waiting_pods.h"

using namespace fracpack;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

node::GpuDevice card(int index) {
  node::GpuDevice d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index) + "0000000-0000-0000-0000-000000000000";
  d.model = "NVIDIA A100-SXM4-80GB";
  d.memory_mib = 81920;
  d.numa = index / 4;
  return d;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  int admissions = 2000, health = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--admissions") == 0) admissions = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--health") == 0) health = std::atoi(argv[i + 1]);
  }
  const std::string dir = "/tmp/fp-nab-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::vector<node::GpuDevice> devices;
  for (int i = 0; i < 8; ++i) devices.push_back(card(i));
  node::DevicesAndPods state;
  state.set_devices(devices);
  node::DevicePluginOptions options;
  options.plugin_dir = dir;
  options.slots = 32;
  options.report = [](bool, const std::string&) {};
  test::KubeletDouble kubelet(dir);
  node::DevicePluginServer plugin(options, state);
  std::jthread runner([&](std::stop_token st) { plugin.run(st, 50ms); });
  if (!kubelet.wait_registered(options.resource, 10s)) {
    std::fprintf(stderr, "node_agent_bench: the plugin did not register\n");
    return 1;
  }
  std::printf("node agent: 8 cards x 32 IDs, kubelet double and device plugin over gRPC on Unix sockets, one process\n\n");
  std::printf("%-40s %8s %9s %9s\n", "row", "count", "p50 ms", "p99 ms");

  for (const auto isolation : {scheduling::CardIsolation::kNone, scheduling::CardIsolation::kMps}) {
  for (node::GpuDevice& d : devices) d.isolation = isolation;
  state.set_devices(devices);
  for (int others : {0, 200}) {
    std::vector<node::WaitingPod> background;
    for (int i = 0; i < others; ++i) {
      background.push_back(test::waiting_pod("other-" + std::to_string(i), "2026-01-01T00:00:00Z",
                                             {{node::GpuContainer{"main", false, 2, {}}, {{i % 8, devices[static_cast<size_t>(i % 8)].uuid, 1024, 100},
                                                                                       {(i + 1) % 8, devices[static_cast<size_t>((i + 1) % 8)].uuid, 1024, 100}}}}));
    }
    std::vector<double> lat;
    for (int i = 0; i < admissions; ++i) {
      const int c = i % 8;
      node::WaitingPod p = test::waiting_pod("pod-" + std::to_string(i), "2026-01-01T00:00:01Z",
                                             {{node::GpuContainer{"main", false, 1, {}}, {{c, devices[static_cast<size_t>(c)].uuid, 4096, 250}}}});
      p.arrival = static_cast<uint64_t>(i + 1);
      std::vector<node::WaitingPod> pods = background;
      pods.push_back(p);
      state.set_pods(std::move(pods));
      const auto t0 = Clock::now();
      auto admitted = kubelet.admit(p.uid, {{"main", 1}});
      lat.push_back(ms(Clock::now() - t0));
      if (!admitted) {
        std::fprintf(stderr, "node_agent_bench: admission %d refused: %s\n", i, admitted.message().c_str());
        return 1;
      }
      kubelet.remove_pod(p.uid);
    }
    char row[64];
    std::snprintf(row, sizeof row, "admit (%s), %d other waiting pods", scheduling::isolation_name(isolation), others);
    std::printf("%-40s %8d %9.3f %9.3f\n", row, admissions, percentile(lat, 0.5), percentile(lat, 0.99));
  }
  }
  for (node::GpuDevice& d : devices) d.isolation = scheduling::CardIsolation::kNone;
  state.set_devices(devices);

  std::vector<double> lat;
  const std::string first_id = devices[3].uuid + "-0";
  for (int i = 0; i < health; ++i) {
    state.set_devices(devices);  // healthy again (a rediscovery)
    kubelet.wait_devices([&](const std::map<std::string, std::string>& d) { return d.count(first_id) && d.at(first_id) == "Healthy"; }, 5s);
    const auto t0 = Clock::now();
    state.mark_unhealthy(devices[3].uuid, "Xid 79");
    const bool seen =
        kubelet.wait_devices([&](const std::map<std::string, std::string>& d) { return d.count(first_id) && d.at(first_id) == "Unhealthy"; }, 5s);
    lat.push_back(ms(Clock::now() - t0));
    if (!seen) {
      std::fprintf(stderr, "node_agent_bench: kubelet never saw the card unhealthy\n");
      return 1;
    }
  }
  std::printf("%-40s %8d %9.3f %9.3f\n", "health change -> ListAndWatch", health, percentile(lat, 0.5), percentile(lat, 0.99));
  runner.request_stop();
  runner.join();
  std::filesystem::remove_all(dir);
  return 0;
}
