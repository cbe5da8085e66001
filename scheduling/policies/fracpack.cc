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
// Two terms are added to the fragmentation a placement leaves, both in its
// milli (docs/packing-floor.md has what each bought):
//
//   * Card completions (card_prices.h). The cutting-stock LP's prices of
//     the learned shares say which shares belong together (a 320 beside a
//     650, two 470s) and what a card's best completion is worth. A pod pays
//     kPairingWeight x what it costs the node's completions: a share what
//     it spoils of its card's (a 320 beside a 470 leaves 210 that only the
//     rare small shares fill), and every pod what its CPU and memory leave
//     the other cards (a completion counts only shares the node still has
//     room for: a 470 asking all of a one-card node's CPU leaves 530 to
//     nobody). FGD's measure, and ours alone, see the cluster as it is;
//     this is where it ends up when full.
//   * Whole nodes for multi-card pods (Reserve). A GPU pod that closes a
//     node to a multi-card shape (it fits there before the pod, not after)
//     costs the shape's weight x its cards x 1000 x (s - 1), s the scarcity
//     of the nodes it fits now: the GPUs on nodes it fits when empty over
//     those on nodes it fits now, rounded to a power of 4 (so nothing until
//     half of them are gone, and the caches keep across small moves). The
//     measure weighs shapes by arrivals over cards, so rare 8-card pods
//     weigh nothing while plenty of nodes are whole; with departures at
//     80 % load they then waited for a whole node that FGD's packing had
//     kept. CPU-only pods are left to the measure: kept off the last whole
//     nodes, they took the CPU of nodes whose cards then stranded (cpu40).
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

// Which nodes still take each multi-card shape of the measure, kept up to
// date from the ledger's change journal, and what closing one costs.
class Reserve {
 public:
  // Follows the cluster; true when the costs changed. `rebuilt`: the measure
  // is new (its shapes may be).
  bool update(const FracpackMeasure& m, const Ledger& cluster, bool rebuilt) {
    const std::vector<size_t>& multi = m.multi_card_shapes();
    if (multi.empty()) {
      const bool changed = !cost_.empty();
      cost_.clear();
      stamp_ = 0;
      return changed;
    }
    std::vector<uint32_t>& slots = changed_;
    slots.clear();
    if (rebuilt || cluster.layout() != layout_ || cluster.capacity_stamp() != capacity_ || stamp_ == 0 ||
        !cluster.changed_since(stamp_, slots)) {
      rescan(m, cluster);
    } else {
      std::sort(slots.begin(), slots.end());
      slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
      for (uint32_t slot : slots) {
        if (slot < nodes_.size() && nodes_[slot] != nullptr) refresh(m, slot);
      }
    }
    stamp_ = cluster.change_stamp();
    std::vector<double> next(multi.size(), 0);
    for (size_t i = 0; i < multi.size(); ++i) {
      const double scarcity = all_[i] / std::max(now_[i], 1.0);
      const double rounded = std::pow(4.0, std::round(std::log(std::max(scarcity, 1.0)) / std::log(4.0)));
      next[i] = m.shape_weight(multi[i]) * m.shape_cards(multi[i]) * kCardMilli * (rounded - 1);
    }
    if (next == cost_) return false;
    cost_ = std::move(next);
    return true;
  }

  bool active() const {
    return std::any_of(cost_.begin(), cost_.end(), [](double c) { return c > 0; });
  }

  // The cost of taking a node from (cpu0, memory0, before) to (cpu1, memory1, after).
  double cost(const FracpackMeasure& m, int64_t cpu0, int64_t memory0, std::span<const FracpackMeasure::Card> before,
              int64_t cpu1, int64_t memory1, std::span<const FracpackMeasure::Card> after) const {
    double c = 0;
    const std::vector<size_t>& multi = m.multi_card_shapes();
    for (size_t i = 0; i < cost_.size(); ++i) {
      if (cost_[i] > 0 && m.shape_fits(multi[i], cpu0, memory0, before) &&
          !m.shape_fits(multi[i], cpu1, memory1, after)) {
        c += cost_[i];
      }
    }
    return c;
  }

