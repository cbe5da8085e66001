// fracpack replay snapshot: place a recorded cluster's pending pods.
#include <algorithm>
#include <cstdio>
#include <iostream>

// A tree: the report is built run by run and printed indented (dump(2)) for people.
#include <nlohmann/json.hpp>

#include "k8s/contract/profiles.h"
#include "k8s/snapshot.h"
#include "scheduling/policy.h"
#include "scheduling/replay/sequence.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"

namespace fracpack::cli {
namespace {

constexpr const char* kReplaySnapshotHelp = R"(usage: fracpack replay snapshot FILE.json [options]

Replays a recorded cluster: a Kubernetes v1 List of nodes and pods, as
"kubectl get nodes,pods,resourcequotas -A -o json" writes it (or fracpack's /debug/snapshot,
or "fracpack convert openb"). Bound pods are loaded from their
allocation records (the profile's: fracpack.io/allocation,
hami.io/vgpu-devices-allocated, ALIYUN_COM_GPU_MEM_IDX); pending pods are placed in creation
order, never retried. Reports where each pod went, what failed and why, and
the allocation and fragmentation figures of "fracpack replay openb".

The target workload (fragmentation measure, fgd and fracpack policies) is
the snapshot's fracpack-target-workload ConfigMap if present, else the
shapes of the snapshot's own pods.

options:
  --policy P[,P...]       policies (default: fracpack); "all" for every policy
  --profile NAME          the snapshot's contract: fracpack (default), hami or gpushare
  --scheduler-name NAME   replay only pending pods of this scheduler
  --seed N                seed of the random policy (default 42)
  --no-learn              fracpack: keep the target workload, do not learn online
  --json                  print one JSON document (placements included)
  --placements            list every pod's placement in the table output
)";

}  // namespace

