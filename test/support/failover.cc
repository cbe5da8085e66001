#include "test/support/failover.h"

#include <signal.h>

#include <algorithm>
#include <deque>
#include <future>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "scheduling/model.h"
#include "scheduling/quota.h"
#include "test/support/server_fixture.h"
#include "test/support/soak_profile.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kCardMiB = 16384;

// The ResourceQuotas of namespace team-<i>: one of four shapes, so every
// key is exercised alone and two objects hold at once. Tighter than the
// cluster (16 nodes x 4 cards: ten namespaces may hold about 27 cards'
// worth), so quota, not capacity, is what mostly refuses.
struct QuotaObject {
  std::string name;
  std::map<std::string, std::string> hard;
};
std::vector<QuotaObject> quota_objects(int i) {
  switch (i % 4) {
    case 0: return {{"gpu-cards", {{"limits.fracpack.io/gpu", "3"}}}};
    case 1: return {{"gpu-memory", {{"limits.fracpack.io/gpu-memory", "32768"}}}};
    case 2: return {{"gpu-cores", {{"limits.fracpack.io/gpu-cores", "250"}}}};
    default:
      return {{"gpu-cards", {{"limits.fracpack.io/gpu", "4"}}},
              {"gpu-share", {{"limits.fracpack.io/gpu-memory", "49152"}, {"limits.fracpack.io/gpu-cores", "300"}}}};
  }
}

scheduling::QuotaResource resource_of(const std::string& key) {
  if (key.ends_with("/gpu-memory")) return scheduling::QuotaResource::kMemoryMib;
  if (key.ends_with("/gpu-cores")) return scheduling::QuotaResource::kCoresPercent;
  return scheduling::QuotaResource::kCards;
}

bool names_a_quota(const std::string& reason) { return reason.find("exceeds ResourceQuota") != std::string::npos; }