 private:
  void rescan(const FracpackMeasure& m, const Ledger& cluster) {
    const size_t shapes = m.multi_card_shapes().size();
    nodes_.assign(cluster.slot_bound(), nullptr);
    fits_.assign(cluster.slot_bound() * shapes, 0);
    all_.assign(shapes, 0);
    now_.assign(shapes, 0);
    for (const auto& [name, node] : cluster.nodes()) {
      if (!node.present() || !node.spec().excluded.empty() || node.cards().empty()) continue;
      nodes_[node.slot()] = &node;
      // The node as if empty: its schedulable cards whole.
      m.cards_of(node, cards_);
      for (size_t p = 0; p < cards_.size(); ++p) {
        const bool open = node.cards()[p].schedulable();
        cards_[p].cores = open ? kCardMilli : 0;
        cards_[p].memory_mib = open ? node.cards()[p].memory_mib : 0;
      }
      for (size_t i = 0; i < shapes; ++i) {
        if (m.shape_fits(m.multi_card_shapes()[i], node.spec().cpu_milli, node.spec().memory_bytes >> 20, cards_)) {
          all_[i] += static_cast<double>(node.cards().size());
        }
      }
      refresh(m, node.slot());
    }
    layout_ = cluster.layout();
    capacity_ = cluster.capacity_stamp();
  }

  // Whether each shape fits the node in this slot now.
  void refresh(const FracpackMeasure& m, uint32_t slot) {
    const NodeState& node = *nodes_[slot];
    const std::vector<size_t>& multi = m.multi_card_shapes();
    m.cards_of(node, cards_);
    const auto gpus = static_cast<double>(node.cards().size());
    for (size_t i = 0; i < multi.size(); ++i) {
      const char fits = m.shape_fits(multi[i], node.cpu_left(), node.memory_left() >> 20, cards_) ? 1 : 0;
      char& was = fits_[slot * multi.size() + i];
      now_[i] += (fits - was) * gpus;
      was = fits;
    }
  }

