// What replay openb, convert openb and mix openb read: the trace's node and
// pod lists, a workload mix built from them, and Go's seeding table.
#include <algorithm>
#include <iostream>

#include "scheduling/go_rand.h"
#include "scheduling/replay/mixes.h"
#include "server/cmd/commands.h"

namespace fracpack::cli {
namespace {

// "openb_pod_list_default.csv" -> "default".
std::string workload_name(const std::string& pods_path) {
  std::string base = pods_path.substr(pods_path.find_last_of('/') + 1);
  if (base.size() > 4 && base.substr(base.size() - 4) == ".csv") base.resize(base.size() - 4);
  const std::string prefix = "openb_pod_list_";
  if (base.rfind(prefix, 0) == 0) base = base.substr(prefix.size());
  return base;
}

Result<std::vector<replay::OpenbPod>> read_pods(const std::string& path) {
  auto text = read_file(path);
  if (!text) return Error{text.message()};
  auto pods = replay::parse_openb_pods(*text);
  if (!pods) return Error{path + ": " + pods.message()};
  return pods;
}

}  // namespace

Result<std::shared_ptr<const std::vector<int64_t>>> load_go_rng(const std::string& path, bool explicit_path) {
  auto text = read_file(path);
  if (!text) {
    if (explicit_path) return text.error();
    std::cerr << "fracpack: " << path
              << " not found (Debian package golang-1.19-src): using a portable RNG; results agree with the "
                 "paper statistically, not digit for digit\n";
    return std::shared_ptr<const std::vector<int64_t>>{};
  }
  auto table = parse_go_rng_cooked(*text);
  if (!table) return with_context(path, table.error());
  return std::make_shared<const std::vector<int64_t>>(std::move(*table));
}

Result<OpenbInputs> load_openb_inputs(const Args& args) {
  const std::string dir = args.get_or("trace-dir", "../shared/traces/openb");
  const std::string nodes_path = args.get_or("nodes", dir + "/openb_node_list_gpu_node.csv");
  const std::string pods_path = args.get_or("pods", dir + "/openb_pod_list_" + args.get_or("workload", "default") + ".csv");
  auto nodes_text = read_file(nodes_path);
  if (!nodes_text) return Error{nodes_text.message()};
  auto nodes = replay::parse_openb_nodes(*nodes_text);
  if (!nodes) return Error{nodes_path + ": " + nodes.message()};
  auto pods = read_pods(pods_path);
  if (!pods) return pods.error();
  std::string workload = workload_name(pods_path);
  if (auto mix = args.get("mix")) {
    auto steps = replay::parse_mix(*mix);
    if (!steps) return Error{"--mix: " + steps.message()};
    std::vector<replay::OpenbPod> spec_source;
    const bool needs_specs = std::any_of(steps->begin(), steps->end(), [](const replay::MixStep& s) {
      return s.kind == replay::MixStep::Kind::kGpuspec;
    });
    if (needs_specs) {
      auto source = read_pods(args.get_or("spec-source", dir + "/openb_pod_list_gpuspec33.csv"));
      if (!source) return Error{"--spec-source: " + source.message()};
      spec_source = std::move(*source);
    }
    const auto seed = parse_integer(args.get_or("mix-seed", "1"));
    if (!seed || *seed < 0) return Error{"--mix-seed takes a non-negative integer"};
    replay::MixInputs in{*pods, *nodes, spec_source, static_cast<uint64_t>(*seed)};
    auto mixed = replay::build_mix(in, *steps);
    if (!mixed) return Error{"--mix " + *mix + ": " + mixed.message()};
    pods = std::move(*mixed);
    workload += "+" + *mix;
  }
  auto cooked = load_go_rng(args.get_or("go-rng", kDefaultGoRngSource), args.has("go-rng"));
  if (!cooked) return Error{cooked.message()};
  return OpenbInputs{std::move(*nodes), std::move(*pods), *cooked, pods_path, workload};
}

Result<double> parse_tune(const Args& args) {
  const std::string text = args.get_or("tune", "1.3");
  try {
    size_t used = 0;
    const double tune = std::stod(text, &used);
    if (used == text.size() && tune > 0 && tune < 100) return tune;
  } catch (...) {
  }
  return Error{"--tune must be a positive number, e.g. 1.3"};
}

}  // namespace fracpack::cli
