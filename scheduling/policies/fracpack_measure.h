// fracpack's fragmentation measure of a node: the idle GPU compute that the
// target workload's pods could not use there, weighted by how much each pod
// shape matters. What it counts, and why (each measured on the openb traces
// and the mixes built from them, README "Placement quality"):
//
//   * Two views of "could not use", blended 0.7 : 0.3. FGD's (the paper's):
//     a card is usable by a shape when one pod of it fits, and a node that
//     lacks the shape's CPU counts all its idle GPU. And a capacity view: how
//     much of the idle compute as many pods of the shape as the node can
//     still host would use, limited by its cards, their memory, its CPU and
//     its memory; so within-card remainders and GPUs stranded by CPU count.
//   * Node memory, which FGD leaves out: a 1-GPU pod of the openb trace asks
//     48 GiB, a G2 node has 8 x 48 GiB, and CPU-only pods placed there strand
//     its cards for lack of memory, not CPU (most 1-GPU failures on the traces).
//   * Every shape, weighted by how often it arrives (FGD keeps the 95 % most
//     frequent), and
//       - divided by its card count: a k-card shape's unusable compute is up
//         to k cards of one pod's worth, and counting it whole made the
//         measure hoard idle nodes for rare 8-card pods at the cost of the
//         1-card pods that are most of the demand (2-9 % more unallocated GPU
//         than FGD on the multi-card mixes);
//       - multiplied by (its supply)^-1/2, its supply being the share of the
//         cluster's GPUs on nodes that could take one of its pods (Supply):
//         a shape few nodes can take (a card model, a big CPU or memory
//         request) loses more when one of them goes to a pod that could have
//         gone anywhere (up to 21 % more unallocated GPU than FGD on the
//         gpu_spec mixes without it).
//
// Pure and deterministic. frag() is the hot path of every evaluation: node
// states repeat (idle nodes of one kind, the same card left after a pod), so
// results are remembered per state.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/ledger.h"
#include "scheduling/workload.h"

namespace fracpack::scheduling::policies {

class FracpackMeasure {
 public:
  static constexpr double kFgdWeight = 0.7;      // FGD's view : the capacity view = 0.7 : 0.3
  static constexpr double kSupplyExponent = 0.5;  // weight x supply^-0.5
  static constexpr double kMinSupply = 1e-3;      // a shape no node can take weighs as one 0.1 % can

  // Each GPU shape's supply: the share of the cluster's GPU compute on nodes
  // that could take one of its pods when empty (cards of an allowed model
  // with its memory, the node's CPU and memory).
  using Supply = std::map<PodShape, double>;

  FracpackMeasure() = default;
  // `shapes`: the target workload (counts or decayed weights). `supply`:
  // null weighs every shape as if it could go anywhere.
  FracpackMeasure(const ShapeCounts& shapes, const Supply* supply);

  // The supply of this measure's shapes on the ledger's nodes.
  Supply supply(const Ledger& ledger) const;

  // One card as the measure sees it.
  struct Card {
    int cores = 0;             // free compute, milli (0 when it takes nothing more)
    int64_t memory_mib = 0;    // free memory
    int64_t total_memory_mib = 0;
    uint16_t model = 0;        // interned model id (0: no shape names it)
    bool operator==(const Card&) const = default;
  };

  // The measure's view of a node's cards (out is cleared first).
  void cards_of(const NodeState& node, std::vector<Card>& out) const;
  // Fragmentation, milli of GPU compute, for a node with these cards and
  // this much CPU and memory left. Not thread-safe (remembers results).
  double frag(int64_t cpu_left, int64_t memory_left_mib, std::span<const Card> cards);

  // The GPU shapes of more than one card (fracpack.cc keeps nodes whole for
  // them when few are left), each by its index among the GPU shapes.
  const std::vector<size_t>& multi_card_shapes() const { return multi_card_; }
  // A GPU shape's weight in the measure and its cards.
  double shape_weight(size_t shape) const { return shapes_[shape].weight; }
  int shape_cards(size_t shape) const { return shapes_[shape].cards; }
  // Whether one pod of a GPU shape fits a node with these cards, this much
  // CPU and memory left.
  bool shape_fits(size_t shape, int64_t cpu_left, int64_t memory_left_mib, std::span<const Card> cards) const;

  // The shapes' weights (sum 1 over GPU and CPU-only shapes), for reports,
  // tests and deciding when a new target is worth a rebuild.
  const std::map<PodShape, double>& weights() const { return weights_; }

 private:
  // What a group of shapes with the same per-card demand asks of a card.
  struct Group {
    int cores = 0;
    int cards = 0;
    int64_t memory_mib = 0;
    int memory_percent = 0;
    std::vector<uint16_t> models;  // empty: any
    size_t first = 0, last = 0;    // its shapes in shapes_
  };
  struct Shape {
    PodShape key;
    int64_t cpu = 0;
    int64_t memory_mib = 0;
    int cards = 0;
    int cores = 0;
    double weight = 0;
  };
  // What one group finds on a node's cards.
  struct Fit {
    bool cards_fit = false;  // one pod's cards are there
    int64_t unusable = 0;    // idle milli on cards it cannot use
    int64_t usable = 0;      // idle milli on cards it can use
    int64_t pods = 0;        // pods the cards alone could take
  };
  uint16_t model_id(const std::string& model) const;
  template <bool kMixed>
  Fit fit(const Group& g, std::span<const Card> cards) const;
  template <bool kMixed>
  double groups_frag(std::span<const size_t> groups, int64_t gfree, int64_t cpu, int64_t memory,
                     std::span<const Card> cards) const;
  double compute(int64_t cpu_left, int64_t memory_left_mib, std::span<const Card> cards) const;

  std::vector<Group> groups_;
  std::vector<Shape> shapes_;   // GPU shapes, by group
  std::vector<size_t> group_of_;   // per GPU shape
  std::vector<size_t> multi_card_;  // GPU shapes of more than one card
  double cpu_only_weight_ = 0;  // CPU-only shapes count every idle milli
  bool uses_card_memory_ = false;
  std::unordered_map<std::string, uint16_t> model_ids_;
  std::map<PodShape, double> weights_;
  // Per model id (0: a model no shape names): the groups whose pods can use
  // such a card, and the weight of those that cannot (they count every idle
  // milli). Most nodes have cards of one model, and a constrained workload
  // has many groups only a few models serve: this skips the rest.
  std::vector<std::vector<size_t>> groups_for_model_;
  std::vector<double> blocked_weight_for_model_;
  std::vector<size_t> all_groups_;

  // Results by node state: CPU and memory left, and the cards as a multiset.
  struct StateKey {
    int64_t cpu = 0;
    int64_t memory = 0;
    uint32_t n = 0;
    std::array<uint64_t, 16> cards;  // the first n are the state
    bool operator==(const StateKey& o) const;
  };
  struct StateHash {
    size_t operator()(const StateKey& k) const;
  };
  static constexpr size_t kMaxRemembered = 1 << 20;
  std::unordered_map<StateKey, double, StateHash> remembered_;
};

}  // namespace fracpack::scheduling::policies
