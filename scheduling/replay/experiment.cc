#include "scheduling/replay/experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "scheduling/fragmentation.h"
#include "scheduling/go_rand.h"
#include "scheduling/ledger.h"
#include "scheduling/scheduler.h"

namespace fracpack::replay {

double round2(double x) {
  // glibc's printf rounds the exact binary value correctly, as Python's round() does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return std::strtod(buf, nullptr);
}

ExperimentSetup prepare_experiment(std::vector<OpenbNode> nodes, std::vector<OpenbPod> pods,
                                   const ExperimentOptions& options) {
  ExperimentSetup s;
  std::sort(nodes.begin(), nodes.end(), [](const OpenbNode& a, const OpenbNode& b) { return a.name < b.name; });
  std::sort(pods.begin(), pods.end(), [](const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; });
  for (const OpenbNode& n : nodes) s.total_gpus += n.gpus;

  // Typical pods from the untuned, name-sorted trace.
  std::vector<scheduling::PodShape> shapes;
  shapes.reserve(pods.size());
  for (const OpenbPod& p : pods) shapes.push_back(scheduling::shape_of(to_pod_request(p)));
  s.typical = std::make_shared<scheduling::Workload>(scheduling::Workload::typical(shapes));

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

namespace {

// numpy's pairwise summation (pairwise_sum_DOUBLE, PW_BLOCKSIZE 128). The
// paper's merge scripts average per-arrival values already rounded to 2 dp
// with pandas, and on such values the summation order decides the last digit
// of a mean that lands on a half. This order reproduces the most cells of the
// paper's CSVs (plain or compensated sums do worse); the rest differ by 0.01.
double pairwise_sum(const double* a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

}  // namespace

Curves bucket(const std::vector<ArrivalMetrics>& events, int64_t total_gpus) {
  const auto gpus = static_cast<double>(total_gpus);
  std::vector<int> arrive(events.size());
  std::vector<double> alloc(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    // Python: round(arrived / total_gpus / 10) (half to even) and round(used / total_gpus / 10, 2).
    arrive[i] = static_cast<int>(std::nearbyint(static_cast<double>(events[i].arrived_gpu_milli) / gpus / 10));
    alloc[i] = round2(static_cast<double>(events[i].used_gpu_milli) / gpus / 10);
  }
  Curves c;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int x = 0; x < kColumns; ++x) {
    std::vector<size_t> hit;
    for (size_t i = 0; i < events.size(); ++i) {
      if (arrive[i] == x) hit.push_back(i);
    }
    if (hit.empty()) {
      for (size_t i = 0; i < events.size(); ++i) {
        if (arrive[i] >= x - 1 && arrive[i] <= x + 1) hit.push_back(i);
      }
    }
    const auto ux = static_cast<size_t>(x);
    if (hit.empty()) {
      c.alloc[ux] = c.frag[ux] = c.frag_ratio[ux] = nan;
      continue;
    }
    std::vector<double> va, vf, vr;
    for (size_t i : hit) {
      va.push_back(alloc[i]);
      vf.push_back(events[i].frag_milli);
      vr.push_back(events[i].frag_ratio);
    }
    const double a = pairwise_sum(va.data(), va.size());
    const double f = pairwise_sum(vf.data(), vf.size());
    const double r = pairwise_sum(vr.data(), vr.size());
    const auto n = static_cast<double>(hit.size());
    c.alloc[ux] = round2(a / n);
    c.frag[ux] = round2(100 * (f / n) / 1000 / gpus);
    c.frag_ratio[ux] = r / n;
  }
  return c;
}

Result<RunResult> run_experiment(const ExperimentSetup& setup, const std::string& policy_name, int64_t seed,
                                 const RunOptions& options) {
  scheduling::PolicyOptions po;
  po.workload = setup.typical;
  po.seed = static_cast<uint64_t>(seed);
  po.learn = options.learn;
  auto policy = scheduling::make_policy(policy_name, po);
  if (!policy) return policy.error();

  scheduling::Ledger ledger;
  std::vector<std::string> order;
  for (size_t i = 0; i < setup.nodes.size(); ++i) {
    ledger.upsert_node(to_node_spec(setup.nodes[i], setup.node_names[i]));
    order.push_back(setup.node_names[i]);
  }
  std::sort(order.begin(), order.end());  // ties go to the smallest prefixed name
  scheduling::Scheduler scheduler(ledger, **policy, scheduling::FitOptions{true}, order);

  // The fragmentation metric, per node, recomputed when a node changes.
  scheduling::FragmentationModel metric(*setup.typical);
  std::vector<const scheduling::NodeState*> nodes;
  for (const auto& name : order) nodes.push_back(ledger.node(name));
  std::vector<double> frag(nodes.size());
  std::vector<uint64_t> seen(nodes.size(), UINT64_MAX);
  const int64_t capacity = 1000 * setup.total_gpus;

  RunResult result;
  result.policy = policy_name;
  result.seed = seed;
  std::vector<ArrivalMetrics> events;
  events.reserve(setup.arrivals.size());
  int64_t arrived = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const OpenbPod& pod : setup.arrivals) {
    arrived += pod.gpu_request();
    const scheduling::PodRequest request = to_pod_request(pod);
    scheduling::Decision d = scheduler.schedule(request);
    if (!d.placed) ++result.failed;
    if (options.record_placements) {
      Placement p{pod.name, d.placed ? d.node->name() : std::string(), {}};
      if (d.placed) {
        for (const auto& c : d.allocation.containers) {
          for (const auto& share : c.cards) p.cards.push_back(share.index);
        }
      }
      result.placements.push_back(std::move(p));
    }
    double total_frag = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (seen[i] != nodes[i]->version()) {
        frag[i] = metric.frag(*nodes[i]);
        seen[i] = nodes[i]->version();
      }
      total_frag += frag[i];
    }
    const int64_t used = ledger.total_cores_used();
    const int64_t idle = capacity - used;
    events.push_back(ArrivalMetrics{arrived, used, round2(total_frag),
                                    round2(idle > 0 ? 100 * total_frag / static_cast<double>(idle) : 0)});
    result.final_frag_milli = total_frag;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.arrivals = setup.arrivals.size();
  result.used_gpu_milli = ledger.total_cores_used();
  result.curves = bucket(events, setup.total_gpus);
  if (options.record_events) result.events = std::move(events);
  return result;
}

}  // namespace fracpack::replay
