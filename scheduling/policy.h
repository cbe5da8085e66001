// Placement policies: one interface for node scoring and card choice, so the
// score kube-scheduler sees (prioritize) and the cards bind takes come from
// the same evaluation. Filtering is policy-independent (fit.h).
//
//   random, dotprod, gpuclustering, gpupacking, bestfit, fgd
//       the FGD paper's six policies, exactly as the simulator scores them
//       (../shared/reference/replay-spec.md §5): integer scores, the simulator's GPU choice;
//   binpack, spread
//       HAMi-style: fill the busiest node and card first, or the idlest;
//   fracpack
//       our default: fragmentation-aware in the cards' compute and memory and
//       the node's CPU and memory, shapes weighted by how scarce the nodes
//       that can take them are, fine-grained, with a target workload
//       learned online (policies/fracpack_measure.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/workload.h"

namespace fracpack::scheduling {

struct Evaluation {
  int64_t score = 0;  // higher is better; range per policy (score_range())
  Picks picks;        // the cards the pod gets on this node
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;

  // True when evaluate() depends only on the pod's demand and the node's
  // state (its version), so callers may cache results per node version.
  virtual bool cacheable() const { return true; }
  // Nominal [min, max] of scores, for mapping to kube-scheduler's 0..10.
  virtual std::pair<int64_t, int64_t> score_range() const { return {0, 100}; }

  // Scores a node and picks the pod's cards on it. Returns false when the
  // pod does not fit (callers normally filter first).
  virtual bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) = 0;

  // Called once for each pod that arrives to be placed, placed or not, before
  // it is judged, with the cluster as it is then: policies that learn the
  // workload count it (learning from the placed pods alone would shift the
  // target towards what still fits as the cluster fills, and stop protecting
  // room for the pods that no longer do), and fracpack weighs shapes by how
  // much room the cluster still has for each.
  virtual void observe(const PodRequest& /*pod*/, const Ledger& /*cluster*/) {}
  // Changes whenever evaluate() may answer differently for the same node
  // state (a learning policy's target moved): cache keys include it.
  virtual uint64_t generation() const { return 0; }
};

struct PolicyOptions {
  // The target workload as shape counts. fgd (required) keeps the typical
  // shapes (the 95 % cut); fracpack takes every shape as its prior and then
  // learns from observe() unless `learn` is false.
  std::shared_ptr<const ShapeCounts> workload;
  uint64_t seed = 42;             // random
  bool learn = true;              // fracpack: learn the workload online
  double learn_half_life = 2000;  // fracpack: observations after which an old one counts half
  double prior_weight = 2000;     // fracpack: the given workload counts as this many observations
};

// The names make_policy() accepts, in the order reports list them.
const std::vector<std::string>& policy_names();

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, const PolicyOptions& options);

// Maps a policy score onto kube-scheduler's extender range 0..10 relative to
// the other candidates: exactly the best candidates (the highest score) get
// 10, the others 0..9 in proportion, the worst 0. Keeping 10 for the best
// alone means kube-scheduler, adding weight x 10 x score, picks among the
// nodes the policy itself would pick.
int64_t extender_score(int64_t score, int64_t min_score, int64_t max_score);
// The 0..10 scores of nodes with these raw policy scores (nullopt: the pod
// does not fit there; it gets 0): the range mapped by extender_score, and
// among the nodes scored best the first by name (the replay's tie rule)
// alone gets 10, the others 9. kube-scheduler picks at random among equal
// totals, and the policy's ties are meant to go to one node (pods packed
// onto the same nodes keep the others whole).
std::vector<int64_t> extender_scores(std::span<const std::optional<int64_t>> raw, std::span<const std::string_view> names);

}  // namespace fracpack::scheduling
