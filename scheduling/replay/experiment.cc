#include "scheduling/replay/experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "scheduling/go_rand.h"
#include "scheduling/ledger.h"

namespace fracpack::replay {

ExperimentSetup prepare_experiment(std::vector<OpenbNode> nodes, std::vector<OpenbPod> pods,
                                   const ExperimentOptions& options) {
  ExperimentSetup s;
  std::sort(nodes.begin(), nodes.end(), [](const OpenbNode& a, const OpenbNode& b) { return a.name < b.name; });
  std::sort(pods.begin(), pods.end(), [](const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; });
  for (const OpenbNode& n : nodes) s.total_gpus += n.gpus;

  // The target workload: the untuned trace's shapes (typical pods: FGD's cut).
  auto shapes = std::make_shared<scheduling::ShapeCounts>();
  for (const OpenbPod& p : pods) {
    const scheduling::PodRequest r = to_pod_request(p);
    shapes->add(scheduling::shape_of(r), 1, static_cast<double>(scheduling::node_memory_mib(r)));
  }
  s.typical = std::make_shared<scheduling::Workload>(scheduling::Workload::typical(*shapes));
  s.shapes = std::move(shapes);

  GoRand rng = options.go_cooked ? GoRand(options.seed, *options.go_cooked) : GoRand(options.seed);
  s.exact_rng = rng.exact();
  rng.Int63();  // the rand.Int() inside a debug log call

  std::vector<OpenbPod> order = pods;
  rng.Shuffle(static_cast<int>(order.size()), [&](int i, int j) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  });

  const auto cap = static_cast<double>(1000 * s.total_gpus);
  const double target = options.tune * cap;
  int64_t total = 0;
  for (const OpenbPod& p : pods) total += p.gpu_request();
  if (static_cast<double>(total) < target) {
    // Tune up, do-while style: sample with replacement from the name-sorted
    // trace; the stop test compares the per-GPU milli (a simulator quirk).
    for (int i = 0;; ++i) {
      const OpenbPod& q = pods[static_cast<size_t>(rng.Intn(static_cast<int>(pods.size())))];
      const int64_t per_gpu = q.num_gpu > 0 ? q.gpu_milli : 0;
      if (static_cast<double>(total + per_gpu) > target) break;
      total += q.gpu_request();
      OpenbPod copy = q;
      copy.name = q.name + "-tuned-" + std::to_string(i);
      order.push_back(std::move(copy));
    }
  } else if (static_cast<double>(total) > target) {
    while (static_cast<double>(total) > target && !order.empty()) {
      const auto k = static_cast<size_t>(rng.Intn(static_cast<int>(order.size())));
      total -= order[k].gpu_request();
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  s.arrivals = std::move(order);

  for (int i = 0; i < options.extra_draws; ++i) rng.Float64();
  const std::vector<int> prefix = rng.Perm(static_cast<int>(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04d-", prefix[i]);
    s.node_names.push_back(buf + nodes[i].name);
  }
  s.nodes = std::move(nodes);
  return s;
}

Result<RunStart> start_run(const ExperimentSetup& setup, const std::string& policy_name, int64_t seed,
                           const RunOptions& options) {
  scheduling::PolicyOptions po;
  po.workload = setup.shapes;
  po.seed = static_cast<uint64_t>(seed);
  po.learn = options.learn;
  auto policy = scheduling::make_policy(policy_name, po);
  if (!policy) return policy.error();
  RunStart start;
  start.policy = std::move(*policy);
  for (size_t i = 0; i < setup.nodes.size(); ++i) {
    start.ledger.upsert_node(to_node_spec(setup.nodes[i], setup.node_names[i]));
    start.order.push_back(setup.node_names[i]);
  }
  std::sort(start.order.begin(), start.order.end());  // ties go to the smallest prefixed name
  return start;
}

Result<RunResult> run_experiment(const ExperimentSetup& setup, const std::string& policy_name, int64_t seed,
                                 const RunOptions& options) {
  auto start = start_run(setup, policy_name, seed, options);
  if (!start) return start.error();
  scheduling::Ledger& ledger = start->ledger;
  const std::vector<std::string>& order = start->order;
  std::vector<scheduling::PodRequest> pods;
  pods.reserve(setup.arrivals.size());
  for (const OpenbPod& p : setup.arrivals) pods.push_back(to_pod_request(p));

  SequenceOptions so;
  so.fit.check_node_resources = true;
  so.record_placements = options.record_placements;
  so.record_events = options.record_events;
  RunResult result;
  static_cast<SequenceResult&>(result) = place_in_order(ledger, order, *start->policy, pods, *setup.typical, so);
  result.policy = policy_name;
  result.seed = seed;
  return result;
}

}  // namespace fracpack::replay
