#include "scheduling/fragmentation.h"

#include <algorithm>

namespace fracpack::scheduling {
namespace {

// Categories in the simulator's order (FragRatioDataMap).
enum Category { kQ1LackBoth = 0, kQ2LackGpu, kQ3Satisfied, kQ4LackCpu, kXLSatisfied, kXRLackCpu, kNoAccess };

}  // namespace

FragmentationModel::FragmentationModel(Workload workload) : workload_(std::move(workload)) {
  for (const WorkloadEntry& e : workload_.entries()) {
    Shape s;
    s.cpu = e.shape.cpu_milli;
    s.cores = e.shape.cores;
    s.cards = e.shape.cards;
    s.memory_mib = e.shape.memory_mib;
    s.memory_percent = e.shape.memory_percent;
    s.p = e.share;
    for (const auto& m : split_models(e.shape.models)) s.models.push_back(model_id(m));
    uses_memory_ |= s.cards > 0 && (s.memory_mib > 0 || s.memory_percent > 0);
    shapes_.push_back(std::move(s));
    cpu_thresholds_.push_back(e.shape.cpu_milli);
  }
  std::sort(cpu_thresholds_.begin(), cpu_thresholds_.end());
  cpu_thresholds_.erase(std::unique(cpu_thresholds_.begin(), cpu_thresholds_.end()), cpu_thresholds_.end());
}

uint16_t FragmentationModel::model_id(const std::string& model) {
  auto it = model_ids_.find(model);
  if (it != model_ids_.end()) return it->second;
  const auto id = static_cast<uint16_t>(model_ids_.size() + 1);
  model_ids_.emplace(model, id);
  return id;
}

int FragmentationModel::cpu_rank(int64_t cpu_left) const {
  return static_cast<int>(std::upper_bound(cpu_thresholds_.begin(), cpu_thresholds_.end(), cpu_left) -
                          cpu_thresholds_.begin());
}

void FragmentationModel::cards_of(const NodeState& node, std::vector<CardFree>& out) {
  out.clear();
  const auto& cards = node.cards();
  for (size_t p = 0; p < cards.size(); ++p) {
    CardFree f;
    // A card serving its most sharers takes nothing more, like an unschedulable one.
    const bool open = cards[p].schedulable() && (cards[p].max_sharers == 0 || node.use()[p].sharers < cards[p].max_sharers);
    f.cores = open ? node.free_cores(p) : 0;
    f.memory_mib = open ? node.free_memory(p) : 0;
    f.total_memory_mib = cards[p].memory_mib;
    f.model = model_id(cards[p].model);
    out.push_back(f);
  }
}

std::array<double, 7> FragmentationModel::accumulate(int64_t cpu_left, std::span<const CardFree> cards) const {
  std::array<double, 7> acc{};
  int64_t gfree = 0;
  for (const CardFree& c : cards) gfree += std::max(c.cores, 0);
  for (const Shape& m : shapes_) {
    const bool cpu_ok = cpu_left >= m.cpu;
    if (m.cards == 0) {
      acc[cpu_ok ? kXLSatisfied : kXRLackCpu] += m.p * static_cast<double>(gfree);
      continue;
    }
    int accessible = 0, usable = 0;
    int64_t unusable_milli = 0;
    for (const CardFree& c : cards) {
      const bool access = m.models.empty() || std::find(m.models.begin(), m.models.end(), c.model) != m.models.end();
      accessible += access ? 1 : 0;
      bool use = access && c.cores > 0 && c.cores >= m.cores;
      if (use && uses_memory_) {
        use = c.memory_mib >= m.memory_mib + (c.total_memory_mib * m.memory_percent + 99) / 100;
      }
      if (use) {
        ++usable;
      } else {
        unusable_milli += std::max(c.cores, 0);
      }
    }
    if (accessible == 0) {
      acc[kNoAccess] += m.p * static_cast<double>(gfree);
    } else if (usable >= m.cards) {
      if (cpu_ok) {
        acc[kQ2LackGpu] += m.p * static_cast<double>(unusable_milli);
        acc[kQ3Satisfied] += m.p * static_cast<double>(gfree - unusable_milli);
      } else {
        acc[kQ4LackCpu] += m.p * static_cast<double>(gfree);
      }
    } else {
      acc[cpu_ok ? kQ2LackGpu : kQ1LackBoth] += m.p * static_cast<double>(gfree);
    }
  }
  return acc;
}

std::array<double, 7> FragmentationModel::categories(int64_t cpu_left, std::span<const CardFree> cards) {
  return accumulate(cpu_left, cards);
}

size_t FragmentationModel::KeyHash::operator()(const Key& k) const {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(k.rank) * 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < k.n; ++i) {
    h ^= k.cards[static_cast<size_t>(i)] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  }
  return static_cast<size_t>(h ^ static_cast<uint64_t>(k.n));
}

double FragmentationModel::frag(int64_t cpu_left, std::span<const CardFree> cards) {
  // F depends on the CPU only through which shapes' CPU demands it covers,
  // and on the cards only as a multiset: memoise on that canonical key.
  bool memo = cards.size() <= 16;
  Key key;
  if (memo) {
    key.rank = cpu_rank(cpu_left);
    key.n = static_cast<int>(cards.size());
    for (size_t i = 0; i < cards.size() && memo; ++i) {
      const CardFree& c = cards[i];
      if (c.model >= 4096 || c.cores < 0 || c.cores > 1023) {
        memo = false;
        break;
      }
      uint64_t packed = (uint64_t{c.model} << 52) | (static_cast<uint64_t>(c.cores) << 40);
      if (uses_memory_) {
        if (c.memory_mib < 0 || c.memory_mib >= (1 << 20) || c.total_memory_mib >= (1 << 20)) {
          memo = false;
          break;
        }
        packed |= (static_cast<uint64_t>(c.memory_mib) << 20) | static_cast<uint64_t>(c.total_memory_mib);
      }
      key.cards[i] = packed;
    }
    if (memo) std::sort(key.cards.begin(), key.cards.begin() + key.n);
  }
  if (memo) {
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
  }
  const auto acc = accumulate(cpu_left, cards);
  double f = 0;
  for (int i = 0; i < 7; ++i) {
    if (i != kQ3Satisfied) f += acc[static_cast<size_t>(i)];  // the simulator's order
  }
  if (memo) {
    if (memo_.size() > 4'000'000) memo_.clear();  // bound memory in long-running processes
    memo_.emplace(key, f);
  }
  return f;
}

double FragmentationModel::frag(const NodeState& node) {
  static thread_local std::vector<CardFree> scratch;
  cards_of(node, scratch);
  return frag(node.cpu_left(), scratch);
}

}  // namespace fracpack::scheduling
