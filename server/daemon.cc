#include "server/daemon.h"

#include <map>
#include <set>

#include <malloc.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "k8s/auth.h"
#include "k8s/binding.h"
#include "k8s/reconciler.h"
#include "k8s/contract/profiles.h"
#include "common/file_io.h"
#include "common/error_body.h"
#include "k8s/extender_codec.h"
#include "k8s/server_version.h"
#include "k8s/snapshot.h"
#include "k8s/workload_codec.h"
#include "scheduling/policy.h"
#include "server/binding_workers.h"
#include "server/cluster_metrics.h"
#include "server/memory_binder.h"
#include "server/log.h"
#include "server/snapshot_source.h"

namespace fracpack::server {
namespace {

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "fracpack";
  return buf;
}

HttpResponse starting(int status, const std::string& why) { return HttpResponse{status, error_body(why)}; }

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

// "namespace/name" (validated by the configuration) as the fence's marker.
k8s::BindFence::Marker marker_of(const std::string& ns_name) {
  const size_t slash = ns_name.find('/');
  if (slash == std::string::npos) return {};
  return {ns_name.substr(0, slash), ns_name.substr(slash + 1)};
}

}  // namespace

void tune_allocator_for_large_bodies() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
}

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {
  mode_ = options_.config.cluster.snapshot.empty() ? "kubernetes" : "snapshot";
  k8s::SyncOptions so;
  auto contract = k8s::make_contract(options_.config.contract);
  if (!contract) throw std::invalid_argument(contract.message());  // validate() checked it
  so.contract = std::move(*contract);
  so.assume_ttl = options_.config.cluster.assume_ttl;
  auto keys = load_record_keys(options_.config.security,
                               mode_ == "snapshot" ? RecordRole::kStandaloneExtender : RecordRole::kExtender);
  if (keys) {
    keys_ = std::move(*keys);
  } else {
    keys_error_ = keys.message();
  }
  so.trust = keys_.trust;
  if (mode_ == "kubernetes") {
    const k8s::BindFence::Marker marker = marker_of(options_.config.cluster.bind_fence_marker);
    so.fence_marker_namespace = marker.ns;
    so.fence_marker_name = marker.name;
  }
  // What the ledger says of a pod's record goes to the log and, as an
  // Event in the pod's own namespace naming only that pod, to its owner.
  so.on_record_report = [this](const k8s::RecordReport& r) {
    log_warn("allocation record not followed", {{"pod", r.namespace_name + "/" + r.name}, {"uid", r.uid}, {"reason", r.reason},
                                                {"message", r.message}});
    if (events_) events_->record(k8s::EventRef{r.namespace_name, r.name, r.uid}, "Warning", r.reason, r.message);
  };
  // A ResourceQuota limit that cannot be read refuses its namespace's new
  // GPU placements: the log, and an Event on the ResourceQuota, say why.
  so.on_quota_problem = [this](const k8s::ObjectMeta& q, const std::string& message) {
    log_warn("resource quota cannot be read", {{"resourcequota", q.namespace_name + "/" + q.name}, {"message", message}});
    if (events_) events_->record(k8s::EventRef{q.namespace_name, q.name, q.uid, "ResourceQuota"}, "Warning", "FracpackQuotaMalformed", message);
  };
  so.on_node_left_alone = [](const std::string& node, const std::string& reason) {
    if (reason.empty()) {
      log_info("node taken back", {{"node", node}});
    } else {
      log_warn("node left alone", {{"node", node}, {"reason", reason}});
    }
  };
  state_ = std::make_unique<k8s::ClusterState>(so);
}

Daemon::~Daemon() { drain(std::chrono::milliseconds(0)); }

uint16_t Daemon::port() const { return http_ ? http_->port() : 0; }
uint16_t Daemon::metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }
uint16_t Daemon::admission_port() const { return admission_http_ ? admission_http_->port() : 0; }

bool Daemon::wait_serving(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return serving_cv_.wait_for(lock, timeout, [&] { return serving() || !startup_error_.empty(); }) && serving();
}

