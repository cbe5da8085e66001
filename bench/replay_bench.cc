// Replay benchmark: wall time of one openb experiment run per policy (the
// placement loop of ~10.9 k arrivals on 1 213 nodes, metrics included), as
// the median of repeated runs. Prints one line per policy.
//
//   build/bench/replay_bench [--trace-dir DIR] [--workload NAME] [--mix STEPS] [--repeat N] [--policy P,...]
//
// --mix builds a workload mix from the pod list (scheduling/replay/mixes.h,
// as fracpack mix openb does, mix seed 1), e.g. gpushare80+gpuspec50.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scheduling/go_rand.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/replay/mixes.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "../shared/traces/openb", workload = "default", policies = "fgd,fracpack,bestfit,random", mix;
  int repeat = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--trace-dir") dir = argv[i + 1];
    else if (a == "--workload") workload = argv[i + 1];
    else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--policy") policies = argv[i + 1];
    else if (a == "--mix") mix = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: replay_bench [--trace-dir DIR] [--workload NAME] [--mix STEPS] [--repeat N] [--policy P,...]\n");
      return 2;
    }
  }
  const std::string nodes_text = slurp(dir + "/openb_node_list_gpu_node.csv");
  const std::string pods_text = slurp(dir + "/openb_pod_list_" + workload + ".csv");
  auto nodes = fracpack::replay::parse_openb_nodes(nodes_text);
  auto pods = fracpack::replay::parse_openb_pods(pods_text);
  if (!nodes || !pods) {
    std::fprintf(stderr, "replay_bench: cannot read the openb trace under %s\n", dir.c_str());
    return 1;
  }
  if (!mix.empty()) {
    auto steps = fracpack::replay::parse_mix(mix);
    auto specs = fracpack::replay::parse_openb_pods(slurp(dir + "/openb_pod_list_gpuspec33.csv"));
    if (!steps || !specs) {
      std::fprintf(stderr, "replay_bench: --mix %s: %s\n", mix.c_str(), steps ? specs.message().c_str() : steps.message().c_str());
      return 1;
    }
    auto mixed = fracpack::replay::build_mix(fracpack::replay::MixInputs{*pods, *nodes, *specs, 1}, *steps);
    if (!mixed) {
      std::fprintf(stderr, "replay_bench: --mix %s: %s\n", mix.c_str(), mixed.message().c_str());
      return 1;
    }
    *pods = std::move(*mixed);
    workload += "+" + mix;
  }
  fracpack::replay::ExperimentOptions eo;
  eo.seed = 42;
  if (auto go = slurp(fracpack::kDefaultGoRngSource); !go.empty()) {
    if (auto t = fracpack::parse_go_rng_cooked(go)) eo.go_cooked = std::make_shared<std::vector<int64_t>>(*t);
  }
  std::vector<double> prep;
  fracpack::replay::ExperimentSetup setup;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    setup = fracpack::replay::prepare_experiment(*nodes, *pods, eo);
    prep.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("openb %s seed 42: %zu nodes, %zu arrivals; setup (tune, shuffle, typical pods) median %.3f s\n",
              workload.c_str(), setup.nodes.size(), setup.arrivals.size(), median(prep));
  std::printf("%-12s %10s %10s %10s %12s %10s\n", "policy", "median_s", "min_s", "max_s", "arrivals/s", "alloc@130");
  std::stringstream ss(policies);
  for (std::string p; std::getline(ss, p, ',');) {
    std::vector<double> t;
    double alloc = 0;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto res = fracpack::replay::run_experiment(setup, p, 42);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!res) {
        std::fprintf(stderr, "replay_bench: %s\n", res.message().c_str());
        return 1;
      }
      alloc = res->curves.alloc[130];
    }
    const double m = median(t);
    std::printf("%-12s %10.3f %10.3f %10.3f %12.0f %10.2f\n", p.c_str(), m, *std::min_element(t.begin(), t.end()),
                *std::max_element(t.begin(), t.end()), static_cast<double>(setup.arrivals.size()) / m, alloc);
  }
  return 0;
}
