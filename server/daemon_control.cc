// The daemon's control loop in the kubernetes mode (Daemon::control): it
// waits for the initial lists, reads the API server's version and the target
// workload, builds the service, then runs the reconciler every
// reconcileInterval and reports what it finds (API server trouble, the bind
// fence's marker, over-committed cards). Apart from daemon.cc, which wires
// the pieces and serves.
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/text.h"
#include "k8s/reconciler.h"
#include "k8s/server_version.h"
#include "k8s/workload_codec.h"
#include "server/daemon.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

// API server trouble goes to the log as it happens (readiness says it too):
// a line when a watch source fails with a new error, then at most one per
// 30 s while the same error repeats; a line when a source first syncs.
class SourceLog {
 public:
  void report(const std::vector<k8s::SourceHealth>& sources) {
    for (const auto& h : sources) {
      Seen& s = seen_[h.resource];
      if (h.stats.synced && !s.synced) log_info("synced", {{"resource", h.resource}, {"resource_version", h.stats.resource_version}});
      s.synced = h.stats.synced;
      if (h.stats.errors <= s.errors) continue;
      const auto now = std::chrono::steady_clock::now();
      if (h.stats.last_error == s.error && now - s.logged < std::chrono::seconds(30)) continue;
      log_warn("api server request failed",
               {{"resource", h.resource}, {"error", h.stats.last_error}, {"failures", std::to_string(h.stats.errors - s.errors)}});
      s.errors = h.stats.errors;
      s.error = h.stats.last_error;
      s.logged = now;
    }
  }

 private:
  struct Seen {
    uint64_t errors = 0;  // failures already reported
    std::string error;
    std::chrono::steady_clock::time_point logged{};
    bool synced = false;
  };
  std::map<std::string, Seen> seen_;
};

}  // namespace

std::shared_ptr<const scheduling::ShapeCounts> Daemon::cluster_workload(std::string* source) {
  const config::WorkloadConfig& wc = options_.config.workload;
  if (!wc.file.empty()) {
    auto text = read_file(wc.file);
    if (text) {
      if (auto w = k8s::parse_workload(*text)) {
        *source = wc.file;
        return std::make_shared<scheduling::ShapeCounts>(std::move(*w));
      } else {
        log_warn("workload file unreadable; using the cluster's pods", {{"file", wc.file}, {"error", w.message()}});
      }
    } else {
      log_warn("workload file unreadable; using the cluster's pods", {{"file", wc.file}, {"error", text.message()}});
    }
  } else if (!wc.config_map.empty()) {
    const ObjectKey key = split_object_key(wc.config_map);  // valid: the configuration checked it
    k8s::ApiClient client(*client_);
    auto r = client.request("GET", "/api/v1/namespaces/" + k8s::url_encode(key.namespace_name) + "/configmaps/" + k8s::url_encode(key.name));
    if (r && r->status == 200) {
      try {
        const auto doc = nlohmann::json::parse(r->body);
        const auto& data = doc.at("data");
        auto w = k8s::parse_workload(data.at(k8s::kWorkloadKey).get<std::string>());
        if (w) {
          *source = "ConfigMap " + wc.config_map;
          return std::make_shared<scheduling::ShapeCounts>(std::move(*w));
        }
        log_warn("workload ConfigMap unreadable; using the cluster's pods", {{"configmap", wc.config_map}, {"error", w.message()}});
      } catch (const std::exception& e) {
        log_warn("workload ConfigMap unreadable; using the cluster's pods",
                 {{"configmap", wc.config_map}, {"error", std::string("no data.") + k8s::kWorkloadKey + ": " + e.what()}});
      }
    } else if (r && r->status != 404) {
      log_warn("workload ConfigMap not readable; using the cluster's pods",
               {{"configmap", wc.config_map}, {"status", std::to_string(r->status)}});
    } else if (!r) {
      log_warn("workload ConfigMap not readable; using the cluster's pods", {{"configmap", wc.config_map}, {"error", r.message()}});
    }
  }
  *source = "the cluster's pods";
  return std::make_shared<scheduling::ShapeCounts>(state_->observed_shapes());
}

