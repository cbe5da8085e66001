#include "scheduling/evaluator.h"


namespace fracpack::scheduling {

Evaluator::Evaluator(Policy& policy, FitOptions options, size_t max_demands)
    : policy_(policy), options_(options), cache_(max_demands) {}

Evaluator::Stats Evaluator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Evaluator::evaluate(const PodRequest& pod, std::span<const NodeState* const> nodes, const Visitor& visit) {
  std::lock_guard lock(mu_);
  static const Verdict kUnknown = [] {
    Verdict v;
    v.reason = "node unknown to fracpack (not in its informer's view)";
    return v;
  }();
  const uint64_t generation = policy_.generation();
  const bool cacheable = policy_.cacheable();  // once per request, not per node
  std::vector<DecisionCache::Entry>* entries = nullptr;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeState* node = nodes[i];
    if (node == nullptr) {
      visit(i, kUnknown);
      continue;
    }
    if (!cacheable || node->version() == 0) {  // not cached, or a projection
      judge(pod, *node, policy_, options_, true, scratch_);
      visit(i, scratch_);
      continue;
    }
    // Looked up once per request, sized to the ledger's slots.
    if (entries == nullptr) entries = &cache_.entries(pod, node->slot() + 1);
    if (entries->size() <= node->slot()) entries->resize(node->slot() + 1);
    DecisionCache::Entry& e = (*entries)[node->slot()];
    if (!e.current(*node, generation)) {
      ++stats_.misses;
      judge(pod, *node, policy_, options_, true, e.verdict);
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
    judge(pod, node, policy_, options_, true, v);
    return v;
  }
  Verdict out;
  const NodeState* one[] = {&node};
  evaluate(pod, one, [&](size_t, const Verdict& v) { out = v; });
  return out;
}

std::optional<uint64_t> Evaluator::cache_generation() const {
  std::lock_guard lock(mu_);
  if (!policy_.cacheable()) return std::nullopt;
  return policy_.generation();
}

void Evaluator::observe(const PodRequest& pod, const Ledger& cluster) {
  std::lock_guard lock(mu_);
  policy_.observe(pod, cluster);
}

}  // namespace fracpack::scheduling
