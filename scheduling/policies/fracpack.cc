// fracpack: fragmentation-aware placement, measured against a target
// workload learned from the pods seen.
//
// Like FGD it places a pod where the node's fragmentation grows least, with
// three differences, each measured on the openb replay (README "Placement
// quality"):
//
//   * The measure is the mean of FGD's and a capacity-aware one
//     (FragmentationModel::Measure::kCapacity). FGD calls a card usable for
//     a shape when one pod of it fits; the capacity measure asks how much of
//     the idle compute as many pods of the shape as the node can host -
//     limited by its CPU, its cards and their memory - would use, so GPUs
//     stranded by a lack of CPU and within-card remainders count. Either
//     alone is worse on some trace; the mean is better on all.
//   * The target workload keeps every shape, not FGD's 95 % most popular:
//     the rare 2/4/8-GPU shapes are what protects idle nodes from being
//     nibbled at by single-card pods (8 000 milli lost per 8-GPU pod that
//     finds no node).
//   * The target is learned online from the pods placed (exponentially
//     decayed), starting from the given workload as a prior, so it follows
//     the cluster's real mix; and cards are usable only with the shape's
//     GPU memory free, so memory-bound shares fragment as they should.
//
// Scores keep full resolution: fragmentation avoided in 1/1000 milli.
#include <algorithm>
#include <cmath>

#include "scheduling/policies/policies.h"

namespace fracpack::scheduling::policies {
namespace {

// The blended measure: the mean of FGD's and the capacity-aware one.
class Measure {
 public:
  explicit Measure(const Workload& w)
      : fgd_(w, FragmentationModel::Measure::kFgd), capacity_(w, FragmentationModel::Measure::kCapacity) {}

  double frag(int64_t cpu_left, std::span<const CardFree> cards) {
    return 0.5 * (fgd_.frag(cpu_left, cards) + capacity_.frag(cpu_left, cards));
  }
  // Card model ids come from one of the two models: both intern the
  // workload's models first, in the same order, so those ids agree; models
  // no shape names get later ids, which no shape matches in either.
  void cards_of(const NodeState& node, std::vector<CardFree>& out) { fgd_.cards_of(node, out); }

 private:
  FragmentationModel fgd_;
  FragmentationModel capacity_;
};

// Fragmentation of `node` with `add` extra compute/memory used per card
// position and `cpu` more CPU requested.
double frag_with(Measure& m, const NodeState& node, const std::vector<CardFree>& base,
                 const std::vector<std::pair<int, int64_t>>& add, int64_t cpu) {
  static thread_local std::vector<CardFree> cards;
  cards = base;
  for (size_t p = 0; p < add.size(); ++p) {
    cards[p].cores -= add[p].first;
    cards[p].memory_mib -= add[p].second;
  }
  return m.frag(node.cpu_left() - cpu, cards);
}

// Ranks a container's candidate cards by the fragmentation left after one
// share on each (multi-card fractional containers).
class FragCardRanker : public CardRanker {
 public:
  explicit FragCardRanker(Measure& m) : m_(m) {}
  void rank(const PodRequest&, const ContainerRequest& c, const NodeState& node, std::span<const CardUse> use,
            std::span<uint8_t> cand) const override {
    std::vector<CardFree> cards;
    m_.cards_of(node, cards);
    for (size_t p = 0; p < cards.size(); ++p) {  // include this pod's shares picked so far
      if (!node.cards()[p].schedulable()) continue;
      cards[p].cores = kCardMilli - use[p].cores;
      cards[p].memory_mib = node.cards()[p].memory_mib - use[p].memory_mib;
    }
    std::vector<std::pair<double, uint8_t>> scored;
    for (uint8_t p : cand) {
      const CardFree saved = cards[p];
      cards[p].cores -= c.cores;
      cards[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
      scored.emplace_back(m_.frag(node.cpu_left(), cards), p);
      cards[p] = saved;
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < cand.size(); ++i) cand[i] = scored[i].second;
  }

 private:
  Measure& m_;
};

class Fracpack final : public Policy {
 public:
  explicit Fracpack(const PolicyOptions& options)
      : learn_(options.learn),
        learned_(options.learn_half_life),
        measure_(options.workload ? Workload::typical(*options.workload, 100) : Workload{}) {
    if (options.workload) learned_.seed(*options.workload, options.prior_weight);
  }

  std::string_view name() const override { return "fracpack"; }
  std::pair<int64_t, int64_t> score_range() const override { return {-8'000'000, 8'000'000}; }
  uint64_t generation() const override { return generation_; }

  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    std::vector<CardFree>& base = base_;
    measure_.cards_of(node, base);
    const double before = measure_.frag(node.cpu_left(), base);
    double after = 0;
    if (is_single_share(pod)) {
      // One share: try every card that takes it; the least fragmenting wins
      // (the lowest index on ties).
      const ContainerRequest& c = pod.containers[0];
      bool found = false;
      std::vector<std::pair<int, int64_t>> add(base.size());
      for (size_t p = 0; p < base.size(); ++p) {
        const Card& card = node.cards()[p];
        const int64_t mem = c.memory_on(card.memory_mib);
        if (!card_compatible(pod, card) || !share_fits(c, card, node.use()[p])) continue;
        add[p] = {c.cores, mem};
        const double f = frag_with(measure_, node, base, add, pod.cpu_milli);
        add[p] = {0, 0};
        if (!found || f < after) {
          found = true;
          after = f;
          out.picks.size = 0;
          out.picks.push(static_cast<int>(p));
        }
      }
      if (!found) return false;
    } else {
      // Whole cards: the fullest-first ranker gives the lowest free indices;
      // fractional multi-card containers rank cards by fragmentation.
      const bool whole = std::all_of(pod.containers.begin(), pod.containers.end(),
                                     [](const ContainerRequest& c) { return c.cores >= kCardMilli; });
      static const BestCardRanker kBest;
      FragCardRanker by_frag(measure_);
      if (!assign(pod, node, whole ? static_cast<const CardRanker&>(kBest) : by_frag, out.picks)) return false;
      std::vector<std::pair<int, int64_t>> add(base.size());
      size_t k = 0;
      for (const ContainerRequest& c : pod.containers) {
        for (int i = 0; i < c.cards; ++i, ++k) {
          if (c.init) continue;  // init shares are released before the app containers start
          const uint8_t p = out.picks.pos[k];
          add[p].first += c.cores;
          add[p].second += c.memory_on(node.cards()[p].memory_mib);
        }
      }
      after = frag_with(measure_, node, base, add, pod.cpu_milli);
    }
    out.score = static_cast<int64_t>(std::llround((before - after) * 1000.0));
    return true;
  }

  void observe(const PodRequest& pod) override {
    if (!learn_) return;
    learned_.observe(shape_of(pod));
    // Rebuild the measure in steps: a new target on every pod would defeat
    // the evaluation caches and barely change the decisions.
    if (learned_.observations() % kRebuildEvery == 0) {
      measure_ = Measure(learned_.snapshot());
      ++generation_;
    }
  }

 private:
  static constexpr uint64_t kRebuildEvery = 512;

  bool learn_;
  LearnedWorkload learned_;
  Measure measure_;
  std::vector<CardFree> base_;
  uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_fracpack(const PolicyOptions& options) { return std::make_unique<Fracpack>(options); }

}  // namespace fracpack::scheduling::policies