void Daemon::control(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  auto sleep_for = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, d, [] { return false; });
  };
  SourceLog source_log;
  auto report_sources = [&] { source_log.report(sources()); };
  for (int tick = 0; !stop.stop_requested() && !state_->ready(); ++tick) {
    if (tick % 25 == 0) report_sources();
    sleep_for(std::chrono::milliseconds(20));
  }
  if (stop.stop_requested()) return;
  report_sources();
  {
    // What this cluster's Kubernetes version needs of fracpack (README
    // "Compatibility"): best effort, a second at most.
    k8s::ApiClient version_client(*client_);
    auto v = k8s::read_server_version(version_client, std::chrono::milliseconds(1000));
    if (v) {
      server_version_ = *v;
      log_info("api server version", {{"version", v->git_version}, {"minor", std::to_string(v->minor)},
                                      {"unresolvable_nodes_also_in_failed_nodes", k8s::scheduler_knows_unresolvable(*v) ? "no" : "yes"}});
    } else {
      log_warn("api server version unknown", {{"error", v.message()}, {"assumed", "a kube-scheduler older than 1.21"}});
    }
  }
  std::string source;
  auto workload = cluster_workload(&source);
  if (auto s = build_service(workload, source); !s.ok()) {
    log_error("cannot serve", {{"error", s.message()}});
    return;
  }
  // The reconciler: assumptions the informer has not confirmed within an
  // interval are checked against the API server; the TTL is the backstop.
  k8s::ApiClient client(*client_);
  std::set<std::pair<std::string, int>> reported;  // over-committed cards already reported
  report_overcommitted(client, reported);
  const auto interval = options_.config.cluster.reconcile_interval;
  std::string marker_problem;  // the bind fence's, as last logged
  auto next_reconcile = std::chrono::steady_clock::now() + interval;
  while (!stop.stop_requested()) {
    sleep_for(std::min<std::chrono::milliseconds>(interval, std::chrono::milliseconds(1000)));
    if (stop.stop_requested()) break;
    report_sources();
    if (std::string problem = fence_->marker_problem(); problem != marker_problem) {
      if (!problem.empty()) log_warn("bind fence marker refused", {{"error", problem}});
      marker_problem = std::move(problem);
    }
    if (std::chrono::steady_clock::now() < next_reconcile) continue;
    next_reconcile = std::chrono::steady_clock::now() + interval;
    // Past their TTL, reservations go only when the API server shows their
    // pod unbound (reconcile_assumptions): a blind expiry freed the cards of
    // bound pods whose watch events were late, and another pod took them
    // (found by the chaos soak).
    const size_t released = k8s::reconcile_assumptions(client, *state_, interval);
    if (released > 0) log_warn("reservations released", {{"reconciled", std::to_string(released)}});
    report_overcommitted(client, reported);
  }
}

// Over-committed cards are never silent: what the fence cannot close (an old
// leader's Binding applied after this replica's fence read, a scheduler that
// ignores fracpack) shows as a log line and a Warning Event on each pod
// holding the card, once per card until it drains, and as the
// fracpack_overcommitted_cards gauge. Only what the API server confirms: a
// watch lagging behind a deletion makes the ledger hold more than it should
// for a while, and that is no double booking.
void Daemon::report_overcommitted(k8s::ApiClient& client, std::set<std::pair<std::string, int>>& reported) {
  std::set<std::pair<std::string, int>> now;
  for (const auto& o : k8s::confirm_overcommitted(client, *fence_, *state_)) {
    now.emplace(o.node, o.index);
    if (reported.count({o.node, o.index})) continue;
    std::string pods;
    for (const auto& p : o.pods) pods += (pods.empty() ? "" : ", ") + p.first;
    log_error("card over-committed", {{"node", o.node}, {"card", std::to_string(o.index)}, {"pods", pods},
                                      {"cores_percent", std::to_string(o.cores / 10)}, {"memory_mib", std::to_string(o.memory_mib)},
                                      {"capacity_mib", std::to_string(o.capacity_mib)}});
    if (events_) {
      // Each pod's owner is told of their own pod only: the others holding
      // the card may be other teams'.
      const std::string others = std::to_string(o.pods.size() - 1);
      const std::string message = "GPU " + std::to_string(o.index) + " of node " + o.node +
                                  " is over-committed (placed by two schedulers at once): this pod and " + others +
                                  " other(s) are recorded on it; it takes no new pods until they leave";
      for (const auto& p : o.pods) {
        const ObjectKey key = split_object_key(p.first);
        events_->record(k8s::EventRef{std::string(key.namespace_name), std::string(key.name), p.second}, "Warning", "GPUOverCommitted", message);
      }
    }
  }
  overcommitted_cards_.store(now.size());
  reported = std::move(now);
}

}  // namespace fracpack::server
