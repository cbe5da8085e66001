// One pod against many nodes, as the extender needs it: does the pod fit
// each node (and if not, why, and could it ever), how does the policy score
// it there, and with which cards. The same functions as the replay's
// Scheduler (fits, fit, Policy::evaluate), so filter, prioritize and bind
// agree with each other and with an offline replay.
//
// Results are cached in the DecisionCache the replay uses too
// (scheduling/decision_cache.h), by node slot; the cache keeps the 64 most
// recent demands.
//
// Thread-safe: the evaluator serializes its cache and the policy (policies
// keep scratch state). Callers keep the ledger stable meanwhile (a read
// lock for filter and prioritize, the write lock for bind).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduling/decision_cache.h"
#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/policy.h"

namespace fracpack::scheduling {

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

  // A pod arrived (Policy::observe: once per pod, placed or not), with the
  // cluster as it is (the caller holds the ledger stable, as for evaluate()).
  void observe(const PodRequest& pod, const Ledger& cluster);

  // The policy's generation, or nothing when its verdicts are not cached:
  // answers built from verdicts (the extender's filter replies) are kept
  // only while it is the same.
  std::optional<uint64_t> cache_generation() const;

  std::string_view policy_name() const { return policy_.name(); }
  const FitOptions& options() const { return options_; }

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
  };
  Stats stats() const;

 private:
  Policy& policy_;
  FitOptions options_;
  mutable std::mutex mu_;
  DecisionCache cache_;  // by node slot
  Verdict scratch_;
  Stats stats_;
};

}  // namespace fracpack::scheduling
