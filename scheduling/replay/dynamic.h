// The openb experiment with departures: pods arrive at their trace creation
// times, leave after their trace run times, and a pod that does not fit waits
// and is retried as capacity frees, first come first served, as
// kube-scheduler retries unschedulable pods when a pod leaves. The static
// experiment (experiment.h) never deletes a pod; a real cluster lives here.
//
// The model, on the arrivals of a prepared experiment (tuned and shuffled,
// each copy with its original's times):
//   * The replayed window starts at the trace's first deletion time (before
//     it the trace misses the pods that had already ended) and ends at its
//     last creation time. A pod created before the window is running at its
//     start, with the run time it had left.
//   * Arrivals inside the window keep their order and spacing, compressed by
//     a factor f: arrival = (creation - start) / f. Run times are the
//     trace's (deletion - creation), not compressed: a job runs as long as it
//     ran. A pod whose deletion is the trace's last timestamp was still
//     running when the trace ended: it never leaves.
//   * A pod that would run past the window's end whenever it arrived (run
//     time >= the compressed window) is standing load: it is running from
//     the start, like the pods created before the window. So the load is
//     steady over the window, and as f grows the replay tends to the static
//     experiment (every pod at once, in its order).
//   * The offered load of f is the mean, over the window, of the GPU demand
//     that would be running if every pod started at its arrival, divided by
//     the cluster's GPU capacity. --load L picks f by bisection (the load
//     grows with f); without it f = 1, the trace's own clock.
//
// Measured: the unallocated GPU-time share over the window (idle GPU while
// pods wait is what placement costs), the pending time of every placed pod
// (placement time - arrival), the pods never placed (still waiting when no
// pod is left to leave), and allocation, fragmentation and waiting demand
// over time. Deterministic: the same setup and policy give the same result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/replay/experiment.h"

namespace fracpack::replay {

// The arrivals on the replay's clock for one compression.
struct DynamicPlan {
  struct Pod {
    size_t index = 0;      // in ExperimentSetup::arrivals
    double arrival = 0;    // seconds from the window's start
    double departure = 0;  // +infinity: never leaves
    int64_t gpu_milli = 0;
  };
  std::vector<Pod> pods;  // by arrival, then by the experiment's order
  double compression = 1;
  double window_seconds = 0;  // the window's length on the replay's clock
  double offered_load = 0;    // the mean offered GPU demand / capacity
  double max_load = 0;        // the offered load with every pod standing (f -> infinity)
  size_t standing = 0;        // pods running from the start
};

// The plan for a target load (nullopt: the trace's own clock, f = 1). Errors
// when a pod has no times, when the window is empty, and when the load is
// more than the pods can offer (at most max_load: raise the tune).
Result<DynamicPlan> plan_dynamic(const ExperimentSetup& setup, std::optional<double> load);

struct DynamicOptions {
  int samples = 200;  // points of the curves over the window
};

struct DynamicResult {
  std::string policy;
  int64_t seed = 0;
  DynamicPlan plan;  // without its pods
  size_t arrivals = 0;
  size_t placed = 0;
  size_t waited = 0;        // placed after waiting
  size_t never_placed = 0;  // still waiting when no pod was left to leave
  double unallocated_gpu_time_percent = 0;  // over the window
  double pending_seconds_p50 = 0;           // over placed pods
  double pending_seconds_p99 = 0;
  double pending_seconds_mean = 0;
  struct Sample {
    double time = 0;                   // seconds from the window's start
    double allocated_percent = 0;      // GPU compute allocated, % of capacity
    double fragmentation_percent = 0;  // FGD's measure against the trace's typical pods, % of capacity
    double waiting_percent = 0;        // GPU demand of the waiting pods, % of capacity
  };
  std::vector<Sample> samples;
  double seconds = 0;  // wall time of the event loop
};

Result<DynamicResult> run_dynamic(const ExperimentSetup& setup, const DynamicPlan& plan, const std::string& policy,
                                  int64_t seed, const RunOptions& run = {}, const DynamicOptions& options = {});

}  // namespace fracpack::replay
