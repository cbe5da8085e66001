// Places pods one at a time, in a given order, on a ledger with a policy, and
// records what happened after every arrival (allocation, fragmentation
// against a target workload). The openb experiment and the snapshot replay
// both run through here, so the two paths cannot drift apart.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"
#include "scheduling/workload.h"

namespace fracpack::replay {

inline constexpr int kColumns = 131;  // x = 0..130 % of GPU capacity

// Metrics after one arrival, as the FGD simulator logs them.
struct ArrivalMetrics {
  int64_t arrived_gpu_milli = 0;  // cumulative GPU demand of the arrivals so far (failed ones too)
  int64_t used_gpu_milli = 0;
  double frag_milli = 0;          // rounded to 2 dp as the simulator logs it
  double frag_ratio = 0;          // % of idle GPU, rounded to 2 dp
};

// One bucketed curve per metric (NaN where a bucket is empty), ../shared/reference/replay-spec.md §7.
struct Curves {
  std::array<double, kColumns> alloc{};       // MilliGpu allocation, % (rounded to 2 dp)
  std::array<double, kColumns> frag{};        // fragmentation, % of capacity (rounded to 2 dp)
  std::array<double, kColumns> frag_ratio{};  // fragmentation, % of idle GPU (mean, unrounded)
};

struct Placement {
  std::string pod;     // namespace/name
  std::string node;    // empty: failed
  std::vector<int> cards;
  std::string reason;  // why it failed (with explain_failures)
};

struct SequenceOptions {
  scheduling::FitOptions fit;
  bool record_placements = false;
  bool record_events = false;
  bool explain_failures = false;  // costs a full explain_fit() per node for each failure
};

struct SequenceResult {
  Curves curves;
  size_t arrivals = 0;
  size_t failed = 0;
  int64_t capacity_milli = 0;      // 1000 x cards of the nodes in the order
  int64_t used_gpu_milli = 0;      // at the end
  double final_frag_milli = 0;     // at the end
  double seconds = 0;              // wall time of the placement loop
  std::vector<Placement> placements;
  std::vector<ArrivalMetrics> events;
};

// GPU demand of a pod as the replay counts arrivals: cards x compute over
// its app containers (the openb trace's num_gpu x gpu_milli).
int64_t gpu_demand(const scheduling::PodRequest& pod);

// Places `pods` in order. `order` names the ledger's nodes in tie-breaking
// order; `metric` is the workload fragmentation is measured against.
// `arrived_before` counts demand already placed (bound pods of a snapshot).
SequenceResult place_in_order(scheduling::Ledger& ledger, const std::vector<std::string>& order,
                              scheduling::Policy& policy, const std::vector<scheduling::PodRequest>& pods,
                              const scheduling::Workload& metric, const SequenceOptions& options,
                              int64_t arrived_before = 0);

// Per-arrival metrics -> bucketed curves (../shared/reference/replay-spec.md §7). Exposed for tests.
Curves bucket(const std::vector<ArrivalMetrics>& events, int64_t total_gpus);

// Python's round(x, 2) (correctly rounded decimal, ties to even on exact halves).
double round2(double x);

}  // namespace fracpack::replay
