// fracpack: place a pod where the node's fragmentation grows least, against a
// target workload learned from the pods that arrive (fracpack_measure.h says
// what the measure counts and why). Like FGD, with its own measure and a
// target that follows the cluster's real mix.
//
// Scores are the fragmentation avoided in steps of kScoreResolution (50
// milli, 5 % of a card): differences below that are within the measure's
// error, and nodes that tie go to the first in a fixed order (the replay's
// node order; the extender ranks the first by name alone best). That packs
// pods onto the same nodes and keeps the others whole for pods that need
// them. FGD gets the same from its integer sigmoid; scores at full
// resolution spread pods by meaningless differences and failed 8-card pods
// at 80 % load that FGD places (README "Placement quality": 20, 50 and 100
// milli measured; 50 is the middle of the plateau).
//
// Card pairing (card_prices.h). A share's card is judged also by what it
// does to the card's best completion under the mix: the cutting-stock LP's
// prices of the learned shares say which shares belong together (a 320
// beside a 650, two 470s), and a share that spoils a card's best completion
// (a 320 beside a 470, leaving 210 that only the rare small shares fill)
// costs kPairingWeight x its regret, in milli of fragmentation. FGD's
// measure, and ours alone, see the cluster as it is; this is where it ends
// up when full (docs/packing-floor.md).
#include <algorithm>
#include <cmath>

#include "scheduling/policies/card_prices.h"
#include "scheduling/policies/fracpack_measure.h"
#include "scheduling/policies/policies.h"

namespace fracpack::scheduling::policies {
namespace {

using MeasureCard = FracpackMeasure::Card;

int64_t memory_mib(int64_t bytes) { return bytes >> 20; }

// Ranks a container's candidate cards by the fragmentation left after one
// share on each (multi-card fractional containers).
class FragCardRanker : public CardRanker {
 public:
  explicit FragCardRanker(FracpackMeasure& m) : m_(m) {}
  void rank(const PodRequest& pod, const ContainerRequest& c, const NodeState& node, std::span<const CardUse> use,
            std::span<uint8_t> cand) const override {
    std::vector<MeasureCard> cards;
    m_.cards_of(node, cards);
    for (size_t p = 0; p < cards.size(); ++p) {  // include this pod's shares picked so far
      if (!node.cards()[p].schedulable()) continue;
      cards[p].cores = kCardMilli - use[p].cores;
      cards[p].memory_mib = node.cards()[p].memory_mib - use[p].memory_mib;
    }
    const int64_t cpu = node.cpu_left() - pod.cpu_milli;
    const int64_t memory = memory_mib(node.memory_left() - pod.memory_bytes);
    std::vector<std::pair<double, uint8_t>> scored;
    for (uint8_t p : cand) {
      const MeasureCard saved = cards[p];
      cards[p].cores -= c.cores;
      cards[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
      scored.emplace_back(m_.frag(cpu, memory, cards), p);
      cards[p] = saved;
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < cand.size(); ++i) cand[i] = scored[i].second;
  }

 private:
  FracpackMeasure& m_;
};

// Total variation distance between two sets of shape weights (each summing to 1).
double drift(const std::map<PodShape, double>& a, const std::map<PodShape, double>& b) {
  double d = 0;
  auto ia = a.begin(), ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      d += ia->second;
      ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      d += ib->second;
      ++ib;
    } else {
      d += std::abs(ia->second - ib->second);
      ++ia;
      ++ib;
    }
  }
  return d / 2;
}

class Fracpack final : public Policy {
 public:
  explicit Fracpack(const PolicyOptions& options) : learn_(options.learn), learned_(options.learn_half_life) {
    if (options.workload) {
      learned_.seed(*options.workload, options.prior_weight);
      target_ = *options.workload;
    }
    measure_ = FracpackMeasure(target_, nullptr);
    prices_ = prices_of(target_);
  }

