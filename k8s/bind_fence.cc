#include "k8s/bind_fence.h"

#include <random>
#include <thread>

#include "common/json/write.h"
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

// After the marker was refused, how long binds read consistently before it
// is tried again (an operator applying the manifest should not need a
// restart; a missing one should not cost a failed write per bind).
constexpr std::chrono::seconds kMarkerRetry{60};

BindFence::BindFence(std::string pod_field_selector, Selection selection, Read read, Marker marker)
    : field_selector_(std::move(pod_field_selector)),
      selection_(std::move(selection)),
      read_(read),
      marker_(std::move(marker)),
      nonce_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

BindFence::Read BindFence::mode() const {
  std::lock_guard lock(mu_);
  return read_ == Read::kAuto ? resolved_ : read_;
}

BindFence::Read BindFence::effective_read(ApiClient& client, Clock::time_point deadline) {
  if (read_ != Read::kAuto) return read_;
  {
    std::lock_guard lock(mu_);
    if (resolved_ != Read::kAuto) return resolved_;
  }
  // Once: the API server's version picks the read. Until it is known, the
  // read every version serves cheaply and freshly.
  auto v = read_server_version(client, time_left(deadline, std::chrono::milliseconds(1000)));
  if (!v) return Read::kMarker;
  std::lock_guard lock(mu_);
  if (resolved_ == Read::kAuto) {
    resolved_ = consistent_list_from_cache(*v) ? Read::kConsistent : Read::kMarker;
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

std::string BindFence::marker_problem() const {
  std::lock_guard lock(mu_);
  return marker_problem_;
}

Result<std::string> BindFence::read_version(ApiClient& client, std::chrono::milliseconds timeout) {
  // A quorum read of one pod: its list metadata carries the current
  // resourceVersion of the whole store.
  auto r = client.request("GET", "/api/v1/pods?limit=1", {}, "application/json", timeout);
  if (!r) return Error{"reading the API server's current resourceVersion: " + r.message()};
  if (r->status != 200) return Error{"reading the API server's current resourceVersion: " + api_error_message(*r)};
  auto list = parse_list(r->body, Selection{});
  if (!list) return Error{"reading the API server's current resourceVersion: " + list.message()};
  if (list->resource_version.empty()) return Error{"the API server's pod list carries no metadata.resourceVersion"};
  return list->resource_version;
}

Result<std::string> BindFence::write_marker(ApiClient& client, std::chrono::milliseconds timeout, std::string* value) {
  const std::string who = "the bind fence's marker pod " + marker_.ns + "/" + marker_.name;
  // A value no write has used: an unchanged object is not written, and its
  // old resourceVersion would predate the bind.
  *value = std::to_string(nonce_) + "-" + std::to_string(++marker_writes_);
  std::string patch = "{\"metadata\":{\"annotations\":{";
  append_json_string(patch, kMarkerAnnotation);
  patch.push_back(':');
  append_json_string(patch, *value);
  patch += "}}}";
  auto r = client.request("PATCH", "/api/v1/namespaces/" + url_encode(marker_.ns) + "/pods/" + url_encode(marker_.name),
                          patch, "application/merge-patch+json", timeout);
  if (!r) return Error{"writing " + who + ": " + r.message()};
  if (r->status == 403 || r->status == 404) {
    // Not there, or not ours to write: the installation lacks
    // manifests/bind-fence.yaml or its Role. Binds read consistently.
    std::lock_guard lock(mu_);
    marker_problem_ = who + ": " + api_error_message(*r) +
                      " (apply manifests/bind-fence.yaml; until then each bind reads its node's pods consistently, from "
                      "etcd before Kubernetes 1.31)";
    marker_refused_until_ = Clock::now() + kMarkerRetry;
    return std::string();
  }
  if (r->status != 200) return Error{"writing " + who + ": " + api_error_message(*r)};
  auto pod = parse_pod(r->body, Selection{});
  if (!pod) return Error{"writing " + who + ": " + pod.message()};
  if (pod->meta.resource_version.empty()) return Error{"writing " + who + ": the answer carries no metadata.resourceVersion"};
  return pod->meta.resource_version;
}

Result<std::string> BindFence::current_version(ApiClient& client, Read read, Clock::time_point arrived,
                                               Clock::time_point deadline, std::string* marker_value) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (read == Read::kMarker && (marker_.name.empty() || Clock::now() < marker_refused_until_)) {
      ++stats_.marker_fallbacks;
      return std::string();
    }
    if (!last_version_.empty() && last_started_ >= arrived) {
      ++stats_.shared;
      *marker_value = last_marker_value_;
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
    const auto timeout = time_left(deadline, client.config().request_timeout);
    Result<std::string> version = Error{"the bind's deadline passed before the API server's current resourceVersion was read"};
    std::string value;
    if (timeout.count() > 0) version = read == Read::kMarker ? write_marker(client, timeout, &value) : read_version(client, timeout);
    lock.lock();
    reading_ = false;
    ++read_generation_;
    ++stats_.version_reads;
    if (version && !version->empty()) *marker_value = value;
    if (version && !version->empty() && started >= last_started_) {
      last_started_ = started;
      last_version_ = *version;
      last_marker_value_ = value;
    }
    if (!version) ++stats_.failures;
    if (version && version->empty()) ++stats_.marker_fallbacks;
    done_.notify_all();
    return version;
  }
}

Result<std::vector<Pod>> BindFence::node_pods(ApiClient& client, const std::string& node, Clock::time_point arrived,
                                              Clock::time_point deadline, ReadAt* at) {
  ReadAt used;
  if (const Read read = effective_read(client, deadline); read == Read::kResourceVersion || read == Read::kMarker) {
    auto version = current_version(client, read, arrived, deadline, &used.marker_value);
    if (!version) return version.error();
    used.version = std::move(*version);
  }
  if (at != nullptr) *at = used;
  std::string selector = "spec.nodeName=" + node;
  if (!field_selector_.empty()) selector += "," + field_selector_;
  return fresh_pods(client, "/api/v1/pods?fieldSelector=" + url_encode(selector), "the pods of node " + node, used.version, deadline);
}

Result<std::vector<Pod>> BindFence::namespace_pods(ApiClient& client, const std::string& namespace_name, const ReadAt& at,
                                                   Clock::time_point deadline) {
  // Bound pods only (kube-scheduler's own "assigned pods" selector): the
  // pending ones hold nothing, and a busy namespace has many.
  std::string selector = "spec.nodeName!=";
  if (!field_selector_.empty()) selector += "," + field_selector_;
  const std::string target = "/api/v1/namespaces/" + url_encode(namespace_name) + "/pods?fieldSelector=" + url_encode(selector);
  return fresh_pods(client, target, "the pods of namespace " + namespace_name, at.version, deadline);
}

Result<std::vector<Pod>> BindFence::fresh_pods(ApiClient& client, std::string target, const std::string& what, const std::string& version,
                                               Clock::time_point deadline) {
  // No limit: without a resourceVersion a consistent read; with one, "not
  // older than" it; either way the whole answer at once (§4.2).
  if (!version.empty()) target += "&resourceVersion=" + url_encode(version);
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
      return Error{"reading " + what + ": " + r.message()};
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
      return Error{"reading " + what + ": " + api_error_message(*r)};
    }
    auto list = parse_list(r->body, selection_);
    if (!list) {
      std::lock_guard lock(mu_);
      ++stats_.failures;
      return Error{"reading " + what + ": " + list.message()};
    }
    return std::move(list->pods);
  }
  std::lock_guard lock(mu_);
  ++stats_.failures;
  return Error{"the bind's deadline passed before " + what + " could be read"};
}

}  // namespace fracpack::k8s
