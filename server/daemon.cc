#include "server/daemon.h"

#include <map>
#include <set>

#include <malloc.h>
#include <unistd.h>

#include "common/text.h"
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
#include "server/listeners.h"
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


// "namespace/name" (validated by the configuration) as the fence's marker.
k8s::BindFence::Marker marker_of(const std::string& ns_name) {
  const ObjectKey key = split_object_key(ns_name);
  if (!key.valid) return {};
  return {std::string(key.namespace_name), std::string(key.name)};
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
  if (c.security.records == config::RecordSigning::kUnsigned) {
    log_warn("allocation records are not signed",
             {{"consequence", "any user who may patch a pod can write a record that takes or frees a card"},
              {"setting", "security.records: unsigned"}});
  }
  if (state_) {
    for (const std::string& w : state_->contract().start_warnings()) log_warn("placement", {{"warning", w}});
  }
  auto ho = listener_options(c, Listener::kExtender);
  if (!ho) return Error{ho.message()};

  if (mode_ == "snapshot") {
    // Standalone: the state is the snapshot's; binds stay in memory.
    auto loaded = load_snapshot_state(c, *state_);
    if (!loaded) return Error{loaded.message()};
    for (const auto& p : loaded->problems) log_warn("snapshot object skipped", {{"object", p.object}, {"reason", p.message}});
    binder_ = std::make_unique<InMemoryBinder>();
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
        k8s::kLivePodsSelector, state_->selection(), c.cluster.bind_fence_read, marker_of(c.cluster.bind_fence_marker));
    auto workers = std::make_unique<BindingWorkers>(*client_, static_cast<int>(c.bind_workers), events_.get(), fence_.get(), metrics_);
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
                                  {{{{"mode", std::string(k8s::bind_fence_read_name(mode))}}, 1.0}}});
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

  http_ = std::make_unique<HttpServer>(*ho, [this](HttpRequest&& r, Reply reply) { handle(std::move(r), std::move(reply)); });
  if (auto s = http_->start(); !s.ok()) return s;
  log_info("listening", {{"address", ho->address + ":" + std::to_string(http_->port())},
                         {"tls", ho->cert_file.empty() ? "off" : "on"},
                         {"mode", mode_},
                         {"url_prefix", c.url_prefix}});
  if (!c.metrics_listen.empty()) {
    auto mo = listener_options(c, Listener::kMetrics);
    if (!mo) return Error{mo.message()};
    metrics_http_ = std::make_unique<HttpServer>(*mo, [this](HttpRequest&& r, Reply reply) {
      const std::string path(r.path());
      if (path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/version") return handle(std::move(r), std::move(reply));
      reply(HttpResponse{404, error_body("only /healthz, /readyz, /metrics and /version are served here (metricsListen)")});
    });
    if (auto s = metrics_http_->start(); !s.ok()) return Error{"metricsListen: " + s.message()};
    log_info("listening", {{"address", mo->address + ":" + std::to_string(metrics_http_->port())}, {"serves", "/healthz /readyz /metrics /version"}});
  }
  if (!c.admission.listen.empty()) {
    // The webhook needs no ledger: it answers from the request alone, from
    // the start (the API server may call it before the informers sync).
    auto ao = listener_options(c, Listener::kAdmission);
    if (!ao) return Error{ao.message()};
    k8s::AdmissionPolicy policy;
    policy.guarded_annotations = state_->contract().guarded_annotations();
    policy.resources = state_->contract().pod_resources();
    policy.record_writers = c.admission.record_writers;
    policy.scheduler_names = c.scheduler_names;
    policy.limiter_paths.mps_pipe_dir = c.node_agent.mps_dir + "/pipe";
    policy.guard_limits = k8s::webhook_guards_limits(c.contract.profile);  // a peer's plugin decides for its pods
    policy.limiter = c.node_agent.isolation;
    policy.device_resource = state_->contract().device_resource();
    admission_ = std::make_unique<AdmissionRoutes>(std::move(policy), metrics_);
    admission_http_ = std::make_unique<HttpServer>(*ao, [this](HttpRequest&& r, Reply reply) { admission_->handle(std::move(r), std::move(reply)); });
    if (auto s = admission_http_->start(); !s.ok()) return Error{"admission.listen: " + s.message()};
    log_info("listening", {{"address", ao->address + ":" + std::to_string(admission_http_->port())}, {"serves", "/validate (admission webhook)"}});
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
  bo.take_node_lock = client_.has_value();  // the contract's, where its binds take one (BindService)
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
                       {"profile", std::string(k8s::profile_name(options_.config.contract.profile))},
                       {"workload", workload_source},
                       {"workload_shapes", std::to_string(workload ? workload->counts().size() : 0)}});
  return Status::Ok();
}

std::vector<k8s::SourceHealth> Daemon::sources() const { return informers_ ? informers_->health() : std::vector<k8s::SourceHealth>{}; }


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
