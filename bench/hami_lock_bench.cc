// The cost of HAMi's node lock (k8s/contract/hami_node_lock.h): end-to-end pods/s of the
// hami profile with the lock off and on, against the test API server, with
// a double of HAMi's device plugin (test/support/peer_agents.h) serving each
// locked pod's Allocate `latency` ms after its bind and releasing the lock.
// kube-scheduler's loop: cycles one at a time, binds on 4 binder threads,
// refused binds retried until every pod is bound. pods/s = bound / wall.
//
//   hami_lock_bench [--nodes N] [--pods P] [--latency-ms L,...] [--runs R]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/daemon.h"
#include "server/log.h"
#include "test/support/cluster_harness.h"
#include "test/support/peer_agents.h"
#include "test/support/scheduler_driver.h"
#include "test/support/server_fixture.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace fracpack;

std::string hami_node(const std::string& name) {
  json devices = json::array();
  for (int i = 0; i < 4; ++i) {
    devices.push_back({{"id", "GPU-" + name + "-" + std::to_string(i)}, {"index", i}, {"count", 10}, {"devmem", 24576},
                       {"devcore", 100}, {"type", "NVIDIA-A10"}, {"health", true}});
  }
  json res = {{"cpu", "128"}, {"memory", "512Gi"}, {"pods", "250"}, {"nvidia.com/gpu", "40"}};
  return json{{"apiVersion", "v1"}, {"kind", "Node"},
              {"metadata", {{"name", name}, {"annotations", {{"hami.io/node-nvidia-register", devices.dump()}}}}},
              {"status", {{"capacity", res}, {"allocatable", res}}}}
      .dump();
}

