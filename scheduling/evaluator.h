// One pod against many nodes, as the extender needs it: does the pod fit
// each node (and if not, why, and could it ever), how does the policy score
// it there, and with which cards. The same functions as the replay's
// Scheduler (fits, fit, Policy::evaluate), so filter, prioritize and bind
// agree with each other and with an offline replay.
//
// Results are cached per pod demand (demand_key) and node version, which
// the ledger never reuses: kube-scheduler's filter, prioritize and bind of
// one pod, and every pod of the same shape, evaluate a node once per change
// of that node. The cache keeps the most recent demands (LRU).
//
// Thread-safe: the evaluator serializes its cache and the policy (policies
// keep scratch state). Callers keep the ledger stable meanwhile (a read
// lock for filter and prioritize, the write lock for bind).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling {

struct Verdict {
  bool fits = false;
  bool unresolvable = false;  // no card of the node could ever take the pod
  std::string reason;         // when !fits
  int64_t score = 0;          // when fits: the policy's score (see Policy::score_range)
  Picks picks;                // when fits: the cards the pod would get
};

class Evaluator {
 public:
  Evaluator(Policy& policy, FitOptions options, size_t max_demands = 64);

  // Calls visit(i, verdict) for each of `nodes` in order; a null node (not
  // in the ledger) gets a verdict saying so. The verdicts are valid only
  // during the call.
  using Visitor = std::function<void(size_t, const Verdict&)>;
  void evaluate(const PodRequest& pod, std::span<const NodeState* const> nodes, const Visitor& visit);

  // One node; nodes that are not the ledger's own (a projection, see
  // Ledger::project) are evaluated without the cache.
  Verdict evaluate_one(const PodRequest& pod, const NodeState& node);

  // The pod was placed (policies that learn the workload).
  void observe(const PodRequest& pod);

  std::string_view policy_name() const { return policy_.name(); }
  const FitOptions& options() const { return options_; }

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    uint64_t version = 0;  // 0: empty (versions start at 1)
    uint64_t generation = 0;
    Verdict verdict;
  };
  struct Demand {
    std::vector<Entry> entries;  // by node slot
    std::list<std::string>::iterator lru;
  };
  Demand& demand_locked(const PodRequest& pod);
  void compute_locked(const PodRequest& pod, const NodeState& node, Verdict& out);

  Policy& policy_;
  FitOptions options_;
  size_t max_demands_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Demand> demands_;
  std::list<std::string> lru_;  // most recent first
  Verdict scratch_;
  Stats stats_;
};

}  // namespace fracpack::scheduling
