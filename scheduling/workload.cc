#include "scheduling/workload.h"

#include <algorithm>

namespace fracpack::scheduling {

PodShape shape_of(const PodRequest& pod) {
  PodShape s;
  // The FGD simulator counts a zero CPU request as 100m (GetPodResource).
  s.cpu_milli = pod.cpu_milli == 0 ? 100 : pod.cpu_milli;
  for (const ContainerRequest& c : pod.containers) {
    if (c.init) continue;
    s.cards += c.cards;
    s.cores = std::max(s.cores, c.cores);
    s.memory_mib = std::max(s.memory_mib, c.memory_mib);
    s.memory_percent = std::max(s.memory_percent, c.memory_percent);
  }
  // Only exact model names make a shape's model list (a part of a name, as
  // HAMi's use-gputype gives, names no model the fragmentation measure knows).
  if (pod.model_match == PodRequest::ModelMatch::kExact) {
    for (const auto& m : pod.allowed_models) s.models += (s.models.empty() ? "" : "|") + m;
  }
  return s;
}

std::vector<std::string> split_models(const std::string& joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < joined.size()) {
    const size_t bar = joined.find('|', start);
    const size_t end = bar == std::string::npos ? joined.size() : bar;
    if (end > start) out.push_back(joined.substr(start, end - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return out;
}

int64_t node_memory_mib(const PodRequest& pod) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  return pod.memory_bytes > 0 ? (pod.memory_bytes + kMiB - 1) / kMiB : 0;
}

namespace {

// Count-descending order with the simulator's tie rule (TargetPodList.Less, reversed).
bool before(const std::pair<PodShape, double>& a, const std::pair<PodShape, double>& b) {
  if (a.second != b.second) return a.second > b.second;
  const PodShape& x = a.first;
  const PodShape& y = b.first;
  if (x.cpu_milli != y.cpu_milli) return x.cpu_milli > y.cpu_milli;
  if (x.cores != y.cores) return x.cores > y.cores;
  if (x.cards != y.cards) return x.cards > y.cards;
  if (x.models != y.models) return x.models > y.models;
  if (x.memory_mib != y.memory_mib) return x.memory_mib > y.memory_mib;
  return x.memory_percent > y.memory_percent;
}

Workload typical_from_counts(std::vector<std::pair<PodShape, double>> counted, double total, int popularity) {
  std::sort(counted.begin(), counted.end(), before);
  // GetTypicalPods: take entries until the running count reaches the threshold.
  const double expected = static_cast<double>(popularity) * total / 100.0;
  double cum = 0;
  size_t taken = 0;
  std::vector<WorkloadEntry> out;
  while (cum < expected && taken < counted.size()) {
    cum += counted[taken].second;
    out.push_back(WorkloadEntry{counted[taken].first, counted[taken].second / total});
    ++taken;
  }
  if (taken < counted.size()) {
    for (auto& e : out) e.share /= cum / total;  // renormalise after the cut
  }
  return Workload(std::move(out));
}

}  // namespace

Workload Workload::typical(const ShapeCounts& counts, int popularity_percent) {
  std::vector<std::pair<PodShape, double>> counted(counts.counts().begin(), counts.counts().end());
  return typical_from_counts(std::move(counted), counts.total(), popularity_percent);
}

Workload Workload::typical(std::span<const PodShape> pods, int popularity_percent) {
  ShapeCounts counts;
  for (const PodShape& p : pods) counts.add(p);
  return typical(counts, popularity_percent);
}

void LearnedWorkload::seed(const ShapeCounts& prior, double weight) {
  if (prior.total() <= 0) return;
  for (const auto& [shape, count] : prior.counts()) {
    Weight& w = weight_[shape];
    const double add = count / prior.total() * weight * scale_;
    w.count += add;
    w.memory += add * prior.node_memory_mib(shape);
  }
}

void LearnedWorkload::observe(const PodShape& shape, double node_memory_mib) {
  // w_i(t) = decay^(t - t_i); stored as w_i / decay^t so old entries need no update.
  scale_ /= decay_;
  if (scale_ > 1e200) {  // rescale before overflow
    for (auto& [s, w] : weight_) {
      w.count /= scale_;
      w.memory /= scale_;
    }
    scale_ = 1.0;
  }
  Weight& w = weight_[shape];
  w.count += scale_;
  w.memory += scale_ * node_memory_mib;
  ++observations_;
}

ShapeCounts LearnedWorkload::snapshot() const {
  ShapeCounts out;
  for (const auto& [s, w] : weight_) {
    if (w.count > 0) out.add(s, w.count / scale_, w.memory / w.count);
  }
  return out;
}

}  // namespace fracpack::scheduling
