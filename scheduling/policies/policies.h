// Internal: constructors of the policies make_policy() knows, and helpers
// they share. Include policy.h, not this, from outside scheduling/.
#pragma once

#include <memory>

#include "scheduling/fragmentation.h"
#include "scheduling/go_rand.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling::policies {

std::unique_ptr<Policy> make_random(uint64_t seed);
std::unique_ptr<Policy> make_dotprod();
std::unique_ptr<Policy> make_gpuclustering();
std::unique_ptr<Policy> make_gpupacking();
std::unique_ptr<Policy> make_bestfit();
std::unique_ptr<Policy> make_fgd(std::shared_ptr<const Workload> workload);
std::unique_ptr<Policy> make_binpack();
std::unique_ptr<Policy> make_spread();
std::unique_ptr<Policy> make_fracpack(const PolicyOptions& options);

// The node as the simulator's plugins see it.
struct SimNode {
  int64_t cpu_left = 0;  // C
  int64_t gpu_free = 0;  // Gfree: free compute over the node's schedulable cards
  int fully_free = 0;    // F: cards with all compute free
  int gpus = 0;          // G
};
SimNode sim_node(const NodeState& node);

// Most free compute (then memory) first: spreads shares over cards.
class SpreadCardRanker : public CardRanker {
 public:
  void rank(const PodRequest& pod, const ContainerRequest& container, const NodeState& node,
            std::span<const CardUse> use, std::span<uint8_t> candidates) const override;
};

// The fragmentation-gradient step shared by fgd and fracpack: for a pod with
// one app container of one fractional card, the candidate cards with the
// node's fragmentation after placing the share on each.
struct ShareOption {
  uint8_t pos = 0;
  double frag_after = 0;
};
bool is_single_share(const PodRequest& pod);
// Fills `options` (ascending card index) and returns the fragmentation before.
double share_options(FragmentationModel& model, const PodRequest& pod, const NodeState& node,
                     std::vector<ShareOption>& options);
// Fragmentation after committing `picks` (and the pod's CPU) on the node.
double frag_after(FragmentationModel& model, const PodRequest& pod, const NodeState& node, const Picks& picks);

}  // namespace fracpack::scheduling::policies
