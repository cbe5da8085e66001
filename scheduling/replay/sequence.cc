#include "scheduling/replay/sequence.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "scheduling/fragmentation.h"
#include "scheduling/scheduler.h"

namespace fracpack::replay {

double round2(double x) {
  // glibc's printf rounds the exact binary value correctly, as Python's round() does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return std::strtod(buf, nullptr);
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

int64_t gpu_demand(const scheduling::PodRequest& pod) {
  int64_t d = 0;
  for (const auto& c : pod.containers) {
    if (!c.init) d += int64_t{c.cards} * c.cores;
  }
  return d;
}

SequenceResult place_in_order(scheduling::Ledger& ledger, const std::vector<std::string>& order,
                              scheduling::Policy& policy, const std::vector<scheduling::PodRequest>& pods,
                              const scheduling::Workload& metric_workload, const SequenceOptions& options,
                              int64_t arrived_before) {
  scheduling::Scheduler scheduler(ledger, policy, options.fit, order);

  // The fragmentation metric, per node, recomputed when a node changes.
  scheduling::FragmentationModel metric(metric_workload);
  std::vector<const scheduling::NodeState*> nodes;
  int64_t cards = 0;
  for (const auto& name : order) {
    if (const scheduling::NodeState* n = ledger.node(name)) {
      nodes.push_back(n);
      cards += static_cast<int64_t>(n->cards().size());
    }
  }
  std::vector<double> frag(nodes.size());
  std::vector<uint64_t> seen(nodes.size(), UINT64_MAX);

  SequenceResult result;
  result.capacity_milli = 1000 * cards;
  std::vector<ArrivalMetrics> events;
  events.reserve(pods.size());
  int64_t arrived = arrived_before;
  const auto start = std::chrono::steady_clock::now();
  for (const scheduling::PodRequest& pod : pods) {
    arrived += gpu_demand(pod);
    scheduler.arrived(pod);
    scheduling::Decision d = scheduler.schedule(pod, true, options.explain_failures);
    if (!d.placed) ++result.failed;
    if (options.record_placements) {
      Placement p{pod.key(), d.placed ? d.node->name() : std::string(), {}, d.placed ? std::string() : d.reason};
      for (const auto& c : d.allocation.containers) {
        for (const auto& share : c.cards) p.cards.push_back(share.index);
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
    const int64_t idle = result.capacity_milli - used;
    events.push_back(ArrivalMetrics{arrived, used, round2(total_frag),
                                    round2(idle > 0 ? 100 * total_frag / static_cast<double>(idle) : 0)});
    result.final_frag_milli = total_frag;
    result.used_gpu_milli = used;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.arrivals = pods.size();
  result.curves = bucket(events, cards);
  if (options.record_events) result.events = std::move(events);
  return result;
}

}  // namespace fracpack::replay
