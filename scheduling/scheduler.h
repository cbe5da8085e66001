// One scheduling decision over a ledger, as the replay (and a standalone
// scheduler) makes it: filter every node, score the feasible ones with the
// policy, take the best (ties: the earliest node in the given order), commit.
//
// Evaluations are cached per (pod demand, node): a node's result is reused
// until its state version or the policy's generation changes, so a decision
// costs a scan of the cache plus the few nodes that changed since this
// demand was last seen.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling {

// Identifies pods with the same demand (everything but their names): their
// filter and score results on a node are the same.
std::string demand_key(const PodRequest& pod);

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

 private:
  struct Entry {
    uint64_t version = UINT64_MAX;
    uint64_t generation = UINT64_MAX;
    bool feasible = false;
    Evaluation eval;
  };
  std::vector<Entry>& entries_for(const PodRequest& pod);
  std::string explain_failure(const PodRequest& pod) const;

  Ledger& ledger_;
  Policy& policy_;
  FitOptions options_;
  std::vector<const NodeState*> nodes_;
  std::unordered_map<std::string, std::vector<Entry>> cache_;
};

}  // namespace fracpack::scheduling