std::string hami_pod(int i) {
  json limits = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", std::to_string(1000 + 500 * (i % 5))}, {"nvidia.com/gpucores", "10"}};
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "job-" + std::to_string(i)}, {"namespace", "ml"}, {"uid", "u-" + std::to_string(i)},
                            {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
              {"spec", {{"schedulerName", "fracpack"}, {"containers", {{{"name", "main"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}}},
              {"status", {{"phase", "Pending"}}}}
      .dump();
}

struct Run {
  double pods_per_s = 0;
  size_t bound = 0, errors = 0, allocated = 0;
  std::string ledger;
  std::string first_error;
};

Run run(int nodes, int pods, bool lock, int latency_ms) {
  testing::FakeApiServer api;
  std::vector<testing::CandidateNode> candidates;
  for (int n = 0; n < nodes; ++n) {
    candidates.push_back({"gpu-" + std::to_string(n), ""});
    api.create("nodes", hami_node(candidates.back().name));
  }
  std::vector<std::string> pending;
  for (int i = 0; i < pods; ++i) pending.push_back(api.create("pods", hami_pod(i)));
  config::Config c = testing::test_config();
  c.contract.profile = k8s::Profile::kHami;
  c.contract.hami_node_lock = lock;
  c.cluster.bind_timeout = std::chrono::seconds(4);
  server::DaemonOptions o;
  o.config = c;
  o.client = testing::client_for(api);
  server::Daemon daemon(o);
  if (!daemon.start().ok() || !daemon.wait_serving(std::chrono::seconds(60))) {
    std::fprintf(stderr, "daemon did not start\n");
    std::exit(1);
  }
  testing::Cluster::wait_for([&] { return daemon.state().pod("u-" + std::to_string(pods - 1)).has_value(); }, std::chrono::seconds(30));
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port());

  // HAMi's device plugin on every node: Allocate `latency_ms` after it sees the lock.
  std::atomic<bool> stop{false};
  std::atomic<size_t> allocated{0};
  std::thread plugin([&] {
    std::map<std::string, Clock::time_point> seen;
    while (!stop) {
      for (const auto& n : candidates) {
        const json node = json::parse(*api.get("nodes", "", n.name));
        const bool locked = node["metadata"].value("annotations", json::object()).contains("hami.io/mutex.lock");
        if (!locked) {
          seen.erase(n.name);
          continue;
        }
        auto [it, fresh] = seen.emplace(n.name, Clock::now());
        if (Clock::now() - it->second < std::chrono::milliseconds(latency_ms)) continue;
        if (testing::hami_allocate(api, n.name, {1}).ok()) ++allocated;
        seen.erase(n.name);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  // kube-scheduler's loop: cycles one pod at a time, binds on 4 binder
  // threads; a refused bind sends the pod back to the queue (its backoff
  // left out: the figure is fracpack's, not the scheduler's).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int, std::string>> binds;  // pod index, node
  std::vector<int> retry;
  size_t outstanding = 0;
  bool done = false;
  std::atomic<size_t> bound{0}, errors{0};
  std::string first_error;
  std::vector<std::thread> binders;
  for (int b = 0; b < 4; ++b) {
    binders.emplace_back([&] {
      auto driver = testing::driver_for(url);
      while (true) {
        std::pair<int, std::string> job;
        {
          std::unique_lock l(mu);
          cv.wait(l, [&] { return done || !binds.empty(); });
          if (binds.empty()) return;
          job = binds.front();
          binds.pop_front();
        }
        const std::string i = std::to_string(job.first);
        Status s = driver->bind("ml", "job-" + i, "u-" + i, job.second);
        std::lock_guard l(mu);
        if (s.ok()) {
          ++bound;
        } else {
          if (errors++ == 0) first_error = s.message();
          retry.push_back(job.first);
        }
        --outstanding;
        cv.notify_all();
      }
    });
  }
  auto driver = testing::driver_for(url);
  const auto t0 = Clock::now();
  std::vector<int> todo(static_cast<size_t>(pods));
  for (int i = 0; i < pods; ++i) todo[static_cast<size_t>(i)] = i;
  size_t unschedulable = 0;
  for (int pass = 0; pass < 200 && !todo.empty(); ++pass) {
    for (int i : todo) {
      testing::CycleResult cycle = driver->schedule(pending[static_cast<size_t>(i)], candidates);
      if (cycle.node.empty()) {
        ++unschedulable;
        continue;
      }
      std::lock_guard l(mu);
      binds.emplace_back(i, cycle.node);
      ++outstanding;
      cv.notify_all();
    }
    std::unique_lock l(mu);
    cv.wait(l, [&] { return outstanding == 0; });
    todo.swap(retry);
    retry.clear();
  }
  {
    std::lock_guard l(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : binders) t.join();
  Run r;
  r.pods_per_s = static_cast<double>(bound) / std::chrono::duration<double>(Clock::now() - t0).count();
  r.bound = bound;
  r.errors = errors;
  r.first_error = first_error;
  stop = true;
  plugin.join();
  r.allocated = allocated;
  r.ledger = testing::compare_ledger(api, daemon.state());
  daemon.drain(std::chrono::seconds(1));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 16, pods = 400, runs = 3;
  std::vector<int> latencies = {0, 20, 100};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--nodes") nodes = std::stoi(v);
    else if (a == "--pods") pods = std::stoi(v);
    else if (a == "--runs") runs = std::stoi(v);
    else if (a == "--latency-ms") {
      latencies.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) latencies.push_back(std::stoi(x));
    } else {
      std::fprintf(stderr, "usage: hami_lock_bench [--nodes N] [--pods P] [--latency-ms L,...] [--runs R]\n");
      return 2;
    }
  }
  server::configure_log(server::LogLevel::kError, server::LogFormat::kLogfmt);
  auto median = [&](bool lock, int latency, Run* last) {
    std::vector<double> v;
    for (int k = 0; k < runs; ++k) {
      *last = run(nodes, pods, lock, latency);
      v.push_back(last->pods_per_s);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("hami profile, %d nodes x 4 cards (split 10), %d one-share pods, 4 binders; median of %d runs\n", nodes, pods, runs);
  Run last;
  const double off = median(false, 0, &last);
  std::printf("  node lock off:                      %6.0f pods/s (bound %zu, bind refusals retried %zu; ledger %s)\n", off, last.bound, last.errors,
              last.ledger.empty() ? "equals the annotations" : last.ledger.c_str());
  for (int l : latencies) {
    const double on = median(true, l, &last);
    std::printf("  node lock on, Allocate %3d ms later: %6.0f pods/s = %.2f x off (bound %zu, bind refusals retried %zu, Allocates %zu; ledger %s)\n", l,
                on, on / off, last.bound, last.errors, last.allocated, last.ledger.empty() ? "equals the annotations" : last.ledger.c_str());
    if (!last.first_error.empty()) std::printf("    first refusal: %s\n", last.first_error.c_str());
  }
  return 0;
}
