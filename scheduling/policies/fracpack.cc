// fracpack: fragmentation-aware placement in both card dimensions.
//
// Like FGD it places a pod where the expected fragmentation of the node (the
// idle compute the target workload could not use, fragmentation.h) grows
// least, but:
//   * the score keeps full resolution instead of FGD's int(100*sigmoid(dF/1000)),
//     whose 40-milli steps make many nodes tie and leave the choice to the
//     node name;
//   * cards are usable only with the shape's memory free too, so memory-bound
//     shares fragment as they should;
//   * the target workload is learned from the pods seen (decayed), starting
//     from a given one, so the measure follows the cluster's real mix;
//   * ties in fragmentation go to the tighter fit (best fit on CPU and GPU),
//     which keeps whole idle nodes for large pods.
#include <algorithm>
#include <cmath>

#include "scheduling/policies/policies.h"

namespace fracpack::scheduling::policies {
namespace {

// Ranks candidate cards by the fragmentation left after one share on each.
class FragCardRanker : public CardRanker {
 public:
  explicit FragCardRanker(FragmentationModel& model) : model_(model) {}
  void rank(const PodRequest&, const ContainerRequest& c, const NodeState& node, std::span<const CardUse> use,
            std::span<uint8_t> cand) const override {
    std::vector<CardFree> cards;
    model_.cards_of(node, cards);
    for (size_t p = 0; p < cards.size(); ++p) {  // the tentative usage of this pod's other shares
      if (!node.cards()[p].schedulable()) continue;
      cards[p].cores = kCardMilli - use[p].cores;
      cards[p].memory_mib = node.cards()[p].memory_mib - use[p].memory_mib;
    }
    std::vector<std::pair<double, uint8_t>> scored;
    for (uint8_t p : cand) {
      CardFree saved = cards[p];
      cards[p].cores -= c.cores;
      cards[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
      scored.emplace_back(model_.frag(node.cpu_left(), cards), p);
      cards[p] = saved;
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < cand.size(); ++i) cand[i] = scored[i].second;
  }

 private:
  FragmentationModel& model_;
};

class Fracpack final : public Policy {
 public:
  explicit Fracpack(const PolicyOptions& options)
      : learn_(options.learn), learned_(options.learn_half_life),
        model_(options.workload ? *options.workload : Workload{}) {}

  std::string_view name() const override { return "fracpack"; }
  std::pair<int64_t, int64_t> score_range() const override { return {-kScale * 8000, kScale * 8000}; }
  uint64_t generation() const override { return generation_; }

  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    double before = 0, after = 0;
    if (is_single_share(pod)) {
      before = share_options(model_, pod, node, options_);
      if (options_.empty()) return false;
      const ShareOption* best = &options_[0];
      for (const ShareOption& o : options_) {
        if (o.frag_after < best->frag_after) best = &o;  // lowest index kept on ties
      }
      out.picks.size = 0;
      out.picks.push(best->pos);
      after = best->frag_after;
    } else {
      const bool whole = std::all_of(pod.containers.begin(), pod.containers.end(),
                                     [](const ContainerRequest& c) { return c.cores >= kCardMilli; });
      static const BestCardRanker kBest;
      FragCardRanker by_frag(model_);
      const CardRanker& ranker = whole ? static_cast<const CardRanker&>(kBest) : by_frag;
      if (!assign(pod, node, ranker, out.picks)) return false;
      before = model_.frag(node);
      after = frag_after(model_, pod, node, out.picks);
    }
    // Primary: fragmentation avoided, in 1/1000 milli. Secondary: tightness.
    const auto gain = static_cast<int64_t>(std::llround((before - after) * 1000.0));
    out.score = gain * kScale + tightness(pod, node);
    return true;
  }

  void observe(const PodRequest& pod) override {
    if (!learn_) return;
    learned_.observe(shape_of(pod));
    // Rebuild the measure in steps: every pod would defeat evaluation caches.
    if (learned_.observations() % kRebuildEvery == 0 || learned_.observations() == 64) {
      model_ = FragmentationModel(learned_.snapshot());
      ++generation_;
    }
  }

 private:
  static constexpr int64_t kScale = 10000;
  static constexpr uint64_t kRebuildEvery = 512;

  // 0..9999: higher when less CPU and GPU would be left idle on the node.
  static int64_t tightness(const PodRequest& pod, const NodeState& node) {
    const SimNode n = sim_node(node);
    const PodShape s = shape_of(pod);
    const double cpu_total = std::max<double>(static_cast<double>(node.spec().cpu_milli), 1);
    const double gpu_total = std::max<double>(static_cast<double>(n.gpus) * kCardMilli, 1);
    const double left = 0.5 * static_cast<double>(n.cpu_left - pod.cpu_milli) / cpu_total +
                        0.5 * static_cast<double>(n.gpu_free - int64_t{s.cores} * s.cards) / gpu_total;
    return std::clamp<int64_t>(static_cast<int64_t>((1.0 - left) * 9999), 0, 9999);
  }

  bool learn_;
  LearnedWorkload learned_;
  FragmentationModel model_;
  std::vector<ShareOption> options_;
  uint64_t generation_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_fracpack(const PolicyOptions& options) { return std::make_unique<Fracpack>(options); }

}  // namespace fracpack::scheduling::policies
