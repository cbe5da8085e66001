#include "scheduling/verdict.h"

namespace fracpack::scheduling {

void judge(const PodRequest& pod, const NodeState& node, Policy& policy, const FitOptions& options, bool explain,
           Verdict& out) {
  out.score = 0;
  out.picks.size = 0;
  out.reason.clear();
  out.unresolvable = false;
  out.fits = fits(pod, node, options);
  if (out.fits) {
    if (policy.evaluate(pod, node, out)) return;
    out.score = 0;
    out.picks.size = 0;
    // fits() and the policy disagree: say so rather than guess.
    out.fits = false;
    if (explain) out.reason = "no card assignment the " + std::string(policy.name()) + " policy accepts";
    return;
  }
  if (!explain) return;
  static const BestCardRanker kBest;
  FitResult r = explain_fit(pod, node, options, kBest);
  out.unresolvable = r.unresolvable;
  out.reason = r.reason.empty() ? "does not fit" : std::move(r.reason);
}

}  // namespace fracpack::scheduling
