// fracpack's Prometheus metrics (prometheus-cpp core; served on the extender
// port at /metrics). Events are counted as they happen; state (the ledger
// per node and card, the cluster's allocation and fragmentation, informer
// health) is read at scrape time by the collectors the service registers.
//
//   fracpack_http_request_duration_seconds{verb}        histogram
//   fracpack_http_requests_total{verb,code}             counter
//   fracpack_filter_nodes_total{outcome}                 passed / failed / unresolvable
//   fracpack_filter_rejections_total{reason}             why nodes were rejected
//   fracpack_placements_total{policy}                    binds that reserved cards
//   fracpack_bind_failures_total{reason}                 no_longer_fits, api_error, unknown_pod, ...
//   fracpack_preemptions_total{outcome}
//   fracpack_bind_fence_duration_seconds{result}         the bind fence's reads (ok / failed)
//   fracpack_bind_fence_quota_total{how}                 binds in a namespace with a GPU quota: the
//                                                        watch delivered the marker (watch) or the
//                                                        namespace's pods were read (read)
//   fracpack_bind_queue_wait_seconds                     a bind's wait for a worker
//   fracpack_admission_reviews_total{decision}           the webhook's answers
//   ...and the scrape-time families listed in extender_service.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack::server {

// A family computed at scrape time.
struct SampledFamily {
  enum class Type { kGauge, kCounter };
  std::string name;
  std::string help;
  Type type = Type::kGauge;
  struct Sample {
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
  };
  std::vector<Sample> samples;

  // A family of one unlabelled sample.
  static SampledFamily single(std::string name, std::string help, Type type, double value) {
    return SampledFamily{std::move(name), std::move(help), type, {{{}, value}}};
  }
};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void observe_request(std::string_view verb, int code, double seconds);
  void filter_outcome(size_t passed, size_t failed, size_t unresolvable);
  void rejected(std::string_view reason, double count);
  void placed(std::string_view policy);
  void bind_failed(std::string_view reason);
  void preempted(std::string_view outcome);
  // A bind's fence (k8s/bind_fence.h): how long the reads took, and whether they answered.
  void bind_fence(double seconds, bool ok);
  // A bind in a namespace with a GPU quota was fenced for it: `watch` (the
  // pod watch delivered the fence's marker write) or `read` (the
  // namespace's bound pods were read).
  void bind_fence_quota(bool watch);
  // How long a bind waited for a binding worker.
  void bind_waited(double seconds);
  // An admission review answered: allowed, denied or bad_request.
  void admission(std::string_view decision);

  using Collector = std::function<void(std::vector<SampledFamily>&)>;
  void add_collector(Collector c);

  // The text exposition format (version 0.0.4).
  std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The label for an explain_fit() rejection reason: cpu, memory, gpu_capacity,
// gpu_model, gpu_count, no_gpus, unknown_node, other.
std::string_view rejection_class(std::string_view reason);

}  // namespace fracpack::server