  std::vector<double> cost_;             // per multi-card shape: milli per node closed to it
  std::vector<const NodeState*> nodes_;  // by slot: the nodes counted
  std::vector<char> fits_;               // by slot x shape: it fits there now
  std::vector<double> all_, now_;        // per shape: GPUs on nodes it fits when empty, now
  uint64_t layout_ = 0, capacity_ = 0, stamp_ = 0;
  std::vector<FracpackMeasure::Card> cards_;
  std::vector<uint32_t> changed_;
};

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
    const bool reserve = pod.wants_gpu() && reserve_.active();
    if (reserve) before_cards_ = base_;
    double after = 0;
    // The pod's cost to the node's best completions (card_prices.h), in
    // cards: sum over the cards it does not take of V_before(f) - V_after(f)
    // (V over the share sizes the node's CPU and memory take before and
    // after the pod), plus for a share on a card with F free
    // V_before(F) - V_after(F - u) - y_u, what it spoils of its card's.
    const std::vector<double>& before_values =
        prices_.values(prices_.fitting(node.cpu_left(), memory_mib(node.memory_left())));
    const std::vector<double>& after_values = prices_.values(prices_.fitting(cpu, memory));
    if (is_single_share(pod)) {
      // One share: try every card that takes it (cards in the same state
      // once); the least fragmenting wins, the lowest index on ties. The
      // loss to completions is `lost` over all cards, less the card's own
      // V_before(F) - V_after(F), plus its share's term.
      double lost = 0;
      for (const MeasureCard& card : base_) {
        lost += before_values[static_cast<size_t>(card.cores)] - after_values[static_cast<size_t>(card.cores)];
      }
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
        // The loss to the node's completions: every card's to the CPU and
        // memory taken, this card's to the share (telescoped, see below).
        const double loss = lost + after_values[static_cast<size_t>(saved.cores)] -
                            after_values[static_cast<size_t>(saved.cores - c.cores)] - prices_.price(c.cores);
        const double f = measure_.frag(cpu, memory, base_) + kPairingWeight * kCardMilli * std::max(loss, 0.0);
        base_[p] = saved;
        if (!found || f < after) {
          found = true;
          after = f;
          out.picks.size = 0;
          out.picks.push(static_cast<int>(p));
        }
      }
      if (!found) return false;
      if (reserve) {
        const uint8_t p = out.picks.pos[0];
        base_[p].cores -= c.cores;
        base_[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
      }
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
      // The cards it takes are its own (whole cards are worth what they
      // hold); the others lose what the CPU and memory it takes leave no
      // room for.
      const std::span<const uint8_t> taken = out.picks.view();
      double lost = 0;
      for (size_t q = 0; q < base_.size(); ++q) {
        if (std::find(taken.begin(), taken.end(), q) != taken.end()) continue;
        lost += before_values[static_cast<size_t>(base_[q].cores)] - after_values[static_cast<size_t>(base_[q].cores)];
      }
      after += kPairingWeight * kCardMilli * lost;
    }
    if (reserve) {
      after += reserve_.cost(measure_, node.cpu_left(), memory_mib(node.memory_left()), before_cards_, cpu, memory, base_);
    }
    out.score = static_cast<int64_t>(std::floor((before - after) / kScoreResolution));
    return true;
  }

  void observe(const PodRequest& pod, const Ledger& cluster) override {
    if (learn_) learned_.observe(shape_of(pod), static_cast<double>(node_memory_mib(pod)));
    const bool rebuilt = arrivals_++ % kCheckEvery == 0 && rebuild(cluster);
    if (reserve_.update(measure_, cluster, rebuilt) && !rebuilt) ++generation_;
  }

 private:
  // Every so many arrivals (and before the first judgement), the weights
  // the measure would have now (the learned mix, the shapes' supply on the
  // nodes as they are) replace the ones it has once they differ by more
  // than noise: a new measure on every pod would defeat the evaluation
  // caches and barely change the decisions. True when it was rebuilt.
  bool rebuild(const Ledger& cluster) {
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
    if (generation_ > 0 && drift(next.weights(), measure_.weights()) < kRebuildDrift) return false;
    measure_ = std::move(next);
    target_ = std::move(target);
    prices_ = prices_of(target_);
    ++generation_;
    before_.clear();
    return true;
  }

  // The shares' demand per size (cards x weight) for the pairing prices.
  static CardPrices prices_of(const ShapeCounts& shapes) {
    std::map<int, double> demand;
    std::map<int, CardPrices::Needs> needs;
    for (const auto& [shape, count] : shapes.counts()) {
      if (shape.cards == 0 || shape.cores <= 0 || shape.cores >= kCardMilli || count <= 0) continue;
      demand[shape.cores] += count * shape.cards;
      const auto memory = static_cast<int64_t>(shapes.node_memory_mib(shape));
      auto [it, added] = needs.emplace(shape.cores, CardPrices::Needs{shape.cpu_milli, memory});
      if (!added) {
        it->second.cpu_milli = std::min(it->second.cpu_milli, shape.cpu_milli);
        it->second.memory_mib = std::min(it->second.memory_mib, memory);
      }
    }
    return CardPrices(demand, needs);
  }

  static constexpr double kScoreResolution = 50;  // milli of fragmentation per score step
  // Milli of fragmentation per milli of the cards' best completions lost
  // (README "Placement quality": 1, 3, 10 and 30 measured; from 10 on the
  // completions decide whenever they prefer a card, and the measure breaks
  // their ties).
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
  Reserve reserve_;
  std::vector<MeasureCard> base_, tried_, before_cards_;
  std::vector<std::pair<uint64_t, double>> before_;  // by node slot: (version, fragmentation)
};

}  // namespace

std::unique_ptr<Policy> make_fracpack(const PolicyOptions& options) { return std::make_unique<Fracpack>(options); }

}  // namespace fracpack::scheduling::policies
