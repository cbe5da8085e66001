// The extender kube-scheduler calls, and the service endpoints beside it.
// One pod's path: HTTP body -> k8s/extender (decode) -> k8s/contract
// (PodRequest) -> scheduling::Evaluator over the ClusterState's ledger
// (filter, prioritize) -> at bind, ClusterState::assume_chosen (the cards,
// reserved under the write lock) -> a Binder (the Binding with the
// allocation annotations, §5.1) -> the informer confirms it from the
// annotation, or the reservation is released.
//
//   POST <prefix>filter       ExtenderArgs -> ExtenderFilterResult
//   POST <prefix>prioritize   ExtenderArgs -> HostPriorityList (0..10, the best alone 10)
//   POST <prefix>bind         ExtenderBindingArgs -> ExtenderBindingResult
//   POST <prefix>preempt      ExtenderPreemptionArgs -> ExtenderPreemptionResult
//   GET  /healthz /readyz /version /metrics /debug/ledger /debug/snapshot
//
// Scrape-time metrics: fracpack_card_{memory_allocated_bytes,
// memory_capacity_bytes, compute_allocated_ratio, sharers}{node,card,model},
// fracpack_cluster_{gpus, gpu_allocated_ratio, pods}, fracpack_informer_*,
// fracpack_sync_*, fracpack_evaluation_cache_*.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "k8s/binder.h"
#include "k8s/cluster_state.h"
#include "k8s/informer.h"
#include "scheduling/evaluator.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fracpack::server {

// Where a chosen placement is written: the API server (a pool of workers
// posting Bindings) or, standalone, the in-memory state.
class Binder {
 public:
  virtual ~Binder() = default;
  using Clock = std::chrono::steady_clock;
  // What becomes of a bind, reported once, from any thread: ok, or the
  // reason it failed and whether the pod is gone (404: no point keeping
  // anything for it).
  struct Outcome {
    Status status = Status::Ok();
    bool pod_gone = false;
    bool outcome_unknown = false;  // the Binding may have been applied: keep the reservation
    bool rechosen = false;         // the fence moved the reservation: `target` carries the new cards
  };
  // A recheck after the bind fence (k8s/bind_fence.h): `fresh` are the pods
  // the API server has bound on the target node now; returns the record to
  // write (the same, or other cards if the reservation had to move) or why
  // the bind is refused.
  using Recheck = std::function<Result<k8s::StringMap>(const std::vector<k8s::Pod>& fresh, bool* rechosen)>;
  struct Job {
    k8s::BindTarget target;  // its annotations: the allocation record chosen on arrival
    k8s::Pod pod;            // as fracpack knows it (the in-memory binder stores it)
    Clock::time_point arrived{};
    // Not posted after this: kube-scheduler has stopped waiting, and a late
    // Binding would only race whoever it asks next.
    Clock::time_point deadline = Clock::time_point::max();
    Recheck recheck;  // GPU binds (null: nothing to fence)
  };
  virtual void bind(Job job, std::function<void(Outcome, const k8s::BindTarget&)> done) = 0;
};

// Binds in memory: the pod becomes bound in the ClusterState at once (its
// annotations set as the Binding would set them). A single writer: no fence.
class StateBinder final : public Binder {
 public:
  explicit StateBinder(k8s::ClusterState& state) : state_(state) {}
  void bind(Job job, std::function<void(Outcome, const k8s::BindTarget&)> done) override;

 private:
  k8s::ClusterState& state_;
};

// Health of the sources feeding the state (informers), for /readyz and
// metrics; empty in standalone mode.
struct SourceHealth {
  std::string resource;  // "pods", "nodes"
  k8s::InformerStats stats;
};

struct ServiceOptions {
  std::string url_prefix = "/";
  std::string version = "dev";
  std::string mode = "snapshot";  // "snapshot" or "kubernetes", for /version
  std::function<std::vector<SourceHealth>()> sources;  // may be empty
  size_t recent_pods = 4096;  // pods remembered from filter requests, for a bind the informer has not seen yet
  // A bind not posted within this of its arrival is refused (cluster.bindTimeout).
  std::chrono::milliseconds bind_timeout{4000};
  // The target workload (fragmentation figures in /debug/ledger and metrics); may be null.
  std::shared_ptr<const scheduling::ShapeCounts> workload;
};

class ExtenderService {
 public:
  ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                  ServiceOptions options);

  // The HTTP handler (see HttpServer).
  void handle(HttpRequest&& request, Reply reply);

  // The JSON of /debug/ledger (also what `fracpack inspect` reads).
  std::string ledger_json() const;

 private:
  HttpResponse filter(const std::string& body);
  HttpResponse prioritize(const std::string& body);
  void bind(const std::string& body, Reply reply);
  HttpResponse preempt(const std::string& body);
  HttpResponse readyz() const;
  void remember(const k8s::Pod& pod);
  std::optional<k8s::Pod> recall(const std::string& uid) const;
  void collect(std::vector<SampledFamily>& out) const;
  // The ledger's nodes for a NodeNames list; the last list's answer is
  // reused while the text and the ledger's node set are the same (5 000
  // lookups saved per request when kube-scheduler repeats its candidates).
  void resolve(const scheduling::Ledger& ledger, const std::vector<std::string_view>& names, std::string_view names_text,
               std::vector<const scheduling::NodeState*>& out);

  k8s::ClusterState& state_;
  scheduling::Evaluator& evaluator_;
  Binder& binder_;
  Metrics& metrics_;
  ServiceOptions options_;
  std::string prefix_;  // url_prefix ending in "/"

  std::mutex resolved_mu_;
  std::string resolved_text_;
  uint64_t resolved_layout_ = 0;
  const scheduling::Ledger* resolved_ledger_ = nullptr;
  std::vector<const scheduling::NodeState*> resolved_;

  mutable std::mutex recent_mu_;
  std::list<k8s::Pod> recent_;  // most recent first
  std::unordered_map<std::string, std::list<k8s::Pod>::iterator> recent_by_uid_;
};

}  // namespace fracpack::server
