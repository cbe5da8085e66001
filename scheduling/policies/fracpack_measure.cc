#include "scheduling/policies/fracpack_measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

namespace fracpack::scheduling::policies {
namespace {

int64_t card_memory_need(int64_t mib, int percent, int64_t total) { return mib + (total * percent + 99) / 100; }

bool is_gpu_shape(const PodShape& s) { return s.cards > 0 && s.cores > 0; }

}  // namespace

FracpackMeasure::FracpackMeasure(const ShapeCounts& shapes, const Supply* supply) {
  if (shapes.total() <= 0) return;
  // Groups by per-card demand; shapes within a group by CPU and memory.
  using GroupKey = std::tuple<int, int, int64_t, int, std::string>;
  std::map<GroupKey, std::vector<Shape>> grouped;
  double sum = 0;
  for (const auto& [shape, count] : shapes.counts()) {
    if (count <= 0) continue;
    double w = count / shapes.total();
    if (!is_gpu_shape(shape)) {
      cpu_only_weight_ += w;
      weights_[shape] += w;
      sum += w;
      continue;
    }
    w /= shape.cards;
    if (supply != nullptr) {
      auto it = supply->find(shape);
      if (it != supply->end()) w *= std::pow(std::max(it->second, kMinSupply), -kSupplyExponent);
    }
    sum += w;
    weights_[shape] = w;
    const auto memory = static_cast<int64_t>(std::ceil(shapes.node_memory_mib(shape)));
    grouped[{shape.cores, shape.cards, shape.memory_mib, shape.memory_percent, shape.models}].push_back(
        Shape{shape, shape.cpu_milli, memory, shape.cards, shape.cores, w});
    uses_card_memory_ |= shape.memory_mib > 0 || shape.memory_percent > 0;
  }
  for (auto& [key, members] : grouped) {
    Group g;
    std::tie(g.cores, g.cards, g.memory_mib, g.memory_percent, std::ignore) = key;
    for (const std::string& m : split_models(std::get<4>(key))) {
      auto [it, added] = model_ids_.emplace(m, static_cast<uint16_t>(model_ids_.size() + 1));
      g.models.push_back(it->second);
    }
    g.first = shapes_.size();
    for (Shape& s : members) {
      s.weight /= sum;
      if (s.cards > 1) multi_card_.push_back(shapes_.size());
      group_of_.push_back(groups_.size());
      shapes_.push_back(s);
    }
    g.last = shapes_.size();
    groups_.push_back(std::move(g));
  }
  cpu_only_weight_ /= sum;
  for (auto& [shape, w] : weights_) w /= sum;
  groups_for_model_.assign(model_ids_.size() + 1, {});
  blocked_weight_for_model_.assign(model_ids_.size() + 1, 0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    all_groups_.push_back(g);
    double weight = 0;
    for (size_t i = groups_[g].first; i < groups_[g].last; ++i) weight += shapes_[i].weight;
    const auto& allowed = groups_[g].models;
    for (size_t m = 0; m < groups_for_model_.size(); ++m) {
      if (allowed.empty() || std::find(allowed.begin(), allowed.end(), m) != allowed.end()) {
        groups_for_model_[m].push_back(g);
      } else {
        blocked_weight_for_model_[m] += weight;
      }
    }
  }
}

uint16_t FracpackMeasure::model_id(const std::string& model) const {
  auto it = model_ids_.find(model);
  return it == model_ids_.end() ? 0 : it->second;
}

void FracpackMeasure::cards_of(const NodeState& node, std::vector<Card>& out) const {
  out.clear();
  const auto& cards = node.cards();
  for (size_t p = 0; p < cards.size(); ++p) {
    // A card serving its most sharers takes nothing more, like an unschedulable one.
    const bool open =
        cards[p].schedulable() && (cards[p].max_sharers == 0 || node.use()[p].sharers < cards[p].max_sharers);
    out.push_back(Card{open ? node.free_cores(p) : 0, open ? node.free_memory(p) : 0, cards[p].memory_mib,
                       model_ids_.empty() ? uint16_t{0} : model_id(cards[p].model)});
  }
}

template <bool kMixed>
FracpackMeasure::Fit FracpackMeasure::fit(const Group& g, std::span<const Card> cards) const {
  Fit out;
  int accessible = 0, usable_cards = 0;
  int64_t slots = 0;
  for (const Card& c : cards) {
    bool access = true;
    if constexpr (kMixed) {
      access = g.models.empty() || std::find(g.models.begin(), g.models.end(), c.model) != g.models.end();
    }
    accessible += access ? 1 : 0;
    int64_t fits = access && c.cores > 0 && c.cores >= g.cores ? (g.cards == 1 ? c.cores / g.cores : 1) : 0;
    if (fits > 0 && uses_card_memory_) {
      const int64_t need = card_memory_need(g.memory_mib, g.memory_percent, c.total_memory_mib);
      if (need > 0) fits = std::min(fits, c.memory_mib / need);
    }
    if (fits > 0) {
      ++usable_cards;
      slots += fits;
      out.usable += c.cores;
    } else {
      out.unusable += std::max(c.cores, 0);
    }
  }
  out.cards_fit = accessible > 0 && usable_cards >= g.cards;
  out.pods = g.cards == 1 ? slots : slots / g.cards;
  return out;
}

template <bool kMixed>
double FracpackMeasure::groups_frag(std::span<const size_t> groups, int64_t gfree, int64_t cpu, int64_t memory,
                                    std::span<const Card> cards) const {
  const auto idle = static_cast<double>(gfree);
  double f = 0;
  for (size_t gi : groups) {
    const Group& g = groups_[gi];
    const Fit on = fit<kMixed>(g, cards);
    const int64_t per_pod = int64_t{g.cards} * g.cores;
    for (size_t i = g.first; i < g.last; ++i) {
      const Shape& s = shapes_[i];
      const bool node_fits = cpu >= s.cpu && memory >= s.memory_mib;
      // FGD's view: the cards too small for one pod, or everything when one pod does not fit.
      const double fgd = on.cards_fit && node_fits ? static_cast<double>(on.unusable) : idle;
      // The capacity view: what as many pods as fit would leave idle.
      int64_t pods = on.pods;
      if (pods > 0 && s.cpu > 0 && pods * s.cpu > cpu) pods = cpu / s.cpu;
      if (pods > 0 && s.memory_mib > 0 && pods * s.memory_mib > memory) pods = memory / s.memory_mib;
      const double capacity = static_cast<double>(gfree - std::min(gfree, pods * per_pod));
      f += s.weight * (kFgdWeight * fgd + (1 - kFgdWeight) * capacity);
    }
  }
  return f;
}

double FracpackMeasure::compute(int64_t cpu_left, int64_t memory_left_mib, std::span<const Card> cards) const {
  int64_t gfree = 0;
  bool one_model = true;
  for (const Card& c : cards) {
    gfree += std::max(c.cores, 0);
    one_model &= c.model == cards[0].model;
  }
  if (gfree == 0) return 0;
  const int64_t cpu = std::max<int64_t>(cpu_left, 0);
  const int64_t memory = std::max<int64_t>(memory_left_mib, 0);
  if (one_model && cards[0].model < groups_for_model_.size()) {
    const uint16_t m = cards[0].model;
    return (cpu_only_weight_ + blocked_weight_for_model_[m]) * static_cast<double>(gfree) +
           groups_frag<false>(groups_for_model_[m], gfree, cpu, memory, cards);
  }
  return cpu_only_weight_ * static_cast<double>(gfree) + groups_frag<true>(all_groups_, gfree, cpu, memory, cards);
}

size_t FracpackMeasure::StateHash::operator()(const StateKey& k) const {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(k.cpu) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(k.memory) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  for (uint32_t i = 0; i < k.n; ++i) h ^= k.cards[i] * 0xBF58476D1CE4E5B9ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h ^ k.n);
}

