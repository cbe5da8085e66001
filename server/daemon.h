// `fracpack serve` as an object: the HTTP server, the extender service and
// what feeds its ClusterState — a snapshot file (standalone) or informers on
// the API server, a binder, an event recorder and the reconciler. The
// command-line entry (cmd/serve.cc) and the integration tests build it the
// same way.
//
// Startup: the port answers at once (/healthz 200; /readyz and the verbs
// 503 "starting") so probes and kube-scheduler get a clear answer; once the
// initial lists are applied and the target workload is known, the policy,
// evaluator and extender service are built and published.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "config/config.h"
#include "k8s/api_client.h"
#include "k8s/bind_fence.h"
#include "k8s/cluster_informers.h"
#include "k8s/cluster_state.h"
#include "k8s/events.h"
#include "k8s/server_version.h"
#include "scheduling/evaluator.h"
#include "server/binder.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/admission_routes.h"
#include "server/metrics.h"
#include "server/record_keys.h"
#include "server/router.h"
#include "server/status_routes.h"

namespace fracpack::server {

struct DaemonOptions {
  config::Config config;
  std::string version = "dev";
  // Kubernetes mode: the API server to use instead of the kubeconfig or the
  // in-cluster account (tests).
  std::optional<k8s::ClientConfig> client;
  // Adjusts the informers' options (tests shorten backoffs).
  std::function<void(k8s::InformerOptions&)> tune_informer;
};

// Keeps large request and reply buffers (a full NodeList is tens of MB)
// in the heap between requests instead of mapping and faulting in fresh
// pages for each: glibc maps allocations over its threshold afresh every
// time. Call once at startup.
void tune_allocator_for_large_bodies();

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Listens and starts feeding the state. Errors: the snapshot cannot be
  // read, no API server credentials, the port is taken, a TLS file is bad.
  Status start();
  uint16_t port() const;
  uint16_t metrics_port() const;  // 0 without metricsListen
  uint16_t admission_port() const;  // 0 without admission.listen
  // The extender service is built (initial sync done, workload known).
  bool serving() const { return router_.load(std::memory_order_acquire) != nullptr; }
  bool wait_serving(std::chrono::milliseconds timeout) const;
  // Graceful stop: no new connections, in-flight requests finish (up to
  // `grace`), then the informers and workers stop.
  void drain(std::chrono::milliseconds grace);

  k8s::ClusterState& state() { return *state_; }
  const DaemonOptions& options() const { return options_; }
  HttpCounters http_counters() const { return http_ ? http_->counters() : HttpCounters{}; }

 private:
  void handle(HttpRequest&& request, Reply reply);
  Status build_service(std::shared_ptr<const scheduling::ShapeCounts> workload, const std::string& workload_source);
  std::shared_ptr<const scheduling::ShapeCounts> cluster_workload(std::string* source);
  void control(std::stop_token stop);
  void report_overcommitted(k8s::ApiClient& client, std::set<std::pair<std::string, int>>& reported);
  std::vector<k8s::SourceHealth> sources() const;

  DaemonOptions options_;
  std::string mode_;  // "snapshot" or "kubernetes"
  RecordKeys keys_;         // security: the signing key and the trust in records
  std::optional<k8s::ServerVersion> server_version_;  // read once the lists are applied (kubernetes mode)
  std::string keys_error_;  // why they could not be loaded (start() says it)
  Metrics metrics_;
  std::unique_ptr<k8s::ClusterState> state_;
  std::optional<k8s::ClientConfig> client_;
  std::unique_ptr<k8s::EventRecorder> events_;
  std::unique_ptr<k8s::ClusterInformers> informers_;
  std::unique_ptr<k8s::BindFence> fence_;
  std::unique_ptr<scheduling::Policy> policy_;
  std::unique_ptr<scheduling::Evaluator> evaluator_;
  std::unique_ptr<Binder> binder_;
  std::unique_ptr<RecentPods> recent_;  // judged by filter and prioritize, recalled by bind
  std::unique_ptr<BindService> binds_;
  std::unique_ptr<ExtenderService> verbs_;
  std::unique_ptr<StatusRoutes> status_;
  std::unique_ptr<Router> router_owner_;
  std::atomic<Router*> router_{nullptr};
  std::atomic<size_t> overcommitted_cards_{0};  // confirmed by the last reconciler pass
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> metrics_http_;  // metricsListen: probes and /metrics only
  std::unique_ptr<AdmissionRoutes> admission_;
  std::unique_ptr<HttpServer> admission_http_;  // admission.listen: the webhook (TLS)
  std::jthread events_thread_, control_thread_;
  mutable std::mutex mu_;
  mutable std::condition_variable_any serving_cv_;
  std::string startup_error_;  // why the service could not be built (shown by /readyz)
  bool drained_ = false;
};

}  // namespace fracpack::server
