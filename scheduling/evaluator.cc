#include "scheduling/evaluator.h"

#include "scheduling/scheduler.h"

namespace fracpack::scheduling {

Evaluator::Evaluator(Policy& policy, FitOptions options, size_t max_demands)
    : policy_(policy), options_(options), max_demands_(std::max<size_t>(max_demands, 1)) {}

Evaluator::Stats Evaluator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Evaluator::Demand& Evaluator::demand_locked(const PodRequest& pod) {
  std::string key = demand_key(pod);
  auto it = demands_.find(key);
  if (it != demands_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  if (demands_.size() >= max_demands_) {
    demands_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  Demand& d = demands_[std::move(key)];
  d.lru = lru_.begin();
  return d;
}

void Evaluator::compute_locked(const PodRequest& pod, const NodeState& node, Verdict& out) {
  out.score = 0;
  out.picks = Picks{};
  out.reason.clear();
  out.unresolvable = false;
  out.fits = fits(pod, node, options_);
  if (out.fits) {
    Evaluation e;
    if (policy_.evaluate(pod, node, e)) {
      out.score = e.score;
      out.picks = e.picks;
      return;
    }
    // fits() and the policy disagree: say so rather than guess.
    out.fits = false;
    out.reason = "no card assignment the " + std::string(policy_.name()) + " policy accepts";
    return;
  }
  static const BestCardRanker kBest;
  FitResult r = fit(pod, node, options_, kBest);
  out.unresolvable = r.unresolvable;
  out.reason = r.reason.empty() ? "does not fit" : std::move(r.reason);
}

void Evaluator::evaluate(const PodRequest& pod, std::span<const NodeState* const> nodes, const Visitor& visit) {
  std::lock_guard lock(mu_);
  static const Verdict kUnknown = [] {
    Verdict v;
    v.reason = "node unknown to fracpack (not in its informer's view)";
    return v;
  }();
  const uint64_t generation = policy_.generation();
  Demand* demand = policy_.cacheable() ? &demand_locked(pod) : nullptr;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeState* node = nodes[i];
    if (node == nullptr) {
      visit(i, kUnknown);
      continue;
    }
    if (demand == nullptr || node->version() == 0) {  // not cached, or a projection
      compute_locked(pod, *node, scratch_);
      visit(i, scratch_);
      continue;
    }
    if (demand->entries.size() <= node->slot()) demand->entries.resize(node->slot() + 1);
    Entry& e = demand->entries[node->slot()];
    if (e.version != node->version() || e.generation != generation) {
      ++stats_.misses;
      compute_locked(pod, *node, e.verdict);
      e.version = node->version();
      e.generation = generation;
    } else {
      ++stats_.hits;
    }
    visit(i, e.verdict);
  }
}

Verdict Evaluator::evaluate_one(const PodRequest& pod, const NodeState& node) {
  if (node.version() == 0) {  // a projection: not the ledger's node
    std::lock_guard lock(mu_);
    Verdict v;
    compute_locked(pod, node, v);
    return v;
  }
  Verdict out;
  const NodeState* one[] = {&node};
  evaluate(pod, one, [&](size_t, const Verdict& v) { out = v; });
  return out;
}

void Evaluator::observe(const PodRequest& pod) {
  std::lock_guard lock(mu_);
  policy_.observe(pod);
}

}  // namespace fracpack::scheduling
