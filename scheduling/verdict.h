// The one verdict of a pod on a node that the extender (Evaluator) and the
// replay (Scheduler) both use, cached by scheduling/decision_cache.h:
// whether it fits (scheduling::fits), then the policy's score and cards;
// when it does not fit and `explain`, why, and whether it never could
// (scheduling::explain_fit with the best-card ranker).
#pragma once

#include <string>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling {

// A verdict is the policy's Evaluation (score and picks, meaningful when
// fits) plus why not: judge() lets the policy write into it directly.
struct Verdict : Evaluation {
  bool fits = false;
  bool unresolvable = false;  // no card of the node could ever take the pod
  std::string reason;         // when !fits (and explained)
};

// Judges `pod` on `node` into `out` (reused: no allocation when it fits).
void judge(const PodRequest& pod, const NodeState& node, Policy& policy, const FitOptions& options, bool explain,
           Verdict& out);

}  // namespace fracpack::scheduling
