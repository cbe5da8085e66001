// GPU fragmentation of a node against a target workload (the FGD paper's
// measure, ../shared/reference/replay-spec.md §6.2; the simulator's NodeGpuShareFragAmountScore):
//   F_n = sum over workload shapes m of p_m * (idle compute of n that m cannot use)
// where, if m fits the node, the unusable part is the cards too small for m,
// and if it does not fit (or is a CPU-only shape), all idle compute of n.
// Summation follows the simulator's order (per category, then categories in
// order) so that the replay reproduces its integer scores bit for bit.
//
// Generalised beyond the simulator in two ways that leave the openb replay
// unchanged: a card is usable by m only if it also has m's GPU memory free,
// and models are checked per card (heterogeneous nodes). This is the metric
// of the replay's curves, the inspect report and /metrics, and the FGD
// policy's measure; fracpack's own is policies/fracpack_measure.h.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/ledger.h"
#include "scheduling/workload.h"

namespace fracpack::scheduling {

// The state of one card as the measure sees it.
struct CardFree {
  int cores = 0;           // free compute, milli (0 for an unschedulable card)
  int64_t memory_mib = 0;  // free memory
  int64_t total_memory_mib = 0;
  uint16_t model = 0;      // interned model id
};

class FragmentationModel {
 public:
  explicit FragmentationModel(Workload workload);

  const Workload& workload() const { return workload_; }

  // F_n for a node state given directly. Not thread-safe (memoises).
  double frag(int64_t cpu_left, std::span<const CardFree> cards);
  // F_n of a ledger node as it is.
  double frag(const NodeState& node);

  // The measure's view of a node's cards (appends to `out`, cleared first).
  void cards_of(const NodeState& node, std::vector<CardFree>& out);
  uint16_t model_id(const std::string& model);

  // Breakdown by category for reports: [q1, q2, q3, q4, xl, xr, na].
  std::array<double, 7> categories(int64_t cpu_left, std::span<const CardFree> cards);

 private:
  struct Shape {
    int64_t cpu = 0;
    int cores = 0;
    int cards = 0;
    int64_t memory_mib = 0;
    int memory_percent = 0;
    double p = 0;
    std::vector<uint16_t> models;  // allowed model ids; empty: any
  };
  std::array<double, 7> accumulate(int64_t cpu_left, std::span<const CardFree> cards) const;
  int cpu_rank(int64_t cpu_left) const;

  Workload workload_;
  std::vector<Shape> shapes_;
  std::vector<int64_t> cpu_thresholds_;  // sorted distinct shape CPUs: F depends on CPU only through them
  bool uses_memory_ = false;
  std::unordered_map<std::string, uint16_t> model_ids_;

  struct Key {
    int rank = 0;
    int n = 0;
    std::array<uint64_t, 16> cards{};
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, double, KeyHash> memo_;
};

}  // namespace fracpack::scheduling
