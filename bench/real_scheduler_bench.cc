// real_scheduler_bench: pods/s through a real kube-scheduler v1.20.2 (and a
// real kube-apiserver and etcd: test/real/real_cluster.h, control plane
// only), bare and with fracpack, for the same cluster and pods: --nodes
// nodes of 8 A100 80 GB each (created through the API, no kubelet), --pods
// pods of one whole card each — `nvidia.com/gpu: 1` for the bare scheduler,
// `fracpack.io/gpu: 1` (schedulerName fracpack) through the shipped extender
// block — created as fast as one client can, timed from the first create
// until every pod is bound (the API server's pods, polled every 50 ms).
// fracpack runs each of its bind fence's reads (cluster.bindFenceRead):
// the default `auto` (marker on this 1.20 API server) and `consistent`.
// Needs root and what the real-cluster tier needs (it says so otherwise).
//
//   build/bench/real_scheduler_bench [--nodes 50] [--pods 300] [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test/real/real_cluster.h"

namespace {

using json = nlohmann::json;
using fracpack::real::RealCluster;
using fracpack::real::RealClusterOptions;
using namespace std::chrono_literals;

json node(int i) {
  json devices = json::array();
  for (int c = 0; c < 8; ++c) {
    devices.push_back({{"index", c}, {"uuid", "GPU-" + std::to_string(i) + "-" + std::to_string(c)}, {"model", "A100-SXM4-80GB"},
                       {"memoryMiB", 81920}, {"numa", c / 4}, {"healthy", true}});
  }
  const std::string name = "node-" + std::to_string(i);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}, {"annotations", {{"fracpack.io/gpu-devices", devices.dump()}}}}}};
}

json node_status() {
  // fracpack.io/gpu: the node agent's 32 device IDs per card.
  const json amounts = {{"cpu", "96"}, {"memory", "1160Gi"}, {"pods", "250"}, {"nvidia.com/gpu", "8"}, {"fracpack.io/gpu", "256"}};
  return {{"capacity", amounts},
          {"allocatable", amounts},
          {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}, {"message", "bench"}}})}};
}

json pod(int i, bool fracpack) {
  json limits = {{"cpu", "100m"}, {"memory", "64Mi"}};
  limits[fracpack ? "fracpack.io/gpu" : "nvidia.com/gpu"] = "1";
  json spec = {{"containers", json::array({{{"name", "main"}, {"image", "local/busybox:1"}, {"resources", {{"limits", limits}}}}})}};
  if (fracpack) spec["schedulerName"] = "fracpack";
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p-" + std::to_string(i)}, {"namespace", "default"}}}, {"spec", spec}};
}

// Thrown, so that the cluster is torn down on the way out.
[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

struct Round {
  double seconds = 0;
  int bound = 0;
};

Round run(const std::string& mode, int nodes, int pods) {
  RealClusterOptions o;
  o.node = false;
  o.webhook = false;
  o.fracpack = mode != "bare";
  if (mode == "fracpack-consistent") o.fence_read = "consistent";
  RealCluster c(o);
  if (auto s = c.up(); !s.ok()) fail("the cluster did not come up: " + s.message());
  for (int i = 0; i < nodes; ++i) {
    const json n = node(i);
    if (auto made = c.create(n); !made) fail("cannot create node " + std::to_string(i) + ": " + made.message());
    auto got = c.get("/api/v1/nodes/" + n["metadata"]["name"].get<std::string>());
    if (!got) fail("cannot read node " + std::to_string(i) + ": " + got.message());
    json st = *got;
    st["status"] = node_status();
    auto r = c.request("PUT", "/api/v1/nodes/" + n["metadata"]["name"].get<std::string>() + "/status", st.dump());
    if (!r || r->status != 200) fail("cannot set node " + std::to_string(i) + "'s status");
    // The API server taints a new node not-ready (no node lifecycle
    // controller here takes it off): taken off by hand.
    auto tainted = c.get("/api/v1/nodes/" + n["metadata"]["name"].get<std::string>());
    if (!tainted) fail("cannot read node " + std::to_string(i) + ": " + tainted.message());
    json untainted = *tainted;
    untainted["spec"].erase("taints");
    r = c.request("PUT", "/api/v1/nodes/" + n["metadata"]["name"].get<std::string>(), untainted.dump());
    if (!r || r->status != 200) fail("cannot untaint node " + std::to_string(i));
  }
  std::this_thread::sleep_for(2s);  // the informers (kube-scheduler's, fracpack's) see the nodes
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < pods; ++i) {
    if (auto made = c.create(pod(i, o.fracpack)); !made) fail("cannot create pod " + std::to_string(i) + ": " + made.message());
  }
  Round out;
  const auto deadline = start + 300s;
  while (std::chrono::steady_clock::now() < deadline) {
    int bound = 0;
    for (const json& p : c.pods("default")) bound += p["spec"].value("nodeName", "").empty() ? 0 : 1;
    out.bound = bound;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (bound >= pods) break;
    std::this_thread::sleep_for(50ms);
  }
  if (o.fracpack) {
    const std::string m = c.fracpack_metrics();
    size_t at = m.find("\nfracpack_bind_fence_read");
    if (at != std::string::npos) std::printf("    %s\n", m.substr(at + 1, m.find('\n', at + 1) - at - 1).c_str());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 50, pods = 300, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pods")) pods = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  if (const std::string why = RealCluster::unavailable(); !why.empty()) {
    std::fprintf(stderr, "cannot run: %s\n", why.c_str());
    return 77;
  }
  if (pods > nodes * 8) pods = nodes * 8;
  if (rounds < 1 || nodes < 1 || pods < 1) {
    std::fprintf(stderr, "--nodes, --pods and --rounds must be at least 1\n");
    return 2;
  }
  std::printf("real kube-scheduler v1.20.2, %d nodes x 8 cards, %d pods of 1 whole card, %d rounds each (medians)\n", nodes, pods, rounds);
  double bare = 0;
  try {
    for (const std::string mode : {"bare", "fracpack-auto", "fracpack-consistent"}) {
      std::vector<double> rates;
      int worst_bound = pods;
      for (int r = 0; r < rounds; ++r) {
        const Round x = run(mode, nodes, pods);
        rates.push_back(x.bound / x.seconds);
        worst_bound = std::min(worst_bound, x.bound);
        std::printf("  %-20s round %d: %d/%d bound in %.2f s (%.1f pods/s)\n", mode.c_str(), r + 1, x.bound, pods, x.seconds, x.bound / x.seconds);
        std::fflush(stdout);
      }
      std::sort(rates.begin(), rates.end());
      const double median = rates[rates.size() / 2];
      if (mode == "bare") bare = median;
      std::printf("%-20s median %.1f pods/s (%.2f x bare), fewest bound %d/%d\n", mode.c_str(), median, bare > 0 ? median / bare : 0.0,
                  worst_bound, pods);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "real_scheduler_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
