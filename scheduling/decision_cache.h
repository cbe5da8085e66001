// Verdicts of pod demands on nodes, cached for the extender (Evaluator) and
// the replay (Scheduler) alike: one pod against a node is judged once per
// change of that node (its ledger version, never reused) and of the policy
// (its generation). Pods with the same demand (demand_key) share entries:
// kube-scheduler's filter, prioritize and bind of one pod, and every pod of
// the same shape. Entries are indexed by a caller's slot (the node's slot()
// for the extender, its position in the order for the replay); the least
// recently used demand goes past `max_demands`.
// What is cached is judge()'s Verdict (scheduling/verdict.h).
#pragma once

#include <cstdint>
#include <limits>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/ledger.h"
#include "scheduling/verdict.h"

namespace fracpack::scheduling {

// Identifies pods with the same demand (everything but their names): their
// verdicts on a node are the same.
std::string demand_key(const PodRequest& pod);

class DecisionCache {
 public:
  explicit DecisionCache(size_t max_demands = std::numeric_limits<size_t>::max());

  struct Entry {
    uint64_t version = 0;  // 0: empty (ledger versions start at 1)
    uint64_t generation = 0;
    Verdict verdict;
    bool current(const NodeState& node, uint64_t policy_generation) const {
      return version == node.version() && generation == policy_generation;
    }
  };
  // This demand's entries (now the most recently used), at least `slots` long.
  std::vector<Entry>& entries(const PodRequest& pod, size_t slots);

 private:
  struct Demand {
    std::vector<Entry> entries;
    std::list<std::string>::iterator lru;
  };
  size_t max_demands_;
  std::unordered_map<std::string, Demand> demands_;
  std::list<std::string> lru_;  // most recent first
};

}  // namespace fracpack::scheduling
