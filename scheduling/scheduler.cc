#include "scheduling/scheduler.h"

#include <algorithm>
#include <map>

#include "scheduling/quota_gate.h"

namespace fracpack::scheduling {

Scheduler::Scheduler(Ledger& ledger, Policy& policy, FitOptions options, std::vector<std::string> order)
    : ledger_(ledger), policy_(policy), options_(options) {
  for (const auto& name : order) {
    if (const NodeState* n = ledger_.node(name)) {
      position_.emplace(n, nodes_.size());
      nodes_.push_back(n);
    }
  }
}

Decision Scheduler::schedule(const PodRequest& pod, bool commit, bool explain) {
  Decision d;
  // The namespace's GPU quota, as the extender's filter checks it
  // (scheduling/quota_gate.h): once for every node, or on each node's cards.
  const QuotaGate quota(ledger_, pod.namespace_name, pod);
  if (!quota.everywhere().ok()) {
    d.reason = quota.everywhere().message();
    return d;
  }
  std::string over_quota;  // the first node's quota refusal, when that is why none fits
  const bool cacheable = policy_.cacheable();
  std::vector<DecisionCache::Entry>* entries = cacheable ? &cache_.entries(pod, nodes_.size()) : nullptr;
  const uint64_t generation = policy_.generation();
  DecisionCache::Entry scratch;
  int best = -1;
  int64_t best_score = 0;
  Picks best_picks;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& node = *nodes_[i];
    DecisionCache::Entry& e = cacheable ? (*entries)[i] : scratch;
    if (!cacheable || !e.current(node, generation)) {
      e.version = node.version();
      e.generation = generation;
      judge(pod, node, policy_, options_, /*explain=*/false, e.verdict);
    }
    if (!e.verdict.fits) continue;
    if (Status s = quota.admits(node, e.verdict.picks); !s.ok()) {
      if (over_quota.empty()) over_quota = s.message();
      continue;
    }
    ++d.feasible;
    if (best < 0 || e.verdict.score > best_score) {
      best = static_cast<int>(i);
      best_score = e.verdict.score;
      best_picks = e.verdict.picks;
    }
  }
  if (best < 0) {
    d.reason = !over_quota.empty() ? over_quota : explain ? explain_failure(pod) : "no node fits";
    return d;
  }
  return commit_to(pod, *nodes_[static_cast<size_t>(best)], best_score, best_picks, commit, std::move(d));
}

Decision Scheduler::schedule_on(const PodRequest& pod, const NodeState& node, bool commit) {
  Decision d;
  auto at = position_.find(&node);
  if (at == position_.end()) {
    d.reason = "node " + node.name() + " is not in the scheduler's order";
    return d;
  }
  DecisionCache::Entry scratch;
  DecisionCache::Entry& e = policy_.cacheable() ? cache_.entries(pod, nodes_.size())[at->second] : scratch;
  if (!policy_.cacheable() || !e.current(node, policy_.generation())) {
    e.version = node.version();
    e.generation = policy_.generation();
    judge(pod, node, policy_, options_, /*explain=*/false, e.verdict);
  }
  if (!e.verdict.fits) {
    d.reason = "no node fits";
    return d;
  }
  if (Status s = QuotaGate(ledger_, pod.namespace_name, pod).admits(node, e.verdict.picks); !s.ok()) {
    d.reason = s.message();
    return d;
  }
  d.feasible = 1;
  const Picks picks = e.verdict.picks;
  return commit_to(pod, node, e.verdict.score, picks, commit, std::move(d));
}

Decision Scheduler::commit_to(const PodRequest& pod, const NodeState& node, int64_t score, const Picks& picks, bool commit,
                              Decision d) {
  d.placed = true;
  d.node = &node;
  d.score = score;
  d.allocation = materialize(pod, node, picks);
  if (commit) {
    const PodFacts facts{pod.uid, pod.key(), pod.cpu_milli, pod.memory_bytes};
    if (Status s = ledger_.assume(facts, d.allocation, Clock::time_point::max()); !s.ok()) {
      // Cannot happen when fits() and the policy agree; report rather than over-commit.
      d.placed = false;
      d.reason = "internal: chosen placement rejected by the ledger: " + s.message();
      return d;
    }
    ledger_.confirm(facts, d.allocation);
  }
  return d;
}

std::string Scheduler::explain_failure(const PodRequest& pod) const {
  std::map<std::string, int> counts;
  static const BestCardRanker kBest;
  for (const NodeState* n : nodes_) {
    FitResult r = explain_fit(pod, *n, options_, kBest);
    if (!r.fits) {
      // Aggregate like kube-scheduler's "0/N nodes are available": drop the numbers.
      std::string reason = r.reason;
      const size_t colon = reason.find(':');
      if (colon != std::string::npos && reason.rfind("insufficient", 0) == 0) reason.resize(colon);
      ++counts[reason];
    }
  }
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [r, c] : counts) sorted.emplace_back(c, r);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = "0/" + std::to_string(nodes_.size()) + " nodes are available";
  for (size_t i = 0; i < sorted.size(); ++i) out += (i == 0 ? ": " : ", ") + std::to_string(sorted[i].first) + " " + sorted[i].second;
  return out;
}

}  // namespace fracpack::scheduling
