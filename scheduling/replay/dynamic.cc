#include "scheduling/replay/dynamic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <unordered_map>

#include "scheduling/decision_cache.h"
#include "scheduling/fragmentation.h"
#include "scheduling/scheduler.h"

namespace fracpack::replay {
namespace {

constexpr double kForever = std::numeric_limits<double>::infinity();

// A pod on the trace's clock, relative to the window's start.
struct TracePod {
  size_t index = 0;
  double offset = 0;     // creation - window start (0 for pods created before it)
  double run = 0;        // seconds it runs from its arrival (kForever: never leaves)
  bool before = false;   // created before the window: running at its start
  int64_t gpu_milli = 0;
};

// The pods' arrivals and departures for compression f, and their offered load.
DynamicPlan lay_out(const std::vector<TracePod>& trace, double span, double f, double capacity) {
  DynamicPlan plan;
  plan.compression = f;
  plan.window_seconds = span / f;
  const double window = plan.window_seconds;
  double offered = 0;
  plan.pods.reserve(trace.size());
  for (const TracePod& t : trace) {
    DynamicPlan::Pod p;
    p.index = t.index;
    p.gpu_milli = t.gpu_milli;
    const double arrival = t.offset / f;
    if (t.before || t.run >= window) {
      // Standing load: running from the start; it leaves when it would have.
      p.arrival = 0;
      p.departure = t.before ? t.run : arrival + t.run;
      ++plan.standing;
    } else {
      p.arrival = arrival;
      p.departure = arrival + t.run;
    }
    offered += static_cast<double>(t.gpu_milli) * std::max(0.0, std::min(p.departure, window) - p.arrival);
    plan.pods.push_back(p);
  }
  plan.offered_load = window > 0 && capacity > 0 ? offered / (window * capacity) : 0;
  return plan;
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  // Nearest rank.
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  const size_t k = std::min(v.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

Result<DynamicPlan> plan_dynamic(const ExperimentSetup& setup, std::optional<double> load) {
  if (setup.arrivals.empty()) return Error{"no pods to replay"};
  int64_t first_deletion = std::numeric_limits<int64_t>::max(), last_deletion = 0, last_creation = 0;
  for (const OpenbPod& p : setup.arrivals) {
    if (!p.has_times()) {
      return Error{"pod " + p.name +
                   " has no creation_time and deletion_time: the dynamic replay needs the trace's time columns (the "
                   "FGD paper's multigpu* lists have none)"};
    }
    first_deletion = std::min(first_deletion, p.deletion_time);
    last_deletion = std::max(last_deletion, p.deletion_time);
    last_creation = std::max(last_creation, p.creation_time);
  }
  if (last_creation <= first_deletion) {
    return Error{"the pod list's last creation_time (" + std::to_string(last_creation) +
                 ") is not after its first deletion_time (" + std::to_string(first_deletion) +
                 "): no window in which the trace is complete"};
  }
  const auto span = static_cast<double>(last_creation - first_deletion);
  const double capacity = 1000.0 * static_cast<double>(setup.total_gpus);
  std::vector<TracePod> trace;
  trace.reserve(setup.arrivals.size());
  double total_gpu = 0;
  for (size_t i = 0; i < setup.arrivals.size(); ++i) {
    const OpenbPod& p = setup.arrivals[i];
    TracePod t;
    t.index = i;
    t.gpu_milli = p.gpu_request();
    t.before = p.creation_time < first_deletion;
    t.offset = t.before ? 0 : static_cast<double>(p.creation_time - first_deletion);
    if (p.deletion_time == last_deletion) {
      t.run = kForever;  // still running when the trace ended
    } else {
      t.run = static_cast<double>(p.deletion_time - std::max(p.creation_time, first_deletion));
    }
    total_gpu += static_cast<double>(t.gpu_milli);
    trace.push_back(t);
  }
  const double max_load = capacity > 0 ? total_gpu / capacity : 0;
  double f = 1;
  if (load) {
    if (!(*load > 0)) return Error{"a load must be positive"};
    if (*load >= max_load) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "load %.3g is more than these pods offer: at most %.3g (every pod running at once, the "
                    "static experiment); raise --tune", *load, max_load);
      return Error{buf};
    }
    // The offered load grows with f: bisection on log f.
    double lo = std::log(1e-6), hi = std::log(1e12);
    for (int i = 0; i < 100; ++i) {
      const double mid = (lo + hi) / 2;
      if (lay_out(trace, span, std::exp(mid), capacity).offered_load < *load) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    f = std::exp(hi);
  }
  DynamicPlan plan = lay_out(trace, span, f, capacity);
  plan.max_load = max_load;
  std::stable_sort(plan.pods.begin(), plan.pods.end(), [](const DynamicPlan::Pod& a, const DynamicPlan::Pod& b) {
    return a.arrival < b.arrival;
  });
  return plan;
}

Result<DynamicResult> run_dynamic(const ExperimentSetup& setup, const DynamicPlan& plan, const std::string& policy_name,
                                  int64_t seed, const RunOptions& run, const DynamicOptions& options) {
  auto start = start_run(setup, policy_name, seed, run);
  if (!start) return start.error();
  scheduling::Ledger& ledger = start->ledger;
  const std::vector<std::string>& order = start->order;
  std::vector<const scheduling::NodeState*> nodes;
  for (const auto& name : order) nodes.push_back(ledger.node(name));
  scheduling::FitOptions fit;
  fit.check_node_resources = true;
  scheduling::Scheduler scheduler(ledger, *start->policy, fit, order);

  // The plan's pods as requests, with a small id per demand (a waiting pod
  // whose demand did not fit a node does not fit it for the next one either).
  const size_t n = plan.pods.size();
  std::vector<scheduling::PodRequest> requests(n);
  std::vector<uint32_t> demand(n);
  {
    std::unordered_map<std::string, uint32_t> ids;
    for (size_t i = 0; i < n; ++i) {
      requests[i] = to_pod_request(setup.arrivals[plan.pods[i].index]);
      demand[i] = ids.emplace(scheduling::demand_key(requests[i]), static_cast<uint32_t>(ids.size())).first->second;
    }
  }
  std::vector<uint64_t> failed_at(n, 0);  // per demand id: the retry round it last failed in
  uint64_t round = 0;

  DynamicResult r;
  r.policy = policy_name;
  r.seed = seed;
  r.plan = plan;
  r.plan.pods.clear();
  r.arrivals = n;
  const double window = plan.window_seconds;
  const double capacity = 1000.0 * static_cast<double>(setup.total_gpus);

  // The curves: FGD's fragmentation against the trace's typical pods, per
  // node, recomputed when a node changes.
  scheduling::FragmentationModel metric(*setup.typical);
  std::vector<double> frag(nodes.size(), 0);
  std::vector<uint64_t> seen(nodes.size(), UINT64_MAX);
  const int samples = std::max(2, options.samples);
  int next_sample = 0;
  double waiting_gpu = 0;
  auto sample_until = [&](double t) {
    for (; next_sample < samples; ++next_sample) {
      const double at = window * next_sample / (samples - 1);
      if (at >= t) return;
      double total = 0;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (seen[i] != nodes[i]->version()) {
          frag[i] = metric.frag(*nodes[i]);
          seen[i] = nodes[i]->version();
        }
        total += frag[i];
      }
      r.samples.push_back({at, 100.0 * static_cast<double>(ledger.total_cores_used()) / capacity, 100.0 * total / capacity,
                           100.0 * waiting_gpu / capacity});
    }
  };

  // Events: departures before arrivals at the same time (room first).
  using Departure = std::pair<double, size_t>;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  std::vector<size_t> waiting;  // FIFO; placed entries marked and swept
  size_t swept = 0;
  std::vector<double> pending;
  pending.reserve(n);
  double allocated_time = 0, clock = 0;
  auto advance = [&](double t) {
    sample_until(t);
    const double until = std::min(t, window);
    if (until > clock) allocated_time += static_cast<double>(ledger.total_cores_used()) * (until - clock);
    clock = std::max(clock, t);
  };
  auto started = [&](size_t i, double now) {
    pending.push_back(now - plan.pods[i].arrival);
    // It runs as long as it would have from its arrival.
    if (plan.pods[i].departure < kForever) departures.emplace(now + (plan.pods[i].departure - plan.pods[i].arrival), i);
  };

  const auto t0 = std::chrono::steady_clock::now();
  size_t next = 0;
  while (next < n || !departures.empty()) {
    const bool leave = !departures.empty() && (next >= n || departures.top().first <= plan.pods[next].arrival);
    if (leave) {
      const auto [now, i] = departures.top();
      departures.pop();
      advance(now);
      const scheduling::PodRecord* record = ledger.pod(requests[i].uid);
      if (record == nullptr) continue;
      const scheduling::NodeState* node = ledger.node(record->node);
      ledger.remove(requests[i].uid);
      if (node == nullptr || waiting.size() == swept) continue;
      // Only this node changed since the waiting pods last fit nowhere: each
      // is tried there, first come first served.
      ++round;
      for (size_t& w : waiting) {
        if (w == SIZE_MAX || failed_at[demand[w]] == round) continue;
        scheduling::Decision d;
        if (scheduling::fits(requests[w], *node, fit)) d = scheduler.schedule_on(requests[w], *node);
        if (!d.placed) {
          failed_at[demand[w]] = round;
          continue;
        }
        waiting_gpu -= static_cast<double>(plan.pods[w].gpu_milli);
        ++r.waited;
        started(w, now);
        w = SIZE_MAX;
        ++swept;
      }
      if (swept > 64 && swept * 2 > waiting.size()) {
        std::erase(waiting, SIZE_MAX);
        swept = 0;
      }
      continue;
    }
    const size_t i = next++;
    const double now = plan.pods[i].arrival;
    advance(now);
    scheduler.arrived(requests[i]);
    const scheduling::Decision d = scheduler.schedule(requests[i]);
    if (d.placed) {
      started(i, now);
    } else {
      waiting.push_back(i);
      waiting_gpu += static_cast<double>(plan.pods[i].gpu_milli);
    }
  }
  advance(std::max(window, clock) + 1);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.placed = pending.size();
  r.never_placed = n - r.placed;
  r.unallocated_gpu_time_percent = window > 0 ? 100.0 * (1.0 - allocated_time / (capacity * window)) : 0;
  if (!pending.empty()) {
    double sum = 0;
    for (double p : pending) sum += p;
    r.pending_seconds_mean = sum / static_cast<double>(pending.size());
    r.pending_seconds_p50 = percentile(pending, 0.50);
    r.pending_seconds_p99 = percentile(pending, 0.99);
  }
  return r;
}

}  // namespace fracpack::replay
