// fracpack replay openb --dynamic: the openb experiment with departures and a
// waiting queue (scheduling/replay/dynamic.h has the model).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <optional>

// A tree: the report is built run by run and printed indented (dump(2)) for people.
#include <nlohmann/json.hpp>

#include "scheduling/replay/dynamic.h"
#include "server/cmd/commands.h"
#include "server/cmd/plot.h"

namespace fracpack::cli {
namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Result<std::vector<std::optional<double>>> parse_loads(const Args& args) {
  std::vector<std::optional<double>> loads;
  auto text = args.get("load");
  if (!text) return std::vector<std::optional<double>>{std::nullopt};  // the trace's own clock
  for (const std::string& item : split_list(*text)) {
    try {
      size_t used = 0;
      const double v = std::stod(item, &used);
      if (used == item.size() && v > 0 && v < 100) {
        loads.emplace_back(v);
        continue;
      }
    } catch (...) {
    }
    return Error{"--load takes positive numbers, e.g. 0.8,1.0,1.2; not \"" + item + "\""};
  }
  if (loads.empty()) return Error{"--load takes positive numbers, e.g. 0.8,1.0,1.2"};
  return loads;
}

std::string load_label(const std::optional<double>& load) {
  if (!load) return "trace";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", *load);
  return b;
}

}  // namespace

