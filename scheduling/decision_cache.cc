#include "scheduling/decision_cache.h"

#include <algorithm>

namespace fracpack::scheduling {

std::string demand_key(const PodRequest& pod) {
  std::string k = std::to_string(pod.cpu_milli) + "/" + std::to_string(pod.memory_bytes);
  for (const ContainerRequest& c : pod.containers) {
    k += "|" + std::string(c.init ? "i" : "a") + std::to_string(c.cards) + "x" + std::to_string(c.cores) + "," +
         std::to_string(c.memory_mib) + "," + std::to_string(c.memory_percent) + (c.alone ? "A" : "") +
         (c.percent_rounds_down ? "D" : "");
  }
  k += pod.model_match == PodRequest::ModelMatch::kExact ? "|m" : "|M";
  for (const auto& m : pod.allowed_models) k += m + ";";
  k += "|-";
  for (const auto& m : pod.excluded_models) k += m + ";";
  k += "|u";
  for (const auto& u : pod.uuid_allow) k += u + ";";
  k += "|x";
  for (const auto& u : pod.uuid_exclude) k += u + ";";
  if (pod.numa_single) k += "|numa";
  return k;
}

void judge(const PodRequest& pod, const NodeState& node, Policy& policy, const FitOptions& options, bool explain,
           Verdict& out) {
  out.score = 0;
  out.picks = Picks{};
  out.reason.clear();
  out.unresolvable = false;
  out.fits = fits(pod, node, options);
  if (out.fits) {
    Evaluation e;
    if (policy.evaluate(pod, node, e)) {
      out.score = e.score;
      out.picks = e.picks;
      return;
    }
    // fits() and the policy disagree: say so rather than guess.
    out.fits = false;
    if (explain) out.reason = "no card assignment the " + std::string(policy.name()) + " policy accepts";
    return;
  }
  if (!explain) return;
  static const BestCardRanker kBest;
  FitResult r = fit(pod, node, options, kBest);
  out.unresolvable = r.unresolvable;
  out.reason = r.reason.empty() ? "does not fit" : std::move(r.reason);
}

DecisionCache::DecisionCache(size_t max_demands) : max_demands_(std::max<size_t>(max_demands, 1)) {}

std::vector<DecisionCache::Entry>& DecisionCache::entries(const PodRequest& pod, size_t slots) {
  std::string key = demand_key(pod);
  auto it = demands_.find(key);
  if (it == demands_.end()) {
    if (demands_.size() >= max_demands_) {
      demands_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    it = demands_.emplace(std::move(key), Demand{}).first;
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  if (it->second.entries.size() < slots) it->second.entries.resize(slots);
  return it->second.entries;
}

}  // namespace fracpack::scheduling