  std::string_view name() const override { return "fracpack"; }
  std::pair<int64_t, int64_t> score_range() const override { return {-160'000, 160'000}; }
  uint64_t generation() const override { return generation_; }

  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    measure_.cards_of(node, base_);
    const double before = before_of(node);
    const int64_t cpu = node.cpu_left() - pod.cpu_milli;
    const int64_t memory = memory_mib(node.memory_left() - pod.memory_bytes);
    double after = 0;
    if (is_single_share(pod)) {
      // One share: try every card that takes it (cards in the same state
      // once); the least fragmenting wins, the lowest index on ties.
      const ContainerRequest& c = pod.containers[0];
      bool found = false;
      tried_.clear();
      for (size_t p = 0; p < base_.size(); ++p) {
        const Card& card = node.cards()[p];
        if (!card_compatible(pod, card) || !share_fits(c, card, node.use()[p])) continue;
        if (std::find(tried_.begin(), tried_.end(), base_[p]) != tried_.end()) continue;
        tried_.push_back(base_[p]);
        const MeasureCard saved = base_[p];
        base_[p].cores -= c.cores;
        base_[p].memory_mib -= c.memory_on(card.memory_mib);
        const double f = measure_.frag(cpu, memory, base_) +
                         kPairingWeight * kCardMilli * prices_.regret(saved.cores, c.cores);
        base_[p] = saved;
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
      const FragCardRanker by_frag(measure_);
      if (!assign(pod, node, whole ? static_cast<const CardRanker&>(kBest) : by_frag, out.picks)) return false;
      size_t k = 0;
      for (const ContainerRequest& c : pod.containers) {
        for (int i = 0; i < c.cards; ++i, ++k) {
          if (c.init) continue;  // init shares are released before the app containers start
          const uint8_t p = out.picks.pos[k];
          base_[p].cores -= c.cores;
          base_[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
        }
      }
      after = measure_.frag(cpu, memory, base_);
    }
    out.score = static_cast<int64_t>(std::floor((before - after) / kScoreResolution));
    return true;
  }

  void observe(const PodRequest& pod, const Ledger& cluster) override {
    if (learn_) learned_.observe(shape_of(pod), static_cast<double>(node_memory_mib(pod)));
    // Every so many arrivals (and before the first judgement), the weights
    // the measure would have now (the learned mix, the shapes' supply on the
    // nodes as they are) replace the ones it has once they differ by more
    // than noise: a new measure on every pod would defeat the evaluation
    // caches and barely change the decisions.
    if (arrivals_++ % kCheckEvery != 0) return;
    ShapeCounts target = learn_ ? learned_.snapshot() : target_;
    // Supply depends on the nodes' capacities only: kept per shape until they change.
    if (cluster.capacity_stamp() != supply_stamp_) {
      supply_.clear();
      supply_stamp_ = cluster.capacity_stamp();
    }
    ShapeCounts missing;
    for (const auto& [shape, count] : target.counts()) {
      if (!supply_.count(shape)) missing.add(shape, count, target.node_memory_mib(shape));
    }
    if (!missing.empty()) supply_.merge(FracpackMeasure(missing, nullptr).supply(cluster));
    FracpackMeasure next(target, &supply_);
    if (generation_ > 0 && drift(next.weights(), measure_.weights()) < kRebuildDrift) return;
    measure_ = std::move(next);
    target_ = std::move(target);
    prices_ = prices_of(target_);
    ++generation_;
    before_.clear();
  }

 private:
  // The shares' demand per size (cards x weight) for the pairing prices.
  static CardPrices prices_of(const ShapeCounts& shapes) {
    std::map<int, double> demand;
    for (const auto& [shape, count] : shapes.counts()) {
      if (shape.cards > 0 && shape.cores > 0 && shape.cores < kCardMilli) demand[shape.cores] += count * shape.cards;
    }
    return CardPrices(demand);
  }

  static constexpr double kScoreResolution = 50;  // milli of fragmentation per score step
  // Milli of fragmentation per milli of a card's best completion lost
  // (README "Placement quality": 1, 3, 10 and 30 measured; from 10 on the
  // pairing decides whenever it prefers a card, and the measure breaks its ties).
  static constexpr double kPairingWeight = 10;
  static constexpr uint64_t kCheckEvery = 256;
  // Total variation distance between the weights the measure has and those
  // it would have now that rebuilds it: a mix drawn from a fixed one drifts
  // about 0.03 on the openb traces (sampling noise).
  static constexpr double kRebuildDrift = 0.15;

  // The node's fragmentation as it is, remembered per node version.
  double before_of(const NodeState& node) {
    if (node.version() == 0) return measure_.frag(node.cpu_left(), memory_mib(node.memory_left()), base_);
    if (before_.size() <= node.slot()) before_.resize(node.slot() + 1);
    auto& [version, frag] = before_[node.slot()];
    if (version != node.version()) {
      version = node.version();
      frag = measure_.frag(node.cpu_left(), memory_mib(node.memory_left()), base_);
    }
    return frag;
  }

  bool learn_;
  LearnedWorkload learned_;
  ShapeCounts target_;  // what the measure was built from
  FracpackMeasure measure_;
  uint64_t generation_ = 0;
  uint64_t arrivals_ = 0;
  FracpackMeasure::Supply supply_;  // by shape, for the nodes' capacities at supply_stamp_
  uint64_t supply_stamp_ = 0;
  CardPrices prices_;  // of target_'s shares
  std::vector<MeasureCard> base_, tried_;
  std::vector<std::pair<uint64_t, double>> before_;  // by node slot: (version, fragmentation)
};

}  // namespace

std::unique_ptr<Policy> make_fracpack(const PolicyOptions& options) { return std::make_unique<Fracpack>(options); }

}  // namespace fracpack::scheduling::policies
