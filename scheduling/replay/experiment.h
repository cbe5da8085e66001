// The FGD paper's experiment (../shared/reference/replay-spec.md §3, §6, §7): one (workload, policy,
// seed) run places the tuned, shuffled trace one pod at a time on the 1213
// openb GPU nodes, never deleting or retrying, and records allocation and
// fragmentation after every arrival; the results are bucketed by arrived
// GPU demand (x = 0..130 % of capacity) as the paper's CSVs are.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/policy.h"
#include "scheduling/replay/openb.h"
#include "scheduling/replay/sequence.h"
#include "scheduling/workload.h"

namespace fracpack::replay {

struct ExperimentOptions {
  double tune = 1.3;
  int64_t seed = 42;
  // Go's rngCooked table (bit-exact arrival order); null: a portable RNG.
  std::shared_ptr<const std::vector<int64_t>> go_cooked;
  // Draws consumed by the simulator's informer goroutines before the node
  // permutation (../shared/reference/replay-spec.md §3.3: 10 reproduced every authors' run).
  int extra_draws = 10;
};

// Everything a run needs that does not depend on the policy.
struct ExperimentSetup {
  std::vector<OpenbNode> nodes;            // sorted by trace name
  std::vector<std::string> node_names;     // "%04d-" + trace name (the permutation prefix)
  std::vector<OpenbPod> arrivals;          // tuned, shuffled; copies named "<name>-tuned-<i>"
  std::shared_ptr<const scheduling::ShapeCounts> shapes;  // shape counts of the untuned trace (the target workload)
  std::shared_ptr<const scheduling::Workload> typical;    // its typical pods (FGD's 95 % cut): the metric
  int64_t total_gpus = 0;
  bool exact_rng = false;
};

ExperimentSetup prepare_experiment(std::vector<OpenbNode> nodes, std::vector<OpenbPod> pods,
                                   const ExperimentOptions& options);

struct RunResult : SequenceResult {
  std::string policy;
  int64_t seed = 0;
};

struct RunOptions {
  bool record_placements = false;
  bool record_events = false;
  bool learn = true;  // fracpack: learn the workload online (else the trace's typical pods)
};

// What every run of a prepared experiment starts from: the policy (its
// target workload the trace's shapes), the ledger with the nodes, and the
// nodes in tie-breaking order (the smallest prefixed name first).
struct RunStart {
  std::unique_ptr<scheduling::Policy> policy;
  scheduling::Ledger ledger;
  std::vector<std::string> order;
};
Result<RunStart> start_run(const ExperimentSetup& setup, const std::string& policy, int64_t seed, const RunOptions& options);

// Runs one policy over a prepared experiment.
Result<RunResult> run_experiment(const ExperimentSetup& setup, const std::string& policy, int64_t seed,
                                 const RunOptions& options = {});

}  // namespace fracpack::replay
