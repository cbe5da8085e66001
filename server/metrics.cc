#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>

namespace fracpack::server {

struct Metrics::Impl {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Histogram>& latency = prometheus::BuildHistogram()
                                                           .Name("fracpack_http_request_duration_seconds")
                                                           .Help("Time to answer an extender or service request, by verb.")
                                                           .Register(registry);
  prometheus::Family<prometheus::Counter>& requests = prometheus::BuildCounter()
                                                          .Name("fracpack_http_requests_total")
                                                          .Help("Requests answered, by verb and HTTP status code.")
                                                          .Register(registry);
  prometheus::Family<prometheus::Counter>& filter_nodes = prometheus::BuildCounter()
                                                              .Name("fracpack_filter_nodes_total")
                                                              .Help("Nodes judged by filter, by outcome.")
                                                              .Register(registry);
  prometheus::Family<prometheus::Counter>& rejections = prometheus::BuildCounter()
                                                            .Name("fracpack_filter_rejections_total")
                                                            .Help("Nodes rejected by filter, by reason.")
                                                            .Register(registry);
  prometheus::Family<prometheus::Counter>& placements = prometheus::BuildCounter()
                                                            .Name("fracpack_placements_total")
                                                            .Help("Pods whose cards bind reserved, by policy.")
                                                            .Register(registry);
  prometheus::Family<prometheus::Counter>& bind_failures = prometheus::BuildCounter()
                                                               .Name("fracpack_bind_failures_total")
                                                               .Help("Binds that failed, by reason.")
                                                               .Register(registry);
  prometheus::Family<prometheus::Counter>& preemptions = prometheus::BuildCounter()
                                                             .Name("fracpack_preemptions_total")
                                                             .Help("Preemption answers, by outcome.")
                                                             .Register(registry);
  prometheus::Family<prometheus::Histogram>& fence = prometheus::BuildHistogram()
                                                         .Name("fracpack_bind_fence_duration_seconds")
                                                         .Help("Time a bind spent reading what the API server has bound on its node, by result.")
                                                         .Register(registry);
  prometheus::Family<prometheus::Counter>& fence_quota = prometheus::BuildCounter()
                                                          .Name("fracpack_bind_fence_quota_total")
                                                          .Help("Binds in a namespace with a GPU quota, by how its other writers' pods were seen: the pod watch delivered the fence's marker write (watch), or the namespace's bound pods were read (read).")
                                                          .Register(registry);
  prometheus::Family<prometheus::Histogram>& bind_wait = prometheus::BuildHistogram()
                                                             .Name("fracpack_bind_queue_wait_seconds")
                                                             .Help("Time a bind waited for a worker before it was fenced and posted.")
                                                             .Register(registry);
  prometheus::Family<prometheus::Counter>& admission = prometheus::BuildCounter()
                                                           .Name("fracpack_admission_reviews_total")
                                                           .Help("Admission reviews answered by the webhook, by decision (allowed, denied, bad_request).")
                                                           .Register(registry);
  std::mutex mu;
  std::vector<Collector> collectors;
};

namespace {

const prometheus::Histogram::BucketBoundaries& latency_buckets() {
  static const prometheus::Histogram::BucketBoundaries b = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                            0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,    5};
  return b;
}

}  // namespace

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) impl_->latency.Add({{"verb", verb}}, latency_buckets());
  for (const char* outcome : {"passed", "failed", "unresolvable"}) impl_->filter_nodes.Add({{"outcome", outcome}});
  for (const char* result : {"ok", "failed"}) impl_->fence.Add({{"result", result}}, latency_buckets());
  for (const char* how : {"watch", "read"}) impl_->fence_quota.Add({{"how", how}});
}

void Metrics::bind_fence_quota(bool watch) { impl_->fence_quota.Add({{"how", watch ? "watch" : "read"}}).Increment(); }

void Metrics::bind_waited(double seconds) { impl_->bind_wait.Add({}, latency_buckets()).Observe(seconds); }

void Metrics::bind_fence(double seconds, bool ok) {
  impl_->fence.Add({{"result", ok ? "ok" : "failed"}}, latency_buckets()).Observe(seconds);
}

Metrics::~Metrics() = default;

void Metrics::observe_request(std::string_view verb, int code, double seconds) {
  const std::string v(verb);
  impl_->latency.Add({{"verb", v}}, latency_buckets()).Observe(seconds);
  impl_->requests.Add({{"verb", v}, {"code", std::to_string(code)}}).Increment();
}

void Metrics::filter_outcome(size_t passed, size_t failed, size_t unresolvable) {
  impl_->filter_nodes.Add({{"outcome", "passed"}}).Increment(static_cast<double>(passed));
  impl_->filter_nodes.Add({{"outcome", "failed"}}).Increment(static_cast<double>(failed));
  impl_->filter_nodes.Add({{"outcome", "unresolvable"}}).Increment(static_cast<double>(unresolvable));
}

void Metrics::rejected(std::string_view reason, double count) {
  impl_->rejections.Add({{"reason", std::string(reason)}}).Increment(count);
}

void Metrics::placed(std::string_view policy) { impl_->placements.Add({{"policy", std::string(policy)}}).Increment(); }

void Metrics::admission(std::string_view decision) { impl_->admission.Add({{"decision", std::string(decision)}}).Increment(); }

void Metrics::bind_failed(std::string_view reason) { impl_->bind_failures.Add({{"reason", std::string(reason)}}).Increment(); }

void Metrics::preempted(std::string_view outcome) { impl_->preemptions.Add({{"outcome", std::string(outcome)}}).Increment(); }

void Metrics::add_collector(Collector c) {
  std::lock_guard lock(impl_->mu);
  impl_->collectors.push_back(std::move(c));
}

std::string Metrics::serialize() const {
  std::vector<prometheus::MetricFamily> families = impl_->registry.Collect();
  std::vector<SampledFamily> sampled;
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& c : impl_->collectors) c(sampled);
  }
  for (auto& s : sampled) {
    prometheus::MetricFamily f;
    f.name = std::move(s.name);
    f.help = std::move(s.help);
    f.type = s.type == SampledFamily::Type::kCounter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
    f.metric.reserve(s.samples.size());
    for (auto& sample : s.samples) {
      prometheus::ClientMetric m;
      for (auto& [k, v] : sample.labels) m.label.push_back({std::move(k), std::move(v)});
      if (s.type == SampledFamily::Type::kCounter) {
        m.counter.value = sample.value;
      } else {
        m.gauge.value = sample.value;
      }
      f.metric.push_back(std::move(m));
    }
    families.push_back(std::move(f));
  }
  return prometheus::TextSerializer().Serialize(families);
}

std::string_view rejection_class(std::string_view reason) {
  auto starts = [&](std::string_view p) { return reason.substr(0, p.size()) == p; };
  if (starts("insufficient cpu")) return "cpu";
  if (starts("insufficient memory")) return "memory";
  if (starts("insufficient GPU")) return "gpu_capacity";
  if (starts("no GPU of model")) return "gpu_model";
  if (starts("node has no fracpack GPUs")) return "no_gpus";
  if (starts("node unknown") || starts("node is not known")) return "unknown_node";
  if (reason.find(" needs ") != std::string_view::npos) return "gpu_count";
  return "other";
}

}  // namespace fracpack::server
