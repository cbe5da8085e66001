// fracpack replay openb: the FGD paper's experiment on the Alibaba openb trace.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <thread>

// A tree: the report is built run by run and printed indented (dump(2)) for people.
#include <nlohmann/json.hpp>

#include "scheduling/go_rand.h"
#include "scheduling/policy.h"
#include "scheduling/replay/experiment.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"
#include "server/cmd/plot.h"

namespace fracpack::cli {
namespace {

constexpr const char* kReplayOpenbHelp = R"(usage: fracpack replay openb [options]

Replays the FGD paper's experiment (ATC'23) on the Alibaba openb trace: the
pods arrive one at a time in a seeded shuffled order, tuned to 130 % of the
cluster's GPU capacity, and are never deleted; allocation and fragmentation
are recorded after every arrival and bucketed by arrived GPU demand.

With --dynamic, pods arrive at the trace's creation times and leave after
its run times (deletion - creation); a pod that does not fit waits and is
retried, first come first served, as capacity frees. The replayed window is
the part of the trace that is complete (its first deletion to its last
creation); arrivals are compressed by a factor chosen to reach each --load
(the mean offered GPU demand over the window / capacity; without --load the
trace's own clock); a pod that would run past the window's end is running
from its start. Reported per load and policy: the unallocated GPU-time share
over the window, the pending time p50/p99 of the placed pods (seconds on the
replay's clock), the pods placed after waiting and never placed.

options:
  --trace-dir DIR     folder of the openb CSVs (default ../shared/traces/openb)
  --workload NAME     pod list openb_pod_list_NAME.csv in --trace-dir (default: default)
  --nodes FILE        node list CSV (default: DIR/openb_node_list_gpu_node.csv)
  --pods FILE         pod list CSV (overrides --workload)
  --mix STEPS         replay a mix built from the pod list, e.g. multigpu40 or
                      gpushare60+gpuspec33 (see fracpack mix openb --help;
                      --mix-seed N, default 1; --spec-source FILE)
  --policy P[,P...]   policies (default: fgd,fracpack); "all" for every policy
  --seeds LIST        seeds, e.g. 42-51 or 42,45 (default 42)
  --tune R            target demand as a multiple of GPU capacity (default 1.3)
  --go-rng FILE       Go's math/rand rng.go for bit-exact ordering
                      (default /usr/share/go-1.19/src/math/rand/rng.go; without
                      it a portable RNG is used and results agree statistically)
  --threads N         parallel runs (default: number of cores)
  --no-learn          fracpack: use the trace's typical pods, do not learn online
  --json              print one JSON document instead of the table
  --svg FILE          draw allocation vs arrived workload, one line per policy
  --csv DIR           write analysis_{allo,frag,frag_ratio}_discrete.csv in the paper's format
  --placements FILE   write every arrival's node and cards (CSV), first seed per policy
  --events DIR        write each run's per-arrival metrics to DIR/events-POLICY-SEED.csv
  --dynamic           the replay with departures (above); with --svg, allocation,
                      fragmentation and waiting demand over time, one row per load
  --load L[,L...]     --dynamic: target offered loads, e.g. 0.8,1.0,1.2
)";

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string paper_policy_label(const std::string& p) {
  static const std::map<std::string, std::string> kLabels = {{"random", "01-Random"},       {"dotprod", "02-DotProd"},
                                                             {"gpuclustering", "03-GpuClustering"},
                                                             {"gpupacking", "04-GpuPacking"}, {"bestfit", "05-BestFit"},
                                                             {"fgd", "06-FGD"}};
  auto it = kLabels.find(p);
  return it == kLabels.end() ? p : it->second;
}

std::string fmt(double v, int decimals = 2) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

int cmd_replay_openb(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"trace-dir", "workload", "nodes", "pods", "mix", "mix-seed", "spec-source", "policy", "seeds", "tune", "go-rng", "threads",
                                 "svg", "csv", "placements", "events", "load"},
                          {"json", "no-learn", "help", "dynamic"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kReplayOpenbHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("unexpected argument " + args->positional()[0]);

  std::vector<std::string> policies = split_list(args->get_or("policy", "fgd,fracpack"));
  if (policies.size() == 1 && policies[0] == "all") policies = scheduling::policy_names();
  for (const auto& p : policies) {
    if (std::find(scheduling::policy_names().begin(), scheduling::policy_names().end(), p) ==
        scheduling::policy_names().end()) {
      return usage_error("unknown policy \"" + p + "\"");
    }
  }
  auto seeds = parse_seed_list(args->get_or("seeds", "42"));
  if (!seeds) return usage_error(seeds.message());
  auto tuned = parse_tune(*args);
  if (!tuned) return usage_error(tuned.message());
  const double tune = *tuned;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto t = args->get("threads")) {
    try {
      threads = std::stoi(*t);
    } catch (...) {
      threads = 0;
    }
    if (threads < 1 || threads > 256) return usage_error("--threads must be 1..256");
  }

  if (args->has("load") && !args->has("dynamic")) return usage_error("--load is for --dynamic");
  auto inputs = load_openb_inputs(*args);
  if (!inputs) return fail(inputs.message());
  if (args->has("dynamic")) return replay_openb_dynamic(*args, *inputs, policies, *seeds, tune, threads);

  // Seeds share nothing but the inputs: prepare each seed once, run its policies.
  struct Job {
    size_t seed_index;
    std::string policy;
  };
  std::vector<replay::ExperimentSetup> setups(seeds->size());
  std::vector<Job> jobs;
  for (size_t s = 0; s < seeds->size(); ++s) {
    for (const auto& p : policies) jobs.push_back({s, p});
  }
  (void)run_parallel(seeds->size(), threads, [&](size_t s) {
    replay::ExperimentOptions eo;
    eo.tune = tune;
    eo.seed = (*seeds)[s];
    eo.go_cooked = inputs->go_cooked;
    setups[s] = replay::prepare_experiment(inputs->nodes, inputs->pods, eo);
    return Status::Ok();
  });

  std::vector<std::optional<replay::RunResult>> results(jobs.size());
  const Status ran = run_parallel(jobs.size(), threads, [&](size_t j) -> Status {
    replay::RunOptions ro;
    ro.learn = !args->has("no-learn");
    ro.record_placements = args->has("placements") && jobs[j].seed_index == 0;
    ro.record_events = args->has("events");
    auto r = replay::run_experiment(setups[jobs[j].seed_index], jobs[j].policy, (*seeds)[jobs[j].seed_index], ro);
    if (!r) return r.error();
    results[j] = std::move(*r);
    return Status::Ok();
  });
  if (!ran.ok()) return fail(ran.message());

  const std::string workload = inputs->workload;
  const int64_t total_gpus = setups[0].total_gpus;
  nlohmann::json doc;
  doc["workload"] = workload;
  doc["total_gpus"] = total_gpus;
  doc["tune"] = tune;
  doc["seeds"] = *seeds;
  doc["rng"] = setups[0].exact_rng ? "go1.19" : "portable";
  doc["summary"] = nlohmann::json::array();
  doc["runs"] = nlohmann::json::array();
  std::vector<PlotSeries> series;
  for (const auto& p : policies) {
    std::vector<double> a100, a130, f130, r130, failed, secs;
    std::vector<std::array<double, replay::kColumns>> curves;
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].policy != p) continue;
      const replay::RunResult& r = *results[j];
      a100.push_back(r.curves.alloc[100]);
      a130.push_back(r.curves.alloc[130]);
      f130.push_back(r.curves.frag[130]);
      r130.push_back(r.curves.frag_ratio[130]);
      failed.push_back(static_cast<double>(r.failed));
      secs.push_back(r.seconds);
      curves.push_back(r.curves.alloc);
      nlohmann::json run = {{"policy", p},
                            {"seed", r.seed},
                            {"arrivals", r.arrivals},
                            {"failed_pods", r.failed},
                            {"alloc_at_100", r.curves.alloc[100]},
                            {"alloc_at_130", r.curves.alloc[130]},
                            {"frag_at_130", r.curves.frag[130]},
                            {"frag_ratio_at_130", r.curves.frag_ratio[130]},
                            {"seconds", r.seconds}};
      doc["runs"].push_back(std::move(run));
    }
    doc["summary"].push_back({{"policy", p},
                              {"alloc_at_100", mean(a100)},
                              {"alloc_at_130", mean(a130)},
                              {"frag_at_130", mean(f130)},
                              {"frag_ratio_at_130", mean(r130)},
                              {"failed_pods_mean", mean(failed)},
                              {"seconds_per_run_median", median(secs)}});
    series.push_back(PlotSeries{p, std::move(curves)});
  }

  if (auto svg = args->get("svg")) {
    if (Status s = write_file(*svg, allocation_plot_svg("openb " + workload + ", " + std::to_string(seeds->size()) +
                                                            " seed(s)",
                                                        series));
        !s.ok()) {
      return fail(s.message());
    }
  }
  if (auto csv_dir = args->get("csv")) {
    const char* files[3] = {"analysis_allo_discrete.csv", "analysis_frag_discrete.csv",
                            "analysis_frag_ratio_discrete.csv"};
    for (int m = 0; m < 3; ++m) {
      std::string out = "workload,sc_policy,tune,seed";
      if (m == 0) out += ",total_gpus";
      for (int x = 0; x < replay::kColumns; ++x) out += "," + std::to_string(x);
      out += "\n";
      for (size_t j = 0; j < jobs.size(); ++j) {
        const replay::RunResult& r = *results[j];
        out += "openb_pod_list_" + workload + "," + paper_policy_label(r.policy) + "," + fmt(tune, 1) + "," +
               std::to_string(r.seed);
        if (m == 0) out += "," + std::to_string(total_gpus);
        const auto& col = m == 0 ? r.curves.alloc : (m == 1 ? r.curves.frag : r.curves.frag_ratio);
        for (double v : col) out += "," + fmt(v, m == 2 ? 6 : 2);
        out += "\n";
      }
      if (Status s = write_file(*csv_dir + "/" + files[m], out); !s.ok()) return fail(s.message());
    }
  }
  if (auto path = args->get("placements")) {
    std::string out = "policy,seed,pod,node,cards\n";
    for (size_t j = 0; j < jobs.size(); ++j) {
      const replay::RunResult& r = *results[j];
      for (const auto& pl : r.placements) {
        std::string cards;
        for (int c : pl.cards) cards += (cards.empty() ? "" : " ") + std::to_string(c);
        out += r.policy + "," + std::to_string(r.seed) + "," + pl.pod + "," + pl.node + "," + cards + "\n";
      }
    }
    if (Status s = write_file(*path, out); !s.ok()) return fail(s.message());
  }

  if (auto events_dir = args->get("events")) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      const replay::RunResult& r = *results[j];
      std::string out = "arrived_gpu_milli,used_gpu_milli,frag_gpu_milli,frag_ratio\n";
      for (const auto& e : r.events) {
        out += std::to_string(e.arrived_gpu_milli) + "," + std::to_string(e.used_gpu_milli) + "," + fmt(e.frag_milli) +
               "," + fmt(e.frag_ratio) + "\n";
      }
      const std::string path = *events_dir + "/events-" + r.policy + "-" + std::to_string(r.seed) + ".csv";
      if (Status s = write_file(path, out); !s.ok()) return fail(s.message());
    }
  }
  if (args->has("json")) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::printf("openb %s: %zu nodes, %lld GPUs, %zu seed(s), tune %.2f, rng %s\n", workload.c_str(),
              setups[0].nodes.size(), static_cast<long long>(total_gpus), seeds->size(), tune,
              setups[0].exact_rng ? "go1.19 (bit-exact)" : "portable");
  std::printf("%-14s %9s %9s %9s %11s %9s %9s\n", "policy", "alloc@100", "alloc@130", "frag@130", "frag%idle", "failed",
              "s/run");
  for (const auto& s : doc["summary"]) {
    std::printf("%-14s %9.2f %9.2f %9.2f %11.2f %9.1f %9.3f\n", s["policy"].get<std::string>().c_str(),
                s["alloc_at_100"].get<double>(), s["alloc_at_130"].get<double>(), s["frag_at_130"].get<double>(),
                s["frag_ratio_at_130"].get<double>(), s["failed_pods_mean"].get<double>(),
                s["seconds_per_run_median"].get<double>());
  }
  return 0;
}

}  // namespace fracpack::cli
