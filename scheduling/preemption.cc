#include "scheduling/preemption.h"

#include <algorithm>

namespace fracpack::scheduling {

std::optional<VictimChoice> choose_victims(const PodRequest& pod, const Ledger& ledger, const NodeState& node,
                                           const std::vector<VictimCandidate>& candidates, const FitOptions& options) {
  if (fits(pod, node, options)) return VictimChoice{true, {}};
  // Lowest priority first; among equals, those holding more compute here.
  std::vector<std::pair<std::string, std::pair<int32_t, int64_t>>> ranked;
  for (const auto& c : candidates) {
    const PodRecord* r = ledger.pod(c.uid);
    if (r == nullptr || r->node != node.name()) continue;
    int64_t held = 0;
    for (const auto& charge : r->charges) held += charge.cores;
    ranked.push_back({c.uid, {c.priority, -held}});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<std::string> chosen;
  bool enough = false;
  for (const auto& c : ranked) {
    chosen.push_back(c.first);
    if (fits(pod, ledger.project(node.spec(), chosen), options)) {
      enough = true;
      break;
    }
  }
  if (!enough) return std::nullopt;
  // Fewest: leave out every victim the pod does not need.
  for (size_t i = chosen.size(); i-- > 0;) {
    std::vector<std::string> without = chosen;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    if (fits(pod, ledger.project(node.spec(), without), options)) chosen = std::move(without);
  }
  return VictimChoice{false, std::move(chosen)};
}

}  // namespace fracpack::scheduling
