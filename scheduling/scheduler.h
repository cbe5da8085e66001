// One scheduling decision over a ledger, as the replay (and a standalone
// scheduler) makes it: filter every node, score the feasible ones with the
// policy, take the best (ties: the earliest node in the given order), commit.
//
// Verdicts are cached in the DecisionCache the extender uses too
// (scheduling/decision_cache.h), by position in the order: a decision costs a
// scan of the cache plus the few nodes that changed since this demand was
// last seen.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/decision_cache.h"
#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling {

struct Decision {
  bool placed = false;
  const NodeState* node = nullptr;
  Allocation allocation;  // when placed
  int64_t score = 0;
  size_t feasible = 0;    // nodes that passed the filter
  std::string reason;     // when not placed (with explain: the reasons, counted)
};

class Scheduler {
 public:
  // `order` lists the nodes to consider, in tie-breaking order (earliest wins).
  Scheduler(Ledger& ledger, Policy& policy, FitOptions options, std::vector<std::string> order);

  // Chooses a node and cards for the pod and, when `commit`, records the
  // placement in the ledger (confirmed). With `explain`, a failure says why
  // nodes were rejected ("3 insufficient cpu; 2 no GPU of model X").
  Decision schedule(const PodRequest& pod, bool commit = true, bool explain = false);

  // The same choice without committing.
  Decision choose(const PodRequest& pod, bool explain = false) { return schedule(pod, false, explain); }

  // The same decision where only `node` can take the pod: every other node
  // of the order is known not to fit it (a waiting pod retried when a pod
  // left `node`). Judged and cached as schedule() does.
  Decision schedule_on(const PodRequest& pod, const NodeState& node, bool commit = true);

  // A pod arrived to be placed (before its first schedule(); retries of a
  // waiting pod are not arrivals): a learning policy counts it.
  void arrived(const PodRequest& pod) { policy_.observe(pod, ledger_); }

 private:
  std::string explain_failure(const PodRequest& pod) const;
  Decision commit_to(const PodRequest& pod, const NodeState& node, int64_t score, const Picks& picks, bool commit,
                     Decision d);

  Ledger& ledger_;
  Policy& policy_;
  FitOptions options_;
  std::vector<const NodeState*> nodes_;
  std::unordered_map<const NodeState*, size_t> position_;  // in nodes_
  DecisionCache cache_;  // by position in nodes_
};

}  // namespace fracpack::scheduling
