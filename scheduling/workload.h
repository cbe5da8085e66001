// The target workload: the pod shapes a cluster expects, with their shares.
// FGD measures fragmentation against it (../shared/reference/replay-spec.md §5.1, §6.2); fracpack's
// own policy learns it online. Built either from a trace by the FGD rule
// (typical pods) or from a decayed count of the pods seen.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "scheduling/model.h"

namespace fracpack::scheduling {

// A pod's demand as the fragmentation measure sees it: node CPU plus one
// per-card share repeated over `cards` cards.
struct PodShape {
  int64_t cpu_milli = 0;
  int cores = 0;             // per card, milli
  int cards = 0;             // 0 for pods without GPUs
  int64_t memory_mib = 0;    // per card (absolute part)
  int memory_percent = 0;    // per card (relative part)
  std::string models;        // allowed models joined by '|', empty: any

  auto operator<=>(const PodShape&) const = default;
  bool operator==(const PodShape&) const = default;
};

// The shape of a pod request. Several GPU containers collapse into one shape
// with their total card count and their largest per-card share.
PodShape shape_of(const PodRequest& pod);
// A shape's allowed models: the non-empty parts of "A|B" (PodShape::models).
std::vector<std::string> split_models(const std::string& joined);

// The node memory a pod requests, MiB rounded up. Not part of a shape (FGD's
// typical pods are keyed without it): workloads keep each shape's mean.
int64_t node_memory_mib(const PodRequest& pod);

struct WorkloadEntry {
  PodShape shape;
  double share = 0;  // probability; the entries' shares sum to 1
};

// Pod shapes with how often they were seen: a trace, a snapshot, a
// configured target. The policies derive their target workload from it.
class ShapeCounts {
 public:
  // `count` pods of `shape` whose node memory requests average `node_memory_mib`.
  void add(const PodShape& shape, double count = 1, double node_memory_mib = 0) {
    counts_[shape] += count;
    if (node_memory_mib != 0) memory_[shape] += count * node_memory_mib;
    total_ += count;
  }
  const std::map<PodShape, double>& counts() const { return counts_; }
  double total() const { return total_; }
  bool empty() const { return counts_.empty(); }
  // The mean node memory (MiB) of the shape's pods; 0 when unknown.
  double node_memory_mib(const PodShape& shape) const {
    auto m = memory_.find(shape);
    auto c = counts_.find(shape);
    return m == memory_.end() || c == counts_.end() || c->second <= 0 ? 0 : m->second / c->second;
  }

 private:
  std::map<PodShape, double> counts_;
  std::map<PodShape, double> memory_;  // sum of count x node memory, per shape
  double total_ = 0;
};

class Workload {
 public:
  Workload() = default;
  explicit Workload(std::vector<WorkloadEntry> entries) : entries_(std::move(entries)) {}

  // FGD's typical pods (../shared/reference/replay-spec.md §5.1, the simulator's GetTypicalPods):
  // count shapes, sort by count descending (ties: descending cpu, cores,
  // cards, models), keep the top ones until they cover `popularity_percent`
  // of the pods, renormalise. Floating-point steps as in the simulator.
  // With 100, every shape is kept.
  static Workload typical(const ShapeCounts& counts, int popularity_percent = 95);
  static Workload typical(std::span<const PodShape> pods, int popularity_percent = 95);

  const std::vector<WorkloadEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<WorkloadEntry> entries_;
};

// A workload learned from the pods seen: exponentially decayed counts per
// shape, so the target follows a drifting mix. Every `half_life` observations
// an old observation's weight halves.
class LearnedWorkload {
 public:
  explicit LearnedWorkload(double half_life = 2000)
      : decay_(half_life > 0 ? std::pow(0.5, 1.0 / half_life) : 1.0) {}

  // Starts from a prior: its shapes count as `weight` observations in all,
  // in proportion (they decay like real ones).
  void seed(const ShapeCounts& prior, double weight);
  void observe(const PodShape& shape, double node_memory_mib = 0);
  // The current target: every shape with its decayed weight and mean node
  // memory (empty before any pod and without a prior).
  ShapeCounts snapshot() const;
  uint64_t observations() const { return observations_; }

 private:
  struct Weight {
    double count = 0;   // decayed count
    double memory = 0;  // decayed count x node memory
  };
  double decay_;
  double scale_ = 1.0;  // weights are stored divided by the running decay factor
  uint64_t observations_ = 0;
  std::map<PodShape, Weight> weight_;
};

}  // namespace fracpack::scheduling