// One fracpack replica: its process, port and scheduler-driver connection.
struct Replica {
  uint16_t port = free_loopback_port();
  std::string config;
  std::unique_ptr<FracpackProcess> process;
  std::unique_ptr<SchedulerDriver> driver;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string earlier_logs;  // of the processes killed so far
  std::string logs() const { return earlier_logs + (process ? process->log() : ""); }
  void start() {
    if (process) earlier_logs += process->log();
    process = std::make_unique<FracpackProcess>(std::vector<std::string>{"serve", "--config", config});
    driver = driver_for(url());
  }
  bool wait_ready(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (http_get(url(), "/readyz").status == 200) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

struct InFlight {
  std::string ns, name;
  std::chrono::steady_clock::time_point sent;
  std::future<Status> done;
};

class Failover {
 public:
  explicit Failover(const FailoverOptions& o) : o_(o), rng_(o.seed) {}

  FailoverReport run() {
    const auto start = std::chrono::steady_clock::now();
    candidates_ = profile_->create_nodes(api_, o_.nodes, o_.cards);
    api_.create("pods", bind_fence_marker_pod());
    for (int i = 0; i < o_.quota_namespaces; ++i) {
      const std::string ns = "team-" + std::to_string(i);
      namespaces_.push_back(ns);
      r_.namespaces[ns];
      for (const QuotaObject& q : quota_objects(i)) {
        api_.create("resourcequotas", resource_quota(ns, q.name, q.hard));
        for (const auto& [key, value] : q.hard) r_.quota_rows.push_back(QuotaRow{ns, q.name, key, std::stoll(value)});
      }
    }
    if (namespaces_.empty()) namespaces_.push_back("default");
    for (auto& r : replicas_) {
      // (The key is left out at its default: an older fracpack, run for a
      // before/after comparison, may not know it.)
      r.config = process_config(dir_, api_.url(), r.port, o_.assume_ttl, o_.reconcile_interval,
                                o_.bind_fence_read == k8s::BindFenceRead::kAuto
                                    ? ""
                                    : "bindFenceRead: \"" + std::string(k8s::bind_fence_read_name(o_.bind_fence_read)) + "\"\n");
      r.start();
    }
    for (auto& r : replicas_) {
      if (!r.wait_ready(60s)) note("replica on port " + std::to_string(r.port) + " did not become ready:\n" + r.process->log());
    }
    api_.faults().cut_event_permille = o_.watch_cut_permille;
    api_.faults().slow_permille = o_.slow_permille;
    api_.faults().slow_ms = o_.slow_ms;
    const uint64_t switch_every = o_.operations / static_cast<uint64_t>(o_.failovers + 1);
    std::uniform_real_distribution<double> unit(0, 1);
    for (r_.operations = 0; r_.operations < o_.operations; ++r_.operations) {
      const double x = unit(rng_);
      if (x < o_.create_share) {
        create_pod();
      } else if (x < o_.create_share + o_.delete_share) {
        delete_pod();
      } else {
        schedule_one();
      }
      if (switch_every > 0 && r_.operations % switch_every == switch_every - 1 &&
          r_.failovers < static_cast<uint64_t>(o_.failovers)) {
        fail_over();
      }
      if (o_.quota_namespaces > 0 && r_.operations % std::max<uint64_t>(1, o_.quota_sample_every) == 0) {
        over_quota("at op " + std::to_string(r_.operations));
      }
      if (o_.pause.count() > 0) std::this_thread::sleep_for(o_.pause);
    }
    drain_binds();
    api_.faults().clear();
    count_fracpack_metrics();
    r_.overcommitted_at_end = overcommitted("at the end");
    r_.overcommitted_max = std::max(r_.overcommitted_max, r_.overcommitted_at_end);
    if (o_.quota_namespaces > 0) {
      r_.over_quota_at_end = over_quota("at the end");
      for (QuotaRow& row : r_.quota_rows) row.at_end = row_use_.at(&row - r_.quota_rows.data());
    }
    for (const std::string& ns : namespaces_) {
      r_.bindings_posted += static_cast<uint64_t>(api_.requests("POST /api/v1/namespaces/" + ns + "/pods/"));
      if (o_.quota_namespaces > 0) {
        r_.namespace_reads += static_cast<uint64_t>(api_.requests("GET /api/v1/namespaces/" + ns + "/pods") -
                                                    api_.requests("GET /api/v1/namespaces/" + ns + "/pods/"));
      }
    }
    r_.fence_reads = static_cast<uint64_t>(api_.requests("GET /api/v1/pods?limit=1") +
                                           api_.requests("PATCH /api/v1/namespaces/fracpack-system/pods/fracpack-bind-fence"));
    r_.node_reads = static_cast<uint64_t>(api_.requests("GET /api/v1/pods?fieldSelector=spec.nodeName="));
    r_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (const char* keep = std::getenv("FAILOVER_KEEP_LOGS")) {
      for (size_t i = 0; i < 2; ++i) dir_.write("/../" + std::string(keep) + "." + std::to_string(i), replicas_[i].logs());
    }
    return r_;
  }

 private:
  Replica& active() { return replicas_[active_]; }

  void note(const std::string& what) {
    if (o_.verbose) std::fprintf(stderr, "op %llu: %s\n", static_cast<unsigned long long>(r_.operations), what.c_str());
    if (r_.samples.size() < 20) r_.samples.push_back("op " + std::to_string(r_.operations) + ": " + what);
  }

  void create_pod() {
    const std::string& ns = namespaces_[std::uniform_int_distribution<size_t>(0, namespaces_.size() - 1)(rng_)];
    pending_.push_back({ns, profile_->create_random_pod(api_, next_, rng_, ns)});
    ++r_.created;
    if (o_.quota_namespaces > 0) ++r_.namespaces[ns].created;
  }

  void delete_pod() {
    if (delete_random_pod(api_, rng_)) ++r_.deleted;
  }

  // One kube-scheduler cycle on the active replica; the bind goes out
  // asynchronously, with at most binds_in_flight outstanding.
  void schedule_one() {
    reap_binds(false);
    while (!pending_.empty()) {
      const size_t i = std::uniform_int_distribution<size_t>(0, pending_.size() - 1)(rng_);
      // (Named copies, not a structured binding: clang 14 cannot capture one.)
      const std::string ns = pending_[i].first, name = pending_[i].second;
      auto text = api_.get("pods", ns, name);
      const bool in_flight = std::any_of(inflight_.begin(), inflight_.end(), [&](const InFlight& f) { return f.name == name; });
      if (!text || json::parse(*text)["spec"].contains("nodeName")) {
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;  // deleted or bound meanwhile
      }
      if (in_flight) return;  // kube-scheduler has it assumed
      ++r_.cycles;
      CycleResult c = active().driver->schedule(*text, candidates_);
      if (!c.error.empty()) {
        ++r_.cycle_errors;
        return;
      }
      if (c.node.empty()) {
        ++r_.unschedulable;
        if (o_.quota_namespaces > 0 && std::any_of(c.filter.failed.begin(), c.filter.failed.end(), [](const auto& f) { return names_a_quota(f.second); })) {
          ++r_.namespaces[ns].refused_by_filter;
          if (refused_.insert(ns + "/" + name).second) ++r_.namespaces[ns].pods_refused;
        }
        return;
      }
      while (inflight_.size() >= static_cast<size_t>(std::max(1, o_.binds_in_flight))) reap_binds(true);
      inflight_.push_back(InFlight{ns, name, std::chrono::steady_clock::now(), active().driver->bind_async(ns, name, "u-" + name, c.node)});
      return;
    }
  }

  void settle(InFlight& f) {
    const Status s = f.done.get();
    r_.bind_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - f.sent).count());
    if (s.ok()) {
      ++r_.placed;
      if (o_.quota_namespaces > 0) ++r_.namespaces[f.ns].placed;
    } else {
      ++r_.bind_failures;
      if (o_.quota_namespaces > 0 && names_a_quota(s.message())) {
        ++r_.namespaces[f.ns].refused_by_bind;
        if (refused_.insert(f.ns + "/" + f.name).second) ++r_.namespaces[f.ns].pods_refused;
      }
    }
  }

