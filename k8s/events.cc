#include "k8s/events.h"

#include <cstdio>
#include <ctime>

#include "common/json/write.h"
#include "common/time.h"

namespace fracpack::k8s {
EventRecorder::EventRecorder(ClientConfig client, EventOptions options)
    : client_(std::move(client)), options_(std::move(options)), tokens_(options_.burst),
      refill_at_(std::chrono::steady_clock::now()) {}

std::string EventRecorder::event_json(const EventRef& pod, const std::string& type, const std::string& reason,
                                      const std::string& message, int count, std::chrono::system_clock::time_point first,
                                      std::chrono::system_clock::time_point last, const EventOptions& options) {
  std::string out = R"({"apiVersion":"v1","kind":"Event","metadata":{"generateName":)";
  append_json_string(out, pod.name + ".");
  out += R"(,"namespace":)";
  append_json_string(out, pod.namespace_name);
  out += R"(},"involvedObject":{"apiVersion":"v1","kind":)";
  append_json_string(out, pod.kind);
  out += R"(,"namespace":)";
  append_json_string(out, pod.namespace_name);
  out += R"(,"name":)";
  append_json_string(out, pod.name);
  out += R"(,"uid":)";
  append_json_string(out, pod.uid);
  out += R"(},"reason":)";
  append_json_string(out, reason);
  out += R"(,"message":)";
  append_json_string(out, message.size() > 1024 ? message.substr(0, 1021) + "..." : message);
  out += R"(,"type":)";
  append_json_string(out, type);
  out += R"(,"source":{"component":)";
  append_json_string(out, options.component);
  out += R"(},"reportingComponent":)";
  append_json_string(out, options.component);
  out += R"(,"reportingInstance":)";
  append_json_string(out, options.instance);
  out += R"(,"count":)" + std::to_string(count) + R"(,"firstTimestamp":")" + format_rfc3339(first) + R"(","lastTimestamp":")" +
         format_rfc3339(last) + R"("})";
  return out;
}

void EventRecorder::record(const EventRef& pod, const std::string& type, const std::string& reason,
                           const std::string& message, std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto steady = std::chrono::steady_clock::now();
  const std::string key = pod.uid + "/" + reason;
  auto& [last, repeats] = recent_[key];
  if (last != std::chrono::steady_clock::time_point{} && steady - last < options_.per_object_interval) {
    ++repeats;
    ++stats_.suppressed;
    return;
  }
  // Token bucket.
  tokens_ = std::min(options_.burst,
                     tokens_ + options_.qps * std::chrono::duration<double>(steady - refill_at_).count());
  refill_at_ = steady;
  if (tokens_ < 1 || queue_.size() >= options_.queue_limit) {
    ++stats_.suppressed;
    return;
  }
  tokens_ -= 1;
  queue_.push_back(Pending{pod, type, reason, message, 1 + repeats, now, now});
  last = steady;
  repeats = 0;
  if (recent_.size() > 10000) recent_.clear();  // bounded memory; worst case a few duplicate events
  ++stats_.queued;
  cv_.notify_one();
}

void EventRecorder::run(std::stop_token stop) {
  std::stop_callback cancel(stop, [this] { client_.cancel(); });
  while (!stop.stop_requested()) {
    Pending p;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, stop, [this] { return !queue_.empty(); });
      if (stop.stop_requested()) return;
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    auto r = client_.request("POST", "/api/v1/namespaces/" + p.pod.namespace_name + "/events",
                             event_json(p.pod, p.type, p.reason, p.message, p.count, p.first, p.last, options_));
    std::lock_guard lock(mu_);
    if (r && (r->status == 201 || r->status == 200)) {
      ++stats_.posted;
    } else {
      ++stats_.failed;
    }
  }
}

EventStats EventRecorder::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace fracpack::k8s