int replay_openb_dynamic(const Args& args, const OpenbInputs& inputs, const std::vector<std::string>& policies,
                         const std::vector<int64_t>& seeds, double tune, int threads) {
  auto loads = parse_loads(args);
  if (!loads) return usage_error(loads.message());
  for (const char* flag : {"csv", "placements", "events"}) {
    if (args.has(flag)) return usage_error(std::string("--") + flag + " is for the static replay, not --dynamic");
  }

  std::vector<replay::ExperimentSetup> setups(seeds.size());
  for (size_t s = 0; s < seeds.size(); ++s) {
    replay::ExperimentOptions eo;
    eo.tune = tune;
    eo.seed = seeds[s];
    eo.go_cooked = inputs.go_cooked;
    setups[s] = replay::prepare_experiment(inputs.nodes, inputs.pods, eo);
  }
  // One plan per (seed, load): the compression that gives the load.
  std::vector<std::vector<replay::DynamicPlan>> plans(seeds.size());
  for (size_t s = 0; s < seeds.size(); ++s) {
    for (const auto& load : *loads) {
      auto plan = replay::plan_dynamic(setups[s], load);
      if (!plan) return fail(inputs.workload + ", seed " + std::to_string(seeds[s]) + ": " + plan.message());
      plans[s].push_back(std::move(*plan));
    }
  }
  struct Job {
    size_t seed, load;
    std::string policy;
  };
  std::vector<Job> jobs;
  for (size_t l = 0; l < loads->size(); ++l) {
    for (const auto& p : policies) {
      for (size_t s = 0; s < seeds.size(); ++s) jobs.push_back({s, l, p});
    }
  }
  std::vector<std::optional<replay::DynamicResult>> results(jobs.size());
  const Status ran = run_parallel(jobs.size(), threads, [&](size_t j) -> Status {
    replay::RunOptions ro;
    ro.learn = !args.has("no-learn");
    auto r = replay::run_dynamic(setups[jobs[j].seed], plans[jobs[j].seed][jobs[j].load], jobs[j].policy, seeds[jobs[j].seed], ro);
    if (!r) return r.error();
    results[j] = std::move(*r);
    return Status::Ok();
  });
  if (!ran.ok()) return fail(ran.message());

  nlohmann::json doc;
  doc["workload"] = inputs.workload;
  doc["mode"] = "dynamic";
  doc["total_gpus"] = setups[0].total_gpus;
  doc["tune"] = tune;
  doc["seeds"] = seeds;
  doc["arrivals"] = setups[0].arrivals.size();
  doc["summary"] = nlohmann::json::array();
  doc["runs"] = nlohmann::json::array();
  std::vector<TimePanel> panels;
  for (size_t l = 0; l < loads->size(); ++l) {
    TimePanel alloc{"load " + load_label((*loads)[l]) + ": GPU allocated", "% of capacity", {}};
    TimePanel frag{"load " + load_label((*loads)[l]) + ": fragmentation", "% of capacity", {}};
    TimePanel wait{"load " + load_label((*loads)[l]) + ": waiting GPU demand", "% of capacity", {}};
    for (const auto& p : policies) {
      std::vector<double> unalloc, p50, p99, mean_wait, never, placed, waited, secs, compression, offered;
      const replay::DynamicResult* first = nullptr;
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (jobs[j].load != l || jobs[j].policy != p) continue;
        const replay::DynamicResult& r = *results[j];
        if (first == nullptr) first = &r;
        unalloc.push_back(r.unallocated_gpu_time_percent);
        p50.push_back(r.pending_seconds_p50);
        p99.push_back(r.pending_seconds_p99);
        mean_wait.push_back(r.pending_seconds_mean);
        never.push_back(static_cast<double>(r.never_placed));
        placed.push_back(static_cast<double>(r.placed));
        waited.push_back(static_cast<double>(r.waited));
        secs.push_back(r.seconds);
        compression.push_back(r.plan.compression);
        offered.push_back(r.plan.offered_load);
        doc["runs"].push_back({{"policy", p},
                               {"load", (*loads)[l] ? nlohmann::json(*(*loads)[l]) : nlohmann::json(nullptr)},
                               {"seed", r.seed},
                               {"compression", r.plan.compression},
                               {"offered_load", r.plan.offered_load},
                               {"window_seconds", r.plan.window_seconds},
                               {"standing_pods", r.plan.standing},
                               {"arrivals", r.arrivals},
                               {"placed", r.placed},
                               {"placed_after_waiting", r.waited},
                               {"never_placed", r.never_placed},
                               {"unallocated_gpu_time_percent", r.unallocated_gpu_time_percent},
                               {"pending_seconds_p50", r.pending_seconds_p50},
                               {"pending_seconds_p99", r.pending_seconds_p99},
                               {"pending_seconds_mean", r.pending_seconds_mean},
                               {"seconds", r.seconds}});
      }
      doc["summary"].push_back({{"policy", p},
                                {"load", (*loads)[l] ? nlohmann::json(*(*loads)[l]) : nlohmann::json(nullptr)},
                                {"offered_load", mean_of(offered)},
                                {"compression", mean_of(compression)},
                                {"unallocated_gpu_time_percent", mean_of(unalloc)},
                                {"pending_seconds_p50", mean_of(p50)},
                                {"pending_seconds_p99", mean_of(p99)},
                                {"pending_seconds_mean", mean_of(mean_wait)},
                                {"never_placed", mean_of(never)},
                                {"placed", mean_of(placed)},
                                {"placed_after_waiting", mean_of(waited)},
                                {"seconds_per_run_median", median_of(secs)}});
      if (first != nullptr) {  // the curves of the first seed
        TimePanel::Line a{p, {}}, f{p, {}}, w{p, {}};
        const double hours = 3600.0;
        for (const auto& s : first->samples) {
          a.points.emplace_back(s.time / hours, s.allocated_percent);
          f.points.emplace_back(s.time / hours, s.fragmentation_percent);
          w.points.emplace_back(s.time / hours, s.waiting_percent);
        }
        alloc.lines.push_back(std::move(a));
        frag.lines.push_back(std::move(f));
        wait.lines.push_back(std::move(w));
      }
    }
    panels.push_back(std::move(alloc));
    panels.push_back(std::move(frag));
    panels.push_back(std::move(wait));
  }
  if (auto svg = args.get("svg")) {
    const std::string title = "openb " + inputs.workload + " with departures, seed " + std::to_string(seeds[0]);
    if (Status st = write_file(*svg, time_panels_svg(title, "hours into the replayed window", 3, panels)); !st.ok()) {
      return fail(st.message());
    }
  }
  if (args.has("json")) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::printf("openb %s with departures: %zu nodes, %lld GPUs, %zu arrivals, %zu seed(s), tune %.2f\n", inputs.workload.c_str(),
              setups[0].nodes.size(), static_cast<long long>(setups[0].total_gpus), setups[0].arrivals.size(), seeds.size(),
              tune);
  std::printf("%-6s %8s %11s %-12s %12s %10s %10s %9s %9s %7s\n", "load", "offered", "compression", "policy",
              "unalloc GPU%", "wait p50 s", "wait p99 s", "waited", "never", "s/run");
  for (const auto& row : doc["summary"]) {
    const std::string load = row["load"].is_null() ? "trace" : load_label(row["load"].get<double>());
    std::printf("%-6s %8.3f %11.1f %-12s %12.2f %10.1f %10.1f %9.0f %9.1f %7.2f\n", load.c_str(),
                row["offered_load"].get<double>(), row["compression"].get<double>(),
                row["policy"].get<std::string>().c_str(), row["unallocated_gpu_time_percent"].get<double>(),
                row["pending_seconds_p50"].get<double>(), row["pending_seconds_p99"].get<double>(),
                row["placed_after_waiting"].get<double>(), row["never_placed"].get<double>(),
                row["seconds_per_run_median"].get<double>());
  }
  return 0;
}

}  // namespace fracpack::cli
