#include "k8s/bind_fence.h"

#include <thread>

#include "k8s/server_version.h"

namespace fracpack::k8s {

namespace {

// What is left of the time until `deadline`, at most `cap` (the client's own
// request timeout); zero when it has passed.
std::chrono::milliseconds time_left(BindFence::Clock::time_point deadline, std::chrono::milliseconds cap) {
  // Rounded up: a request cut by this timeout ends at the deadline, not before.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - BindFence::Clock::now());
  return std::max(std::chrono::milliseconds(0), std::min(left, cap));
}

}  // namespace

BindFence::BindFence(std::string pod_field_selector, Selection selection, Read read)
    : field_selector_(std::move(pod_field_selector)), selection_(std::move(selection)), read_(read) {}

BindFence::Read BindFence::mode() const {
  std::lock_guard lock(mu_);
  return read_ == Read::kAuto ? resolved_ : read_;
}

std::string_view BindFence::mode_name(Read r) {
  switch (r) {
    case Read::kConsistent: return "consistent";
    case Read::kResourceVersion: return "resourceVersion";
    case Read::kAuto: return "auto";
  }
  return "?";
}

BindFence::Read BindFence::effective_read(ApiClient& client, Clock::time_point deadline) {
  if (read_ != Read::kAuto) return read_;
  {
    std::lock_guard lock(mu_);
    if (resolved_ != Read::kAuto) return resolved_;
  }
  // Once: the API server's version picks the read. Until it is known, the
  // read every version serves cheaply.
  auto v = read_server_version(client, time_left(deadline, std::chrono::milliseconds(1000)));
  if (!v) return Read::kResourceVersion;
  std::lock_guard lock(mu_);
  if (resolved_ == Read::kAuto) {
    resolved_ = consistent_list_from_cache(*v) ? Read::kConsistent : Read::kResourceVersion;
    resolved_version_ = v->git_version;
  }
  return resolved_;
}

std::string BindFence::resolved_from() const {
  std::lock_guard lock(mu_);
  return resolved_version_;
}

BindFence::Stats BindFence::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

Result<std::string> BindFence::current_version(ApiClient& client, Clock::time_point arrived, Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (!last_version_.empty() && last_started_ >= arrived) {
      ++stats_.shared;
      return last_version_;
    }
    if (reading_) {
      // Join the read in flight if it started after this bind arrived;
      // otherwise it may predate a write this bind must see: wait for it to
      // end, then start (or join) a later one.
      const uint64_t generation = read_generation_;
      if (!done_.wait_until(lock, deadline, [&] { return read_generation_ != generation; })) {
        ++stats_.failures;
        return Error{"timed out waiting for the API server's current resourceVersion"};
      }
      continue;
    }
    reading_ = true;
    const Clock::time_point started = Clock::now();
    reading_since_ = started;
    lock.unlock();
    // A quorum read of one pod: its list metadata carries the current
    // resourceVersion of the whole store.
    const auto timeout = time_left(deadline, client.config().request_timeout);
    Result<std::string> version = Error{"the bind's deadline passed before the API server's current resourceVersion was read"};
    if (timeout.count() > 0) {
      auto r = client.request("GET", "/api/v1/pods?limit=1", {}, "application/json", timeout);
      if (!r) {
        version = Error{"reading the API server's current resourceVersion: " + r.message()};
      } else if (r->status != 200) {
        version = Error{"reading the API server's current resourceVersion: " + api_error_message(*r)};
      } else if (auto list = parse_list(r->body, Selection{}); !list) {
        version = Error{"reading the API server's current resourceVersion: " + list.message()};
      } else if (list->resource_version.empty()) {
        version = Error{"the API server's pod list carries no metadata.resourceVersion"};
      } else {
        version = list->resource_version;
      }
    }
    lock.lock();
    reading_ = false;
    ++read_generation_;
    ++stats_.version_reads;
    if (version && started >= last_started_) {
      last_started_ = started;
      last_version_ = *version;
    }
    if (!version) ++stats_.failures;
    done_.notify_all();
    return version;
  }
}

Result<std::vector<Pod>> BindFence::node_pods(ApiClient& client, const std::string& node, Clock::time_point arrived,
                                              Clock::time_point deadline) {
  std::string selector = "spec.nodeName=" + node;
  if (!field_selector_.empty()) selector += "," + field_selector_;
  // No limit: without a resourceVersion a consistent read; with one, "not
  // older than" it; either way the whole answer at once (§4.2).
  std::string target = "/api/v1/pods?fieldSelector=" + url_encode(selector);
  if (effective_read(client, deadline) == Read::kResourceVersion) {
    auto version = current_version(client, arrived, deadline);
    if (!version) return version.error();
    target += "&resourceVersion=" + url_encode(*version);
  }
  for (;;) {
    const auto timeout = time_left(deadline, client.config().request_timeout);
    if (timeout.count() == 0) break;
    auto r = client.request("GET", target, {}, "application/json", timeout);
    {
      std::lock_guard lock(mu_);
      ++stats_.node_reads;
    }
    if (!r) {
      std::lock_guard lock(mu_);
      ++stats_.failures;
      return Error{"reading the pods of node " + node + ": " + r.message()};
    }
    if (r->status == 504 && r->body.find("Too large resource version") != std::string::npos) {
      // The API server's cache has not reached that version yet: it asks
      // to come back (Retry-After), within this bind's deadline.
      const auto wait = std::max(retry_after_delay(r->retry_after), std::chrono::milliseconds(50));
      if (Clock::now() + wait >= deadline) break;
      std::this_thread::sleep_for(wait);
      continue;
    }
    if (r->status != 200) {
      std::lock_guard lock(mu_);
      ++stats_.failures;
      return Error{"reading the pods of node " + node + ": " + api_error_message(*r)};
    }
    auto list = parse_list(r->body, selection_);
    if (!list) {
      std::lock_guard lock(mu_);
      ++stats_.failures;
      return Error{"reading the pods of node " + node + ": " + list.message()};
    }
    return std::move(list->pods);
  }
  std::lock_guard lock(mu_);
  ++stats_.failures;
  return Error{"the bind's deadline passed before the pods of node " + node + " could be read"};
}

}  // namespace fracpack::k8s