bool FracpackMeasure::StateKey::operator==(const StateKey& o) const {
  return cpu == o.cpu && memory == o.memory && n == o.n && std::memcmp(cards.data(), o.cards.data(), n * sizeof(uint64_t)) == 0;
}

double FracpackMeasure::frag(int64_t cpu_left, int64_t memory_left_mib, std::span<const Card> cards) {
  // The measure depends on the cards only as a multiset: each card packed in
  // one word (model, free compute, free and total memory), sorted. States
  // that do not pack (very large cards, many cards) are computed each time.
  StateKey key;
  bool packs = !cards.empty() && cards.size() <= key.cards.size();
  for (size_t i = 0; packs && i < cards.size(); ++i) {
    const Card& c = cards[i];
    packs = c.model < (1 << 12) && c.cores <= 2047 && c.memory_mib >= 0 && c.memory_mib < (1 << 20) &&
            c.total_memory_mib >= 0 && c.total_memory_mib < (1 << 20);
    key.cards[i] = (uint64_t{c.model} << 51) | (static_cast<uint64_t>(std::max(c.cores, 0)) << 40) |
                   (static_cast<uint64_t>(c.memory_mib) << 20) | static_cast<uint64_t>(c.total_memory_mib);
  }
  if (!packs) return compute(cpu_left, memory_left_mib, cards);
  key.cpu = std::max<int64_t>(cpu_left, 0);
  key.memory = std::max<int64_t>(memory_left_mib, 0);
  key.n = static_cast<uint32_t>(cards.size());
  std::sort(key.cards.begin(), key.cards.begin() + key.n);
  if (auto it = remembered_.find(key); it != remembered_.end()) return it->second;
  const double f = compute(cpu_left, memory_left_mib, cards);
  if (remembered_.size() >= kMaxRemembered) remembered_.clear();  // bounded in long-running processes
  remembered_.emplace(key, f);
  return f;
}

