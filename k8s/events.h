// Kubernetes Events for what users should see on their pods ("no node can
// fit", bind failures), posted from a background thread so scheduling never
// waits on them, and rate-limited: one event per (pod, reason) per interval
// (repeats are counted into the next one), and a global token bucket.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>

#include "k8s/api_client.h"

namespace fracpack::k8s {

struct EventOptions {
  std::chrono::milliseconds per_object_interval{60000};
  double qps = 5;          // sustained events per second
  double burst = 20;
  size_t queue_limit = 1000;
  std::string component = "fracpack";
  std::string instance;    // reportingInstance (the host name)
};

struct EventStats {
  uint64_t queued = 0;
  uint64_t posted = 0;
  uint64_t suppressed = 0;  // rate-limited or a repeat within the interval
  uint64_t failed = 0;
};

// The object an Event is about: a pod, or (kind) a ResourceQuota whose
// limits cannot be read.
struct EventRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string kind = "Pod";
};

class EventRecorder {
 public:
  EventRecorder(ClientConfig client, EventOptions options);

  // Never blocks: queues or drops.
  void record(const EventRef& pod, const std::string& type, const std::string& reason, const std::string& message,
              std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
  // Posts queued events until stopped.
  void run(std::stop_token stop);
  EventStats stats() const;

  // The Event body (exposed for tests).
  static std::string event_json(const EventRef& pod, const std::string& type, const std::string& reason,
                                const std::string& message, int count, std::chrono::system_clock::time_point first,
                                std::chrono::system_clock::time_point last, const EventOptions& options);

 private:
  struct Pending {
    EventRef pod;
    std::string type, reason, message;
    int count = 1;
    std::chrono::system_clock::time_point first, last;
  };
  ApiClient client_;
  EventOptions options_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> queue_;
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, int>> recent_;  // key -> (last posted, repeats)
  double tokens_;
  std::chrono::steady_clock::time_point refill_at_;
  EventStats stats_;
};

}  // namespace fracpack::k8s