  // Collects finished binds; with `one`, waits for the oldest.
  void reap_binds(bool one) {
    if (one && !inflight_.empty()) {
      settle(inflight_.front());
      inflight_.pop_front();
    }
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (it->done.wait_for(0s) != std::future_status::ready) {
        ++it;
        continue;
      }
      settle(*it);
      it = inflight_.erase(it);
    }
  }

  void drain_binds() {
    while (!inflight_.empty()) reap_binds(true);
    for (auto& f : orphaned_) f.done.wait();
  }

  // kube-scheduler's lease moves to the other replica. Its binds already
  // sent complete (or die with the old process); the new leader knows
  // nothing of them and may schedule those pods again.
  void fail_over() {
    Replica& old = active();
    if (o_.kill_old_leader) {
      // A bind in flight at the kill, as often as one can be had.
      // (A cycle may find the pod unschedulable: try a few.)
      for (int tries = 0; tries < 8 && inflight_.empty(); ++tries) schedule_one();
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 2000)(rng_)));
      if (!inflight_.empty()) ++r_.killed_mid_bind;
      count_metrics_of(old);
      old.process->stop(SIGKILL);
    }
    for (auto& f : inflight_) orphaned_.push_back(std::move(f));
    inflight_.clear();
    if (o_.lease_handover) {
      const auto handover = std::chrono::steady_clock::now() + 5s;
      for (auto& f : orphaned_) f.done.wait_until(handover);
    }
    if (o_.kill_old_leader) old.start();  // the standby now; not waited for
    active_ = 1 - active_;
    ++r_.failovers;
    if (!active().wait_ready(60s)) note("the new leader is not ready:\n" + active().process->log());
    const uint64_t now = overcommitted("after failover " + std::to_string(r_.failovers));
    r_.overcommitted_max = std::max(r_.overcommitted_max, now);
    if (o_.quota_namespaces > 0) over_quota("after failover " + std::to_string(r_.failovers));
  }

  // Quota limits the annotations exceed now: each namespace's use summed
  // from its bound pods' records as the quota counts them (the cards the
  // records name, not fracpack's counters).
  uint64_t over_quota(const std::string& when) {
    std::map<std::string, scheduling::QuotaUse> use;
    std::map<std::string, std::vector<std::string>> pods;
    for (const RecordedPod& p : recorded_pods(api_, profile_->contract())) {
      if (p.record.kind != k8s::RecordedAllocation::Kind::kAllocation) continue;
      use[p.pod.meta.namespace_name] += scheduling::quota_use(p.record.allocation);
      pods[p.pod.meta.namespace_name].push_back(p.pod.meta.name);
    }
    row_use_.resize(r_.quota_rows.size());
    uint64_t n = 0;
    for (size_t i = 0; i < r_.quota_rows.size(); ++i) {
      QuotaRow& row = r_.quota_rows[i];
      const int64_t used = scheduling::quota_amount(use[row.ns], resource_of(row.key));
      row_use_[i] = used;
      row.max_seen = std::max(row.max_seen, used);
      if (used <= row.hard) continue;
      ++n;
      std::string names;
      for (const auto& name : pods[row.ns]) names += " " + name;
      note(when + ": namespace " + row.ns + " uses " + std::to_string(used) + " of " + row.object + " " + row.key + ", hard " +
           std::to_string(row.hard) + ":" + names);
    }
    ++r_.quota_samples;
    r_.over_quota_max = std::max(r_.over_quota_max, n);
    return n;
  }

  // Cards the annotations over-commit now.
  uint64_t overcommitted(const std::string& when) {
    uint64_t n = 0;
    for (const auto& [card, use] : annotated_use(api_).cards) {
      if (use.cores_milli <= scheduling::kCardMilli && use.memory_mib <= kCardMiB) continue;
      ++n;
      std::string pods;
      for (const auto& p : use.pods) pods += " " + p;
      if (r_.samples.size() < 20) {
        r_.samples.push_back(when + ": " + card.first + " card " + std::to_string(card.second) + " holds " +
                             std::to_string(use.cores_milli) + " milli, " + std::to_string(use.memory_mib) + " MiB:" + pods +
                             (o_.verbose ? history_of(use.pods) : ""));
      }
    }
    return n;
  }

  // What each replica's log says of these pods (namespace/name).
  std::string history_of(const std::vector<std::string>& keys) const {
    std::string out;
    for (size_t i = 0; i < 2; ++i) {
      std::istringstream log(replicas_[i].logs());
      for (std::string line; std::getline(log, line);) {
        for (const auto& key : keys) {
          if (line.find("\"" + key + "\"") != std::string::npos) out += "\n    replica " + std::to_string(i) + ": " + line.substr(0, 400);
        }
      }
    }
    return out;
  }

  void count_metrics_of(const Replica& r) {
    const double n = metric_sum(r.url(), "fracpack_bind_fence_caught_up_total");
    if (o_.verbose) std::fprintf(stderr, "op %llu: %s caught up %g\n", static_cast<unsigned long long>(r_.operations), r.url().c_str(), n);
    r_.fence_caught_up += n;
    r_.marker_fallbacks += metric_sum(r.url(), "fracpack_bind_fence_marker_fallbacks_total");
  }

  void count_fracpack_metrics() {
    for (const auto& r : replicas_) {
      count_metrics_of(r);
      r_.reported_overcommitted = std::max(r_.reported_overcommitted, metric_sum(r.url(), "fracpack_overcommitted_cards"));
    }
  }

  FailoverOptions o_;
  std::mt19937_64 rng_;
  FakeApiServer api_;
  TempDir dir_;
  Replica replicas_[2];
  size_t active_ = 0;
  const std::unique_ptr<SoakProfile> profile_ = SoakProfile::make("fracpack", kCardMiB);
  std::vector<CandidateNode> candidates_;
  std::vector<std::string> namespaces_;                 // where pods are created
  std::vector<std::pair<std::string, std::string>> pending_;  // namespace, name
  std::vector<int64_t> row_use_;                        // per quota row, at the last sample
  std::set<std::string> refused_;                       // namespace/name refused for a quota at least once
  std::deque<InFlight> inflight_;
  std::vector<InFlight> orphaned_;  // sent to an old leader before a failover
  uint64_t next_ = 0;
  FailoverReport r_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

