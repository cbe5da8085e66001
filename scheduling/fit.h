// Feasibility and card assignment: does a pod fit a node's cards under all its
// constraints, and if so which cards does each container get? Exact: a node is
// rejected only when no assignment exists (for several GPU containers this is
// a bounded search, see kSearchBudget), and every rejection carries a reason.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "scheduling/ledger.h"
#include "scheduling/model.h"

namespace fracpack::scheduling {

// Card positions chosen for a pod, container after container in
// pod.containers order (container i takes pod.containers[i].cards entries).
struct Picks {
  static constexpr size_t kMax = 64;  // the contract caps a pod at 64 card shares
  std::array<uint8_t, kMax> pos{};
  uint8_t size = 0;

  void push(int p) { pos[size++] = static_cast<uint8_t>(p); }
  std::span<const uint8_t> view() const { return {pos.data(), size}; }
};

// Orders the candidate cards of one container, best first. `use` is the
// node's usage with the shares already picked for this pod added.
class CardRanker {
 public:
  virtual ~CardRanker() = default;
  virtual void rank(const PodRequest& pod, const ContainerRequest& container, const NodeState& node,
                    std::span<const CardUse> use, std::span<uint8_t> candidates) const = 0;
};

// "best": least free compute left after the share first, then least free
// memory, then the lowest index (the FGD simulator's `best`; bin-packs cards).
class BestCardRanker : public CardRanker {
 public:
  void rank(const PodRequest& pod, const ContainerRequest& container, const NodeState& node,
            std::span<const CardUse> use, std::span<uint8_t> candidates) const override;
};

// Lowest index first.
class IndexCardRanker : public CardRanker {
 public:
  void rank(const PodRequest&, const ContainerRequest&, const NodeState&, std::span<const CardUse>,
            std::span<uint8_t> candidates) const override;
};

struct FitOptions {
  // Check the node's CPU and memory too. The replay needs it; behind
  // kube-scheduler, NodeResourcesFit has already done it.
  bool check_node_resources = true;
};

struct FitResult {
  bool fits = false;
  bool unresolvable = false;  // no card of the node could ever fit (model, size, count)
  std::string reason;         // why not, when !fits
  Picks picks;                // the assignment found, when fits
};

// Can this card ever serve the pod (model, UUID lists)? Ignores usage and health.
// Inline because every policy asks it per card per node: most pods name no
// model or UUID, and they pay one test.
bool card_matches_lists(const PodRequest& pod, const Card& card);
inline bool card_compatible(const PodRequest& pod, const Card& card) {
  if (pod.allowed_models.empty() && pod.excluded_models.empty() && pod.uuid_allow.empty() &&
      pod.uuid_exclude.empty()) {
    return true;
  }
  return card_matches_lists(pod, card);
}

// Does one share of `c` fit beside `use` on this card: compute and memory
// free, the card's sharer limit, and a share that must be alone. The card's
// capacity rule, one home: placements (share_fits) and the node agent's own
// account of what its pods hold (node/devices_and_pods.cc) both ask it.
inline bool share_within_capacity(const ContainerRequest& c, const Card& card, const CardUse& use) {
  return use.cores < kCardMilli && kCardMilli - use.cores >= c.cores && card.memory_mib - use.memory_mib >= c.memory_on(card.memory_mib) &&
         (card.max_sharers == 0 || use.sharers < card.max_sharers) && (!c.alone || use.sharers == 0);
}

// Can one share of `c` go on this card now: schedulable, within its
// capacity (above), and a share that must be enforced on a card that
// enforces it. The one rule every policy's card choice follows; inline
// because it is the innermost test of every placement.
inline bool share_fits(const ContainerRequest& c, const Card& card, const CardUse& use) {
  return card.schedulable() && share_within_capacity(c, card, use) && (!c.needs_enforcement || card.enforces_shares());
}

// The node's kubelet (before 1.31) refuses this pod at admission: an init
// container names share resources the node does not have (kubernetes#124255).
bool kubelet_refuses(const PodRequest& pod, const NodeState& node);

// Full check with the reason; the picks follow `ranker`.
FitResult explain_fit(const PodRequest& pod, const NodeState& node, const FitOptions& options, const CardRanker& ranker);

// The same answer as explain_fit(...).fits, without building reasons or picks when the
// pod has a single GPU container (the common case): the replay's hot path.
bool fits(const PodRequest& pod, const NodeState& node, const FitOptions& options);

// Assigns cards following `ranker`; false when no assignment exists.
bool assign(const PodRequest& pod, const NodeState& node, const CardRanker& ranker, Picks& out);

// The allocation record of an assignment.
Allocation materialize(const PodRequest& pod, const NodeState& node, const Picks& picks);

// Maximum number of search steps for pods with several GPU containers.
inline constexpr int kSearchBudget = 20000;

}  // namespace fracpack::scheduling
