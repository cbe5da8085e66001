// Fragmentation Gradient Descent (Weng et al., ATC'23; ../shared/reference/replay-spec.md §5.3):
// place the pod where the node's expected fragmentation grows least. Scores
// are int64(100 * sigmoid(dF / 1000)), as the simulator's FGDScore.
#include <cmath>

#include "scheduling/policies/policies.h"

namespace fracpack::scheduling::policies {

bool is_single_share(const PodRequest& pod) {
  return pod.containers.size() == 1 && !pod.containers[0].init && pod.containers[0].cards == 1 &&
         pod.containers[0].cores < kCardMilli;
}

double share_options(FragmentationModel& model, const PodRequest& pod, const NodeState& node,
                     std::vector<ShareOption>& options) {
  static thread_local std::vector<CardFree> cards;
  model.cards_of(node, cards);
  const double before = model.frag(node.cpu_left(), cards);
  options.clear();
  const ContainerRequest& c = pod.containers[0];
  const int64_t cpu_after = node.cpu_left() - pod.cpu_milli;
  for (size_t p = 0; p < cards.size(); ++p) {
    const Card& card = node.cards()[p];
    const CardUse& use = node.use()[p];
    if (!card_compatible(pod, card) || !share_fits(c, card, use)) continue;
    const int64_t mem = c.memory_on(card.memory_mib);
    CardFree saved = cards[p];
    cards[p].cores -= c.cores;
    cards[p].memory_mib -= mem;
    options.push_back(ShareOption{static_cast<uint8_t>(p), model.frag(cpu_after, cards)});
    cards[p] = saved;
  }
  return before;
}

double frag_after(FragmentationModel& model, const PodRequest& pod, const NodeState& node, const Picks& picks) {
  static thread_local std::vector<CardFree> cards;
  model.cards_of(node, cards);
  size_t k = 0;
  for (const ContainerRequest& c : pod.containers) {
    for (int i = 0; i < c.cards && k < picks.size; ++i, ++k) {
      if (c.init) continue;  // init shares are released before the app containers start
      const uint8_t p = picks.pos[k];
      cards[p].cores -= c.cores;
      cards[p].memory_mib -= c.memory_on(node.cards()[p].memory_mib);
    }
  }
  return model.frag(node.cpu_left() - pod.cpu_milli, cards);
}

namespace {

int64_t fgd_score(double before, double after) {
  const double sigmoid = 1 / (1 + std::exp(-((before - after) / 1000)));
  return static_cast<int64_t>(sigmoid * 100.0);
}

class Fgd final : public Policy {
 public:
  explicit Fgd(std::shared_ptr<const Workload> workload) : model_(*workload) {}
  std::string_view name() const override { return "fgd"; }

  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    if (is_single_share(pod)) {
      const double before = share_options(model_, pod, node, options_);
      if (options_.empty()) return false;
      bool found = false;
      for (const ShareOption& o : options_) {
        const int64_t s = fgd_score(before, o.frag_after);
        if (!found || s > out.score) {  // lowest index kept on ties
          out.score = s;
          out.picks.size = 0;
          out.picks.push(o.pos);
          found = true;
        }
      }
      return true;
    }
    // CPU-only and whole-card pods: cards "least sufficient first".
    static const BestCardRanker kBest;
    if (!assign(pod, node, kBest, out.picks)) return false;
    const double before = model_.frag(node);
    out.score = fgd_score(before, frag_after(model_, pod, node, out.picks));
    return true;
  }

 private:
  FragmentationModel model_;
  std::vector<ShareOption> options_;
};

}  // namespace

std::unique_ptr<Policy> make_fgd(std::shared_ptr<const Workload> workload) {
  return std::make_unique<Fgd>(std::move(workload));
}

}  // namespace fracpack::scheduling::policies
