#include "test/support/chaos.h"

#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <future>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "k8s/objects.h"
#include "scheduling/fit.h"
#include "test/support/server_fixture.h"
#include "test/support/soak_profile.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class Chaos {
 public:
  explicit Chaos(const ChaosOptions& o) : o_(o), rng_(o.seed), profile_(SoakProfile::make(o.profile, kCardMiB)) {}

  ChaosReport run() {
    const auto start = std::chrono::steady_clock::now();
    candidates_ = profile_->create_nodes(api_, o_.nodes, o_.cards);
    api_.create("pods", bind_fence_marker_pod());
    config_ = process_config(dir_, api_.url(), port_, o_.assume_ttl, o_.reconcile_interval, "", profile_->config_keys());
    start_fracpack();
    std::uniform_real_distribution<double> unit(0, 1);
    for (r_.operations = 0; r_.operations < o_.operations; ++r_.operations) {
      const double x = unit(rng_);
      end_slow_faults();
      if (x < o_.fault_rate) {
        inject_fault();
      } else if (x < o_.fault_rate + o_.disruption_rate) {
        disrupt_watches();
      } else if (x < o_.fault_rate + o_.disruption_rate + 0.20) {
        create_pod();
      } else if (x < o_.fault_rate + o_.disruption_rate + 0.40) {
        delete_pod();
      } else {
        schedule_one();
      }
      if (o_.restart_every && r_.operations % o_.restart_every == o_.restart_every - 1) restart();
      // A few operations run while the new process starts; then wait for it.
      if (ready_wait_at_ && r_.operations >= ready_wait_at_) {
        start_fracpack_wait();
        ready_wait_at_ = 0;
      }
      if (r_.operations % o_.check_every == o_.check_every - 1) check(false);
      if (o_.verbose && r_.operations % 10000 == 9999) std::fprintf(stderr, "%s\n", r_.summary().c_str());
    }
    quiesce();
    check(true);
    count_informer_work();
    r_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r_;
  }

 private:
  static constexpr int64_t kCardMiB = 16384;

  void violation(const std::string& what) {
    ++r_.violations;
    if (o_.verbose && r_.violations <= 50) std::fprintf(stderr, "violation at op %llu: %s\n", static_cast<unsigned long long>(r_.operations), what.c_str());
    if (r_.samples.size() < 20) r_.samples.push_back("op " + std::to_string(r_.operations) + ": " + what);
  }

  // `wait`: until ready; else the run goes on while it starts (cycles then
  // fail as kube-scheduler's would, and are retried later).
  void start_fracpack(bool wait = true) {
    process_ = std::make_unique<FracpackProcess>(std::vector<std::string>{"serve", "--config", config_});
    driver_ = driver_for("http://127.0.0.1:" + std::to_string(port_));
    if (!wait) return;
    // Ready: the initial lists applied (faults may delay it).
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (http_get(url(), "/readyz").status == 200) return;
      if (!process_->running()) break;
      std::this_thread::sleep_for(20ms);
    }
    violation("fracpack did not become ready after a start (exit " + std::to_string(process_->exit_code()) + "):\n" + tail(process_->log()));
  }

  std::string last_requests() const {
    const auto log = api_.request_log();
    std::string out;
    for (size_t i = log.size() > 8 ? log.size() - 8 : 0; i < log.size(); ++i) out += log[i] + " | ";
    return out;
  }

  // Adds what the running process's informers have applied so far.
  void count_informer_work() {
    r_.watch_events += static_cast<uint64_t>(metric_sum(url(), "fracpack_informer_events_total{"));
    r_.lists += static_cast<uint64_t>(metric_sum(url(), "fracpack_informer_lists_total{"));
  }

  static std::string tail(const std::string& log) { return log.size() > 2000 ? log.substr(log.size() - 2000) : log; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // SIGKILL, often with a bind in flight (the Binding may or may not have
  // reached the API server: the new process must rebuild either way), then
  // a new process the run does not wait for.
  void restart() {
    if (!process_->running()) violation("fracpack ended by itself (exit " + std::to_string(process_->exit_code()) + "):\n" + tail(process_->log()));
    std::future<Status> inflight;
    for (int tries = 0; tries < 10 && !inflight.valid(); ++tries) {
      if (tries > 0) delete_pod();  // a full cluster: make room
      if (pending_.empty()) create_pod();
      const std::string name = pending_[std::uniform_int_distribution<size_t>(0, pending_.size() - 1)(rng_)];
      auto text = api_.get("pods", "default", name);
      if (!text) continue;
      CycleResult c = driver_->schedule(*text, candidates_);
      if (c.node.empty()) continue;
      inflight = driver_->bind_async("default", name, "u-" + name, c.node);
      if (o_.verbose) std::fprintf(stderr, "op %llu: SIGKILL with the bind of %s to %s in flight\n", static_cast<unsigned long long>(r_.operations), name.c_str(), c.node.c_str());
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng_)));
    }
    count_informer_work();
    process_->stop(SIGKILL);
    earlier_logs_ += process_->log();
    if (inflight.valid()) {
      ++r_.killed_mid_bind;
      inflight.wait();
    }
    ++r_.restarts;
    start_fracpack(false);
    started_at_ = std::chrono::steady_clock::now();
    ready_wait_at_ = r_.operations + 25;
  }

  void create_pod() {
    pending_.push_back(profile_->create_random_pod(api_, next_, rng_));
    ++r_.created;
  }

  void delete_pod() {
    auto deleted = delete_random_pod(api_, rng_);
    if (!deleted) return;
    if (deleted->was_bound) deleted_bound_at_[deleted->key] = std::chrono::steady_clock::now();
    ++r_.deleted;
  }

  void schedule_one() {
    while (!pending_.empty()) {
      std::uniform_int_distribution<size_t> pick(0, pending_.size() - 1);
      const size_t i = pick(rng_);
      const std::string name = pending_[i];
      auto text = api_.get("pods", "default", name);
      if (!text || json::parse(*text)["spec"].contains("nodeName")) {
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;  // deleted or bound meanwhile
      }
      ++r_.cycles;
      CycleResult c = driver_->schedule(*text, candidates_);
      if (!c.error.empty()) {
        ++r_.cycle_errors;  // fracpack down or an injected fault: kube-scheduler retries later
        return;
      }
      if (c.node.empty()) {
        ++r_.unschedulable;
        return;
      }
      Status s = driver_->bind("default", name, "u-" + name, c.node);
      if (s.ok()) {
        ++r_.placed;
        r_.admitted += profile_->admit(api_, c.node);  // kubelet starts it
      } else {
        ++r_.bind_failures;
      }
      return;
    }
  }

  // Faults come in bursts, not backlogs: a fault is armed only if the same
  // kind is not already waiting (and counted only then). Counters that only
  // grew, consumed by a process that makes few requests of that kind, left
  // hundreds of closed watches and 429s waiting: a restarted fracpack's
  // lists were throttled for over a minute.
  void inject_fault() {
    Faults& f = api_.faults();
    switch (std::uniform_int_distribution<int>(0, 5)(rng_)) {
      case 0: arm(f.conflict_bindings, 1, "binding 409"); break;
      case 1: arm(f.fail_bindings, 1, "binding 500"); break;
      case 2: arm(f.drop_binding_response, 1, "binding answer lost"); break;
      case 3: arm(f.fail_gets, 1, "GET 500"); break;
      case 4:
        if (f.slow_ms == 0) ++r_.faults["slow answers"];
        f.slow_ms = 50;
        slow_until_ = r_.operations + 20;
        break;
      default:
        if (f.event_delay_ms == 0) ++r_.faults["watch events late"];
        f.event_delay_ms = 200;
        slow_until_ = r_.operations + 20;
        break;
    }
  }

  // Anything that can end a watch. A watch cut before its first event
  // counts as a failure (client-go's "very short watch"): backoff, relist.
  void disrupt_watches() {
    Faults& f = api_.faults();
    switch (std::uniform_int_distribution<int>(0, 5)(rng_)) {
      case 0: arm(f.close_watches, 1, "watch closed"); break;
      case 1: arm(f.expire_watches, 1, "watch 410"); break;
      case 2: api_.compact(); arm(f.expire_lists, 1, "history compacted, list 410"); break;
      case 3: arm(f.throttle, 2, "429"); break;
      case 4: arm(f.drop_mid_event, 1, "watch cut mid-event"); break;
      default: api_.close_watches(); ++r_.faults["all watches closed"]; break;
    }
  }

  void arm(std::atomic<int>& counter, int n, const char* what) {
    if (at_least(counter, n)) ++r_.faults[what];
  }

  // Raises counter to n; false if it was there already.
  static bool at_least(std::atomic<int>& counter, int n) {
    int v = counter.load();
    while (v < n) {
      if (counter.compare_exchange_weak(v, n)) return true;
    }
    return false;
  }

  void end_slow_faults() {
    if (slow_until_ && r_.operations >= slow_until_) {
      api_.faults().slow_ms = 0;
      api_.faults().event_delay_ms = 0;
      slow_until_ = 0;
    }
  }

  // "Bound once": a pod's node and record never change. Per card, the
  // records of the bound, live pods fit the card.
  void check_annotations() {
    for (const auto& text : api_.list("pods")) {
      const json p = json::parse(text);
      const std::string node = p["spec"].value("nodeName", ""), phase = p["status"].value("phase", "");
      if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
      const auto now = std::make_pair(node, profile_->fixed_record(p));
      auto [it, inserted] = bound_.emplace(p["metadata"]["uid"].get<std::string>(), now);
      if (!inserted && it->second != now) {
        violation("pod " + p["metadata"]["name"].get<std::string>() + " bound twice or its record changed: " + it->second.first + " " +
                  it->second.second + " -> " + now.first + " " + now.second);
      }
    }
    const AnnotatedUse use = annotated_use(api_, profile_->contract());
    for (const auto& key : use.unrecorded) violation("bound GPU pod " + key + " without an allocation record");
    for (const auto& key : use.bad_records) violation("allocation record of " + key + " malformed or naming another node");
    for (const auto& [card, u] : use.cards) {
      if (u.cores_milli > scheduling::kCardMilli || u.memory_mib > kCardMiB) {
        violation(card.first + " card " + std::to_string(card.second) + " over-committed by the annotations: " + explain_card(u));
      }
    }
  }


  // Past its TTL a reservation may stay while its pod is bound there (the
  // watch lags); a leak is one whose pod is not.
  bool bound_in_api(const std::string& key, const std::string& node) const {
    const size_t slash = key.find('/');
    auto text = api_.get("pods", key.substr(0, slash), key.substr(slash + 1));
    return text && json::parse(*text)["spec"].value("nodeName", "") == node;
  }

  // For a violation: the pods whose records charge a card, and what
  // fracpack's logs (of every process so far) say of them.
  std::string explain_card(const AnnotatedCard& card) const {
    std::string out = std::to_string(card.cores_milli) + " milli, " + std::to_string(card.memory_mib) + " MiB charged by";
    for (const auto& key : card.pods) out += " " + key;
    return out + history_of(card.pods);
  }

  // What fracpack's logs (every process so far) and the API server's last
  // requests say of these pods (namespace/name).
  std::string history_of(const std::vector<std::string>& keys) const {
    std::string out = "; fracpack's log of them:";
    std::istringstream log(earlier_logs_ + process_->log());
    for (std::string line; std::getline(log, line);) {
      for (const auto& key : keys) {
        if (line.find("\"" + key + "\"") != std::string::npos) out += "\n    " + line.substr(0, 300);
      }
    }
    out += "\n  the API server's last requests about them:";
    for (const auto& request : api_.request_log()) {
      for (const auto& key : keys) {
        const std::string name = key.substr(key.find('/') + 1);
        if (request.find("/pods/" + name + "/") != std::string::npos || request.ends_with("/pods/" + name)) out += "\n    " + request;
      }
    }
    return out;
  }


  // fracpack's own ledger: no card over-committed, no reservation past its
  // TTL beyond one expiry pass.
  std::optional<json> check_ledger() {
    auto r = http_get(url(), "/debug/ledger");
    if (r.status != 200) return std::nullopt;  // down (being restarted) or syncing
    json ledger = json::parse(r.body);
    const int64_t slack = o_.reconcile_interval.count() + o_.ttl_slack.count();
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(deleted_bound_at_, [&](const auto& d) { return now - d.second > o_.assume_ttl + 60s; });
    for (const auto& node : ledger["nodes"]) {
      for (const auto& card : node["cards"]) {
        if (card["computeUsedMilli"].get<int64_t>() > card["computeMilli"].get<int64_t>() ||
            card["memoryUsedMiB"].get<int64_t>() > card["memoryMiB"].get<int64_t>()) {
          std::string holders;
          std::vector<std::string> keys;
          for (const auto& key : card["pods"]) {
            keys.push_back(key.get<std::string>());
            for (const auto& pod : node["pods"]) {
              if (pod["pod"] == key) holders += " " + key.get<std::string>() + " (" + pod["phase"].get<std::string>() + ")";
            }
          }
          violation(node["name"].get<std::string>() + " card " + card["index"].dump() + " over-committed in the ledger: " +
                    card["computeUsedMilli"].dump() + " milli, " + card["memoryUsedMiB"].dump() + " MiB held by" + holders +
                    history_of(keys));
        }
      }
      for (const auto& pod : node["pods"]) {
        if (!pod.contains("expiresInMs") || pod["expiresInMs"].get<int64_t>() >= -slack || bound_in_api(pod["pod"], node["name"])) continue;
        // Past its TTL and not bound (any more): overdue since the TTL, or
        // since the pod was deleted while bound, whichever came later (until
        // then it was rightly kept: the watch may lag).
        const std::string key = pod["pod"];
        int64_t overdue = -pod["expiresInMs"].get<int64_t>();
        if (auto d = deleted_bound_at_.find(key); d != deleted_bound_at_.end()) {
          overdue = std::min<int64_t>(overdue, std::chrono::duration_cast<std::chrono::milliseconds>(now - d->second).count());
        }
        if (overdue > slack) {
          violation("reservation of " + key + " is " + std::to_string(-pod["expiresInMs"].get<int64_t>()) + " ms past its TTL, " +
                    std::to_string(overdue) + " ms overdue (faults pending: " + api_.faults().pending() + ")" + history_of({key}));
        }
      }
    }
    return ledger;
  }

  void start_fracpack_wait() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (http_get(url(), "/readyz").status != 200) {
      if (!process_->running() || std::chrono::steady_clock::now() > deadline) {
        std::string informers;
        for (const auto& line : split_lines(http_get(url(), "/metrics").body)) {
          if (line.rfind("fracpack_informer_", 0) == 0) informers += line + "; ";
        }
        const auto api_probe = http_get(api_.url(), "/version");
        violation("fracpack did not become ready after a restart (running: " + std::to_string(process_->running()) + ", /readyz: " +
                  http_get(url(), "/readyz").body + ", API server /version: " + std::to_string(api_probe.status) + ", open watches " +
                  std::to_string(api_.open_watches()) + ", connections " + std::to_string(api_.connections()) + ", informers: " + informers +
                  ", the API server's last requests: " + last_requests() + ", faults pending: " + api_.faults().pending() +
                  "):\n" + tail(process_->log()));
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    r_.max_ready_seconds = std::max(r_.max_ready_seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count());
  }

  void check(bool final) {
    ++r_.checks;
    // kubelet admits what was bound while the driver did not hear of it (a
    // lost answer, a bind in flight at a kill).
    for (const CandidateNode& n : candidates_) r_.admitted += profile_->admit(api_, n.name);
    if (!process_->running()) {
      violation("fracpack ended by itself (exit " + std::to_string(process_->exit_code()) + "):\n" + tail(process_->log()));
      start_fracpack();
    }
    check_annotations();
    auto ledger = check_ledger();
    if (!final) return;
    if (!ledger) {
      violation("no /debug/ledger at the end");
      return;
    }
    // The ledger equals the annotations: the same pods on the same cards.
    std::map<std::string, std::string> from_ledger;  // uid -> node
    for (const auto& node : (*ledger)["nodes"]) {
      for (const auto& pod : node["pods"]) {
        if (pod["phase"] != "confirmed") violation("still assumed at the end: " + pod["pod"].get<std::string>());
        from_ledger[pod["uid"]] = node["name"];
      }
    }
    std::map<std::string, std::string> from_api;  // uid -> node
    for (const auto& text : api_.list("pods")) {
      auto pod = k8s::parse_pod(text, profile_->contract().selection());
      if (pod && !pod->node_name.empty() && !pod->terminal()) from_api[pod->meta.uid] = pod->node_name;
    }
    const AnnotatedUse use = annotated_use(api_, profile_->contract());
    if (from_ledger != from_api) {
      violation("at the end the ledger holds " + std::to_string(from_ledger.size()) + " pods, the API server " +
                std::to_string(from_api.size()) + " bound pods, not the same");
    }
    for (const auto& node : (*ledger)["nodes"]) {
      for (const auto& card : node["cards"]) {
        const auto key = std::make_pair(node["name"].get<std::string>(), card["index"].get<int>());
        auto it = use.cards.find(key);
        const AnnotatedCard u = it == use.cards.end() ? AnnotatedCard{} : it->second;
        if (card["computeUsedMilli"].get<int64_t>() != u.cores_milli || card["memoryUsedMiB"].get<int64_t>() != u.memory_mib) {
          violation(key.first + " card " + std::to_string(key.second) + ": the ledger's use differs from the annotations");
        }
      }
    }
  }

  // Faults off; wait until fracpack holds no reservation and has seen every change.
  void quiesce() {
    if (http_get(url(), "/readyz").status != 200) start_fracpack_wait();
    api_.faults().clear();
    const auto deadline = std::chrono::steady_clock::now() + o_.assume_ttl + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = http_get(url(), "/debug/ledger");
      if (r.status == 200) {
        json l = json::parse(r.body);
        size_t bound_in_api = 0;
        for (const auto& text : api_.list("pods")) {
          const json p = json::parse(text);
          bound_in_api += p["spec"].contains("nodeName") ? 1 : 0;
        }
        if (l["totals"]["assumedPods"] == 0 && l["totals"]["pods"].get<size_t>() == bound_in_api) return;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  ChaosOptions o_;
  std::mt19937_64 rng_;
  std::unique_ptr<SoakProfile> profile_;
  FakeApiServer api_;
  TempDir dir_;
  uint16_t port_ = free_loopback_port();
  std::string config_;
  std::unique_ptr<FracpackProcess> process_;
  std::unique_ptr<SchedulerDriver> driver_;
  std::vector<CandidateNode> candidates_;  // every node, by name (nodeCacheCapable)
  std::vector<std::string> pending_;
  std::string earlier_logs_;  // of the processes killed so far (for violations)
  std::map<std::string, std::pair<std::string, std::string>> bound_;  // uid -> (node, record)
  std::map<std::string, std::chrono::steady_clock::time_point> deleted_bound_at_;  // namespace/name -> deleted while bound
  uint64_t next_ = 0, slow_until_ = 0, ready_wait_at_ = 0;
  std::chrono::steady_clock::time_point started_at_{};
  ChaosReport r_;
};

}  // namespace

uint64_t ChaosReport::faults_total() const {
  uint64_t n = 0;
  for (const auto& [k, v] : faults) n += v;
  return n;
}

std::string ChaosReport::summary() const {
  std::ostringstream s;
  s << operations << " operations in " << seconds << " s: " << created << " pods created, " << deleted << " deleted, " << cycles
    << " scheduling cycles (" << placed << " placed, " << unschedulable << " unschedulable, " << bind_failures << " binds refused or failed, "
    << cycle_errors << " cycles failed while fracpack was down or faulted), " << faults_total() << " faults (";
  bool first = true;
  for (const auto& [k, v] : faults) {
    s << (first ? "" : ", ") << k << " " << v;
    first = false;
  }
  s << "), " << admitted << " pods admitted by the node agent's double, " << restarts << " restarts (SIGKILL; " << killed_mid_bind << " with a bind in flight; ready again within " << max_ready_seconds
    << " s at most), fracpack's informers applied " << watch_events << " watch events and " << lists << " lists, " << checks
    << " invariant checks, " << violations << " violations";
  return s.str();
}

ChaosReport run_chaos(const ChaosOptions& options) { return Chaos(options).run(); }

}  // namespace fracpack::testing