bool FracpackMeasure::shape_fits(size_t shape, int64_t cpu_left, int64_t memory_left_mib,
                                 std::span<const Card> cards) const {
  const Shape& s = shapes_[shape];
  return cpu_left >= s.cpu && memory_left_mib >= s.memory_mib && fit<true>(groups_[group_of_[shape]], cards).cards_fit;
}

FracpackMeasure::Supply FracpackMeasure::supply(const Ledger& ledger) const {
  std::vector<double> usable(shapes_.size(), 0);
  double total = 0;
  std::vector<Card> cards;
  for (const auto& [name, node] : ledger.nodes()) {
    if (!node.present() || !node.spec().excluded.empty() || node.cards().empty()) continue;
    // The node as if empty: its schedulable cards whole.
    cards.clear();
    for (const scheduling::Card& c : node.cards()) {
      const bool open = c.schedulable();
      cards.push_back(Card{open ? kCardMilli : 0, open ? c.memory_mib : 0, c.memory_mib, model_id(c.model)});
    }
    total += static_cast<double>(kCardMilli) * static_cast<double>(cards.size());
    const int64_t cpu = node.spec().cpu_milli;
    const int64_t memory = node.spec().memory_bytes >> 20;
    for (const Group& g : groups_) {
      const Fit on = fit<true>(g, cards);
      if (!on.cards_fit || on.pods == 0) continue;
      for (size_t i = g.first; i < g.last; ++i) {
        if (cpu >= shapes_[i].cpu && memory >= shapes_[i].memory_mib) usable[i] += static_cast<double>(on.usable);
      }
    }
  }
  Supply out;
  for (size_t i = 0; i < shapes_.size(); ++i) out[shapes_[i].key] = total > 0 ? usable[i] / total : 1.0;
  return out;
}

}  // namespace fracpack::scheduling::policies