Status Daemon::start() {
  const config::Config& c = options_.config;
  if (!keys_error_.empty()) return Error{keys_error_};
  if (c.security.records == "unsigned") {
    log_warn("allocation records are not signed",
             {{"consequence", "any user who may patch a pod can write a record that takes or frees a card"},
              {"setting", "security.records: unsigned"}});
  }
  if (state_) {
    for (const std::string& w : state_->contract().start_warnings()) log_warn("placement", {{"warning", w}});
  }
  auto listen = config::parse_listen(c.listen);
  if (!listen) return Error{"listen: " + listen.message()};
  HttpOptions ho;
  ho.address = listen->first.empty() ? "0.0.0.0" : listen->first;
  ho.port = listen->second;
  ho.threads = static_cast<int>(c.io_threads);
  ho.max_body_bytes = static_cast<size_t>(c.limits.max_request_bytes);
  ho.max_connections = static_cast<size_t>(c.limits.max_connections);
  ho.max_body_bytes_in_flight = static_cast<size_t>(c.limits.max_body_bytes_in_flight);
  ho.header_timeout = c.limits.header_timeout;
  ho.body_timeout = c.limits.body_timeout;
  ho.idle_timeout = c.limits.idle_timeout;
  ho.write_timeout = c.limits.write_timeout;
  ho.cert_file = c.tls.cert_file;
  ho.key_file = c.tls.key_file;
  ho.client_ca_file = c.tls.client_ca_file;
  ho.tls_reload = c.tls.reload_interval;

  if (mode_ == "snapshot") {
    // Standalone: the state is the snapshot's; binds stay in memory.
    auto loaded = load_snapshot_state(c, *state_);
    if (!loaded) return Error{loaded.message()};
    for (const auto& p : loaded->problems) log_warn("snapshot object skipped", {{"object", p.object}, {"reason", p.message}});
    binder_ = std::make_unique<InMemoryBinder>(*state_);
    if (auto s = build_service(loaded->workload, loaded->workload_source); !s.ok()) return s;
    log_info("snapshot loaded", {{"file", c.cluster.snapshot},
                                 {"nodes", std::to_string(loaded->nodes)},
                                 {"bound_pods", std::to_string(loaded->bound_pods)},
                                 {"pending_pods", std::to_string(loaded->pending_pods)}});
  } else {
    if (options_.client) {
      client_ = *options_.client;
    } else {
      auto cc = k8s::cluster_client_config(c.cluster.kubeconfig);
      if (!cc) return Error{cc.message() + " (give --kubeconfig, or --snapshot for the standalone mode)"};
      client_ = *cc;
    }
    client_->request_timeout = c.cluster.request_timeout;
    if (c.cluster.events) {
      k8s::EventOptions eo;
      eo.instance = hostname();
      events_ = std::make_unique<k8s::EventRecorder>(*client_, eo);
    }
    // Every GPU bind is fenced: another writer (the other replica after a
    // failover, an old leader's late binds) may have filled the node's cards
    // in ways this replica's watch has not delivered yet.
    fence_ = std::make_unique<k8s::BindFence>(
        k8s::kLivePodsSelector, state_->selection(),
        c.cluster.bind_fence_read == "resourceVersion" ? k8s::BindFence::Read::kResourceVersion
        : c.cluster.bind_fence_read == "consistent"    ? k8s::BindFence::Read::kConsistent
        : c.cluster.bind_fence_read == "marker"        ? k8s::BindFence::Read::kMarker
                                                       : k8s::BindFence::Read::kAuto,
        marker_of(c.cluster.bind_fence_marker));
    auto workers = std::make_unique<BindingWorkers>(*client_, static_cast<int>(c.bind_workers), events_.get(), fence_.get(), metrics_);
    if (const k8s::NodeLock* lock = state_->contract().node_lock(); lock != nullptr && lock->options().taken_by_binds) {
      workers->use_node_lock(lock);
    }
    metrics_.add_collector([w = workers.get()](std::vector<SampledFamily>& out) {
      const BindingWorkers::Load l = w->load();
      out.push_back(SampledFamily::single("fracpack_bind_queue_depth", "Binds waiting for a binding worker.",
                                          SampledFamily::Type::kGauge, static_cast<double>(l.queued)));
      out.push_back(SampledFamily{"fracpack_bind_workers",
                                  "Binding workers (each its own API server connection), busy posting or idle.",
                                  SampledFamily::Type::kGauge,
                                  {{{{"state", "busy"}}, static_cast<double>(l.busy)},
                                   {{{"state", "idle"}}, static_cast<double>(l.workers - l.busy)}}});
      out.push_back(SampledFamily::single("fracpack_bind_workers_max", "The most binding workers (bindWorkers).",
                                          SampledFamily::Type::kGauge, static_cast<double>(l.max_workers)));
    });
    binder_ = std::move(workers);
    k8s::ClusterInformersOptions io;
    io.tune = options_.tune_informer;
    informers_ = std::make_unique<k8s::ClusterInformers>(*client_, *state_, io);
    metrics_.add_collector([this](std::vector<SampledFamily>& out) {
      const auto mode = fence_->mode();
      out.push_back(SampledFamily{"fracpack_bind_fence_read",
                                  "How binds read their node's pods (cluster.bindFenceRead; \"auto\" until the API server's version "
                                  "picked one): 1 for the read in use.",
                                  SampledFamily::Type::kGauge,
                                  {{{{"mode", std::string(k8s::BindFence::mode_name(mode))}}, 1.0}}});
      out.push_back(SampledFamily::single("fracpack_bind_fence_marker_fallbacks_total",
                                          "Binds whose fence read their node's pods consistently because the marker pod "
                                          "(cluster.bindFenceMarker) was missing or not writable.",
                                          SampledFamily::Type::kCounter, static_cast<double>(fence_->stats().marker_fallbacks)));
    });
    metrics_.add_collector([this](std::vector<SampledFamily>& out) {
      out.push_back(SampledFamily{"fracpack_overcommitted_cards",
                                  "Cards whose allocation records, as the API server has them, sum past the card (placed by "
                                  "two schedulers at once); they take nothing new until they drain. Checked every reconcileInterval.",
                                  SampledFamily::Type::kGauge,
                                  {{{}, static_cast<double>(overcommitted_cards_.load())}}});
    });
  }

  http_ = std::make_unique<HttpServer>(ho, [this](HttpRequest&& r, Reply reply) { handle(std::move(r), std::move(reply)); });
  if (auto s = http_->start(); !s.ok()) return s;
  log_info("listening", {{"address", ho.address + ":" + std::to_string(http_->port())},
                         {"tls", ho.cert_file.empty() ? "off" : "on"},
                         {"mode", mode_},
                         {"url_prefix", c.url_prefix}});
  if (!c.metrics_listen.empty()) {
    auto ml = config::parse_listen(c.metrics_listen);
    if (!ml) return Error{"metricsListen: " + ml.message()};
    HttpOptions mo = ho;
    mo.address = ml->first.empty() ? "0.0.0.0" : ml->first;
    mo.port = ml->second;
    mo.threads = 1;
    mo.max_connections = 64;
    mo.cert_file.clear();  // plain HTTP: what kubelet's probes and a scrape expect
    mo.key_file.clear();
    mo.client_ca_file.clear();
    metrics_http_ = std::make_unique<HttpServer>(mo, [this](HttpRequest&& r, Reply reply) {
      const std::string path(r.path());
      if (path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/version") return handle(std::move(r), std::move(reply));
      reply(HttpResponse{404, error_body("only /healthz, /readyz, /metrics and /version are served here (metricsListen)")});
    });
    if (auto s = metrics_http_->start(); !s.ok()) return Error{"metricsListen: " + s.message()};
    log_info("listening", {{"address", mo.address + ":" + std::to_string(metrics_http_->port())}, {"serves", "/healthz /readyz /metrics /version"}});
  }
  if (!c.admission.listen.empty()) {
    // The webhook needs no ledger: it answers from the request alone, from
    // the start (the API server may call it before the informers sync).
    auto al = config::parse_listen(c.admission.listen);
    if (!al) return Error{"admission.listen: " + al.message()};
    k8s::AdmissionPolicy policy;
    policy.guarded_annotations = state_->contract().guarded_annotations();
    policy.resources = state_->contract().pod_resources();
    policy.record_writers = c.admission.record_writers;
    policy.scheduler_names = c.scheduler_names;
    policy.limiter_paths.mps_pipe_dir = c.node_agent.mps_dir + "/pipe";
    policy.guard_limits = c.contract.profile == "fracpack";  // a peer's plugin decides for its pods
    policy.limiter = c.node_agent.isolation;
    policy.device_resource = state_->contract().device_resource();
    admission_ = std::make_unique<AdmissionRoutes>(std::move(policy), metrics_);
    HttpOptions ao = ho;
    ao.address = al->first.empty() ? "0.0.0.0" : al->first;
    ao.port = al->second;
    ao.threads = 1;
    ao.max_connections = 256;
    // An AdmissionReview carries the object twice (object, oldObject): a
    // pod is at most ~1.5 MiB in etcd.
    ao.max_body_bytes = 8 << 20;
    ao.max_body_bytes_in_flight = 64 << 20;
    ao.cert_file = c.admission.cert_file;
    ao.key_file = c.admission.key_file;
    ao.client_ca_file.clear();  // the API server authenticates the webhook, not the other way round
    admission_http_ = std::make_unique<HttpServer>(ao, [this](HttpRequest&& r, Reply reply) { admission_->handle(std::move(r), std::move(reply)); });
    if (auto s = admission_http_->start(); !s.ok()) return Error{"admission.listen: " + s.message()};
    log_info("listening", {{"address", ao.address + ":" + std::to_string(admission_http_->port())}, {"serves", "/validate (admission webhook)"}});
  }
  if (mode_ == "kubernetes") {
    informers_->start();
    if (events_) events_thread_ = std::jthread([this](std::stop_token st) { events_->run(st); });
    control_thread_ = std::jthread([this](std::stop_token st) { control(st); });
  }
  return Status::Ok();
}

Status Daemon::build_service(std::shared_ptr<const scheduling::ShapeCounts> workload, const std::string& workload_source) {
  const config::PolicyConfig& pc = options_.config.policy;
  scheduling::PolicyOptions po;
  po.workload = workload;
  po.seed = static_cast<uint64_t>(pc.seed);
  po.learn = pc.learn;
  po.learn_half_life = pc.learn_half_life;
  po.prior_weight = pc.prior_weight;
  auto policy = scheduling::make_policy(pc.name, po);
  if (!policy) {
    std::lock_guard lock(mu_);
    startup_error_ = "policy: " + policy.message();
    serving_cv_.notify_all();
    return Error{startup_error_};
  }
  policy_ = std::move(*policy);
  scheduling::FitOptions fo;
  fo.check_node_resources = pc.check_node_resources;
  evaluator_ = std::make_unique<scheduling::Evaluator>(*policy_, fo);
  BindOptions bo;
  bo.bind_timeout = options_.config.cluster.bind_timeout;
  const k8s::NodeLock* node_lock = state_->contract().node_lock();
  bo.one_bind_per_node = node_lock != nullptr && node_lock->options().taken_by_binds && client_.has_value();
  bo.scheduler_names = options_.config.scheduler_names;
  bo.signer = keys_.signer;
  bo.events = events_.get();
  ExtenderOptions eo;
  eo.max_reply_bytes = 2 * static_cast<size_t>(options_.config.limits.max_request_bytes);
  // kube-scheduler before 1.21 drops nodes listed only in
  // FailedAndUnresolvableNodes, reasons and all: list them in FailedNodes
  // too unless the API server's version rules such a scheduler out.
  eo.unresolvable_as_failed = mode_ == "kubernetes" && !(server_version_ && k8s::scheduler_knows_unresolvable(*server_version_));
  recent_ = std::make_unique<RecentPods>();
  binds_ = std::make_unique<BindService>(*state_, *evaluator_, *binder_, metrics_, *recent_, bo);
  verbs_ = std::make_unique<ExtenderService>(*state_, *evaluator_, metrics_, *recent_, *binds_, eo);
  StatusOptions so;
  so.version = options_.version;
  so.mode = mode_;
  so.policy = std::string(evaluator_->policy_name());
  so.workload = workload;
  std::function<std::vector<k8s::SourceHealth>()> sources_fn;
  if (mode_ == "kubernetes") sources_fn = [this] { return sources(); };
  so.sources = sources_fn;
  // (http_ is created after the service; both live until the daemon goes.)
  so.saturation = [this] { return http_ ? http_->saturation() : std::string(); };
  status_ = std::make_unique<StatusRoutes>(*state_, metrics_, so);
  metrics_.add_collector([this](std::vector<SampledFamily>& out) {
    if (http_) collect_http_metrics(http_->counters(), static_cast<size_t>(options_.config.limits.max_connections), out);
  });
  metrics_.add_collector([this, workload, sources_fn](std::vector<SampledFamily>& out) {
    collect_cluster_metrics(ClusterMetricsSources{*state_, *evaluator_, workload, sources_fn}, out);
  });
  router_owner_ = std::make_unique<Router>(*verbs_, *binds_, *status_, metrics_, options_.config.url_prefix);
  {
    std::lock_guard lock(mu_);
    router_.store(router_owner_.get(), std::memory_order_release);
    serving_cv_.notify_all();
  }
  log_info("serving", {{"policy", pc.name},
                       {"profile", options_.config.contract.profile},
                       {"workload", workload_source},
                       {"workload_shapes", std::to_string(workload ? workload->counts().size() : 0)}});
  return Status::Ok();
}

std::vector<k8s::SourceHealth> Daemon::sources() const { return informers_ ? informers_->health() : std::vector<k8s::SourceHealth>{}; }

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
    const size_t slash = wc.config_map.find('/');
    const std::string ns = slash == std::string::npos ? "default" : wc.config_map.substr(0, slash);
    const std::string name = slash == std::string::npos ? wc.config_map : wc.config_map.substr(slash + 1);
    k8s::ApiClient client(*client_);
    auto r = client.request("GET", "/api/v1/namespaces/" + ns + "/configmaps/" + name);
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
        const size_t slash = p.first.find('/');
        events_->record(k8s::EventRef{p.first.substr(0, slash), p.first.substr(slash + 1), p.second}, "Warning", "GPUOverCommitted", message);
      }
    }
  }
  overcommitted_cards_.store(now.size());
  reported = std::move(now);
}