int cmd_replay_snapshot(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"policy", "profile", "scheduler-name", "seed"}, {"json", "no-learn", "placements", "help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kReplaySnapshotHelp;
    return 0;
  }
  if (args->positional().size() != 1) return usage_error("replay snapshot takes one snapshot file (see --help)");
  const std::string path = args->positional()[0];
  std::vector<std::string> policies = split_list(args->get_or("policy", "fracpack"));
  if (policies.size() == 1 && policies[0] == "all") policies = scheduling::policy_names();
  for (const auto& p : policies) {
    const auto& known = scheduling::policy_names();
    if (std::find(known.begin(), known.end(), p) == known.end()) return usage_error("unknown policy \"" + p + "\"");
  }
  auto seeds = parse_seed_list(args->get_or("seed", "42"));
  if (!seeds || seeds->size() != 1) return usage_error("--seed takes one integer");

  auto text = read_file(path);
  if (!text) return fail(text.message());
  k8s::ContractConfig cc;
  if (auto v = args->get("profile")) {
    auto profile = k8s::parse_profile(*v);
    if (!profile) return usage_error("--profile: " + profile.message());
    cc.profile = *profile;
  }
  auto made = k8s::make_contract(cc);
  if (!made) return usage_error("--profile: " + made.message());
  const k8s::Contract& contract = **made;
  auto list = k8s::parse_snapshot(std::move(*text), contract);
  if (!list) return fail(path + ": " + list.message());
  auto state = k8s::read_snapshot(*list, contract, args->get_or("scheduler-name", ""));
  for (const auto& p : state.problems) std::cerr << "fracpack: " << path << ": " << p.message << "\n";

  auto workload = std::make_shared<scheduling::ShapeCounts>(state.workload ? *state.workload : state.shapes);
  const scheduling::Workload metric = scheduling::Workload::typical(*workload);

  nlohmann::json doc;
  doc["snapshot"] = path;
  doc["nodes"] = state.nodes.size();
  doc["bound_pods"] = state.bound.size();
  doc["pending_pods"] = state.pending.size();
  doc["workload_source"] = state.workload ? "configmap" : "snapshot pods";
  doc["problems"] = nlohmann::json::array();
  for (const auto& p : state.problems) doc["problems"].push_back({{"object", p.object}, {"message", p.message}});
  doc["summary"] = nlohmann::json::array();
  doc["runs"] = nlohmann::json::array();
  int64_t total_gpus = 0;
  std::vector<std::pair<std::string, replay::SequenceResult>> runs;
  for (const auto& policy_name : policies) {
    scheduling::PolicyOptions po;
    po.workload = workload;
    po.seed = static_cast<uint64_t>((*seeds)[0]);
    po.learn = !args->has("no-learn");
    auto policy = scheduling::make_policy(policy_name, po);
    if (!policy) return fail(policy.message());
    replay::SequenceOptions so;
    so.fit.check_node_resources = true;
    so.record_placements = true;
    so.explain_failures = true;
    replay::SequenceResult r = k8s::replay_snapshot(state, **policy, metric, so);
    total_gpus = r.capacity_milli / 1000;
    const double alloc = r.capacity_milli > 0 ? 100.0 * static_cast<double>(r.used_gpu_milli) / static_cast<double>(r.capacity_milli) : 0;
    const double idle = static_cast<double>(r.capacity_milli - r.used_gpu_milli);
    nlohmann::json s = {{"policy", policy_name},
                        {"placed_pods", r.arrivals - r.failed},
                        {"failed_pods", r.failed},
                        {"alloc_final", alloc},
                        {"frag_final", r.capacity_milli > 0 ? 100.0 * r.final_frag_milli / static_cast<double>(r.capacity_milli) : 0},
                        {"frag_ratio_final", idle > 0 ? 100.0 * r.final_frag_milli / idle : 0},
                        {"seconds", r.seconds}};
    for (int x : {100, 130}) {
      const double v = r.curves.alloc[static_cast<size_t>(x)];
      s["alloc_at_" + std::to_string(x)] = std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
    }
    s["frag_at_130"] = std::isnan(r.curves.frag[130]) ? nlohmann::json(nullptr) : nlohmann::json(r.curves.frag[130]);
    doc["summary"].push_back(s);
    nlohmann::json placements = nlohmann::json::array();
    for (const auto& p : r.placements) {
      nlohmann::json e = {{"pod", p.pod}};
      if (p.node.empty()) {
        e["failed"] = p.reason;
      } else {
        e["node"] = p.node;
        e["cards"] = p.cards;
      }
      placements.push_back(std::move(e));
    }
    doc["runs"].push_back({{"policy", policy_name}, {"placements", std::move(placements)}});
    runs.emplace_back(policy_name, std::move(r));
  }
  doc["total_gpus"] = total_gpus;

  if (args->has("json")) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::printf("snapshot %s: %zu nodes (%lld GPUs), %zu bound pods, %zu pending pods, %zu problem(s); workload from %s\n",
              path.c_str(), state.nodes.size(), static_cast<long long>(total_gpus), state.bound.size(),
              state.pending.size(), state.problems.size(), state.workload ? "the ConfigMap" : "the snapshot's pods");
  std::printf("%-14s %8s %8s %9s %9s %10s %9s\n", "policy", "placed", "failed", "alloc%", "frag%", "frag%idle", "seconds");
  for (const auto& s : doc["summary"]) {
    std::printf("%-14s %8zu %8zu %9.2f %9.2f %10.2f %9.3f\n", s["policy"].get<std::string>().c_str(),
                s["placed_pods"].get<size_t>(), s["failed_pods"].get<size_t>(), s["alloc_final"].get<double>(),
                s["frag_final"].get<double>(), s["frag_ratio_final"].get<double>(), s["seconds"].get<double>());
  }
  for (const auto& [policy_name, r] : runs) {
    const bool all = args->has("placements");
    size_t shown = 0;
    for (const auto& p : r.placements) {
      if (!all && !p.node.empty()) continue;
      if (shown++ == 0) std::printf("\n%s:\n", policy_name.c_str());
      if (p.node.empty()) {
        std::printf("  %-40s FAILED  %s\n", p.pod.c_str(), p.reason.c_str());
      } else {
        std::string cards;
        for (int c : p.cards) cards += (cards.empty() ? "" : ",") + std::to_string(c);
        std::printf("  %-40s -> %s [%s]\n", p.pod.c_str(), p.node.c_str(), cards.c_str());
      }
      if (!all && shown >= 20 && r.failed > 20) {
        std::printf("  ... and %zu more failures (--json lists them all)\n", r.failed - 20);
        break;
      }
    }
  }
  return 0;
}

}  // namespace fracpack::cli