std::string FailoverReport::summary() const {
  std::ostringstream s;
  const double per_bind = placed > 0 ? 1.0 / static_cast<double>(placed) : 0;
  s << operations << " operations in " << seconds << " s: " << created << " pods created, " << deleted << " deleted, " << cycles
    << " cycles (" << placed << " placed, " << unschedulable << " unschedulable, " << bind_failures << " binds refused or failed, "
    << cycle_errors << " cycles failed), " << failovers << " failovers (" << killed_mid_bind << " killed with a bind in flight); "
    << "over-committed cards: " << overcommitted_at_end << " at the end, " << overcommitted_max << " at most after a failover; "
    << "bind p50 " << percentile(bind_ms, 0.5) << " ms, p99 " << percentile(bind_ms, 0.99) << " ms; per placed pod: "
    << static_cast<double>(bindings_posted) * per_bind << " Bindings, " << static_cast<double>(fence_reads) * per_bind
    << " freshness reads, " << static_cast<double>(node_reads) * per_bind << " node reads (" << marker_fallbacks << " consistent for want of the marker); the fences caught up "
    << fence_caught_up << " pods the watch had not delivered; reconcilers report " << reported_overcommitted << " over-committed cards";
  return s.str();
}

std::string FailoverReport::quota_table() const {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-10s %-28s %7s %6s %7s %8s %6s %9s %9s %6s\n", "ns", "object", "key", "created", "bound", "refused",
                "refusals", "(bind)", "max seen", "at end", "hard");
  s << line;
  for (const QuotaRow& row : quota_rows) {
    const auto it = namespaces.find(row.ns);
    const NamespaceCounts c = it == namespaces.end() ? NamespaceCounts{} : it->second;
    std::snprintf(line, sizeof line, "%-8s %-10s %-28s %7llu %6llu %7llu %8llu %6llu %9lld %9lld %6lld%s\n", row.ns.c_str(), row.object.c_str(),
                  row.key.c_str(), static_cast<unsigned long long>(c.created), static_cast<unsigned long long>(c.placed),
                  static_cast<unsigned long long>(c.pods_refused),
                  static_cast<unsigned long long>(c.refused_by_filter + c.refused_by_bind), static_cast<unsigned long long>(c.refused_by_bind),
                  static_cast<long long>(row.max_seen), static_cast<long long>(row.at_end), static_cast<long long>(row.hard),
                  row.max_seen > row.hard ? "  OVER" : "");
    s << line;
  }
  s << "namespace reads per placed pod (the quota's fence): " << (placed > 0 ? static_cast<double>(namespace_reads) / static_cast<double>(placed) : 0)
    << "; " << quota_samples << " samples of the annotations; limits exceeded: " << over_quota_max << " at most at one sample, " << over_quota_at_end
    << " at the end\n";
  return s.str();
}

FailoverReport run_failover(const FailoverOptions& options) { return Failover(options).run(); }

}  // namespace fracpack::testing
