// An informer: keeps a sink in step with one kind of object on the API
// server by list+watch, following client-go's reflector
// (../shared/reference/kubernetes-protocol.md §4.5):
//
//   LIST  paginated (limit/continue), streamed item by item; the sink's
//         store is *replaced* (what the list lacks is gone); a 410 on a
//         resource version retries at once with none (a consistent read).
//   WATCH from the list's resourceVersion with bookmarks and a server
//         timeout of 300-600 s; events parsed at JSON object boundaries
//         whatever the chunking; every event and BOOKMARK moves the resume
//         point; an ERROR 410 relists; a normal end re-watches at once; a
//         watch that ends within a second with no event counts as a
//         failure (backoff, then relist); connection refused and 429 wait
//         and re-watch without relisting.
//   Backoff: exponential 0.8 s -> 30 s, x2, jittered, reset after 2 min
//   without failure; Retry-After is honoured.
//
// A large list is decoded and applied on a second thread while the next
// bytes arrive (items are handed over in batches through a bounded queue),
// so a cold sync of 150 000 pods keeps both cores busy. The sink sees
// begin_list, list_item..., end_list in order, list_item on that thread.
//
// resourceVersion is opaque: compared for equality only, never ordered.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>

#include "k8s/api_client.h"

namespace fracpack::k8s {

enum class WatchEventType { kAdded, kModified, kDeleted };

// The pods fracpack follows: finished pods hold nothing (kube-scheduler's own
// pod informer uses the same selector, ../shared/reference/kubernetes-protocol.md §4.4).
inline constexpr const char* kLivePodsSelector = "status.phase!=Succeeded,status.phase!=Failed";

// Where an informer delivers objects (raw JSON, decoded by the sink).
class InformerSink {
 public:
  virtual ~InformerSink() = default;
  // A (re)list begins; items follow, then end_list or abort_list.
  // `consistent`: a quorum read (no resourceVersion), reflecting every write
  // that completed before it started.
  virtual void begin_list(bool consistent) = 0;
  virtual Status list_item(std::string_view object_json) = 0;
  // The list is complete at this resource version: objects it did not
  // contain are gone.
  virtual void end_list(const std::string& resource_version) = 0;
  virtual void abort_list() = 0;
  // One watch event; returns the object's resourceVersion.
  virtual Result<std::string> event(WatchEventType type, std::string_view object_json) = 0;
  // The watch ended otherwise than at its timeout (the API server went
  // away, refused it, expired it): every other client's watch of that API
  // server may have broken too (kubelet's, which then relists).
  virtual void watch_interrupted() {}
};

struct InformerOptions {
  std::string resource;        // "/api/v1/pods"
  std::string field_selector;  // e.g. "status.phase!=Succeeded,status.phase!=Failed"
  int page_size = 500;
  std::chrono::seconds min_watch_timeout{300};  // timeoutSeconds drawn from [min, 2*min)
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds backoff_reset{120000};
  std::chrono::milliseconds read_margin{30000};  // beyond timeoutSeconds before a read gives up
  bool decode_thread = true;  // lists: decode and apply on a second thread (see above)
};

struct InformerStats {
  uint64_t lists = 0;          // complete lists applied
  uint64_t relists = 0;        // lists after the first
  uint64_t watches = 0;        // watch requests opened
  uint64_t events = 0;         // ADDED/MODIFIED/DELETED applied
  uint64_t bookmarks = 0;
  uint64_t expired = 0;        // 410s seen (list or watch)
  uint64_t errors = 0;         // failed requests and broken streams
  uint64_t throttled = 0;      // 429s
  std::string resource_version;  // the resume point
  std::chrono::steady_clock::time_point last_event{};
  std::chrono::steady_clock::time_point synced_at{};  // last complete list
  bool synced = false;
  std::string last_error;
};

class Informer {
 public:
  Informer(ClientConfig client, InformerOptions options, InformerSink& sink, uint64_t seed = std::random_device{}());

  // Lists and watches until `stop` is requested. Blocking; run it on its own thread.
  void run(std::stop_token stop);
  // Interrupts a blocked request (used by the stop callback).
  void interrupt() { client_.cancel(); }

  InformerStats stats() const;

 private:
  enum class Next { kList, kWatch, kStop };
  Next list(std::stop_token& stop);
  Next watch(std::stop_token& stop);
  void sleep(std::stop_token& stop, std::chrono::milliseconds d);
  std::chrono::milliseconds next_backoff();
  void failed(const std::string& what);
  void throttled(const char* verb);  // a 429: counted, and the last error
  std::string query(const std::string& rv, bool watch, int timeout_seconds, const std::string& cont) const;

  ApiClient client_;
  InformerOptions options_;
  InformerSink& sink_;
  std::mt19937_64 rng_;
  std::string last_rv_;
  bool rv_unavailable_ = false;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point last_failure_{};
  mutable std::mutex stats_mu_;
  InformerStats stats_;
};

}  // namespace fracpack::k8s
