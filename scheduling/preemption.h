// Which victims to preempt on one node so a pod fits (the extender's
// preempt verb, and the replay can ask the same): kube-scheduler proposes
// victims per node; the cards decide which of them are needed. Pure: the
// ledger is read, never changed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"

namespace fracpack::scheduling {

struct VictimCandidate {
  std::string uid;
  int32_t priority = 0;
};

struct VictimChoice {
  bool fits_already = false;         // the cards are not what is short: kube-scheduler's victims stand
  std::vector<std::string> victims;  // otherwise the fewest needed (empty with fits_already)
};

// Lowest priority first (among equals, those holding more compute here),
// adding victims until the pod fits on `node` as if they were gone, then
// leaving out every one it turns out not to need. nullopt: even all of them
// would not free enough. Candidates the ledger does not hold on this node
// are ignored (they hold nothing fracpack counts here).
std::optional<VictimChoice> choose_victims(const PodRequest& pod, const Ledger& ledger, const NodeState& node,
                                           const std::vector<VictimCandidate>& candidates, const FitOptions& options);

}  // namespace fracpack::scheduling