void Daemon::handle(HttpRequest&& request, Reply reply) {
  if (Router* r = router_.load(std::memory_order_acquire)) return r->handle(std::move(request), std::move(reply));
  if (request.path() == "/healthz") return reply(HttpResponse{200, "ok\n", "text/plain"});
  std::string why;
  {
    std::lock_guard lock(mu_);
    why = startup_error_;
  }
  if (why.empty()) {
    why = "fracpack is starting: waiting for the initial lists of pods and nodes";
    for (const auto& h : sources()) {
      if (!h.stats.synced) why += "; " + h.resource + (h.stats.last_error.empty() ? ": listing" : ": " + h.stats.last_error);
    }
  }
  reply(starting(503, why));
}

void Daemon::drain(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    if (drained_) return;
    drained_ = true;
  }
  if (http_) http_->drain(grace);
  if (metrics_http_) metrics_http_->drain(std::chrono::milliseconds(0));
  if (admission_http_) admission_http_->drain(std::chrono::milliseconds(0));
  for (std::jthread* t : {&control_thread_, &events_thread_}) {
    if (t->joinable()) {
      t->request_stop();
      t->join();
    }
  }
  if (informers_) informers_->stop();
  binder_.reset();  // pending binds fail ("shutting down") and release their reservations
  if (http_) http_->stop();
  if (metrics_http_) metrics_http_->stop();
  if (admission_http_) admission_http_->stop();
}

}  // namespace fracpack::server
