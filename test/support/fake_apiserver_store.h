// The test API server's store (test/support/fake_apiserver.h): objects as JSON
// text with the fields selectors look at, one global resourceVersion
// counter, a bounded event history for watches, consistent continue
// snapshots for paginated lists, pods indexed by spec.nodeName (as the real
// watch cache), and the writes a Binding and a merge patch make. No
// sockets: the routes (fake_apiserver_routes.h) and the transport
// (fake_apiserver.cc) use it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "test/support/fake_apiserver.h"

namespace fracpack::testing::fake {

using json = nlohmann::json;

std::string now_rfc3339();

// The fields selectors and routing look at, kept beside the JSON text.
struct Fields {
  std::string ns, name, node_name, phase, scheduler_name;
  bool unschedulable = false;
  bool deleting = false;
};
Fields fields_of(const json& o);

struct Obj {
  std::string uid;
  uint64_t rv = 0;
  Fields fields;
  std::shared_ptr<const std::string> json;
};

struct HistoryEvent {
  uint64_t rv = 0;
  std::string kind;
  std::string type;                   // ADDED, MODIFIED, DELETED
  std::shared_ptr<const std::string> json;
  Fields now;
  std::optional<Fields> before;       // for selector transitions
  std::shared_ptr<const std::string> before_json;  // what a watcher gets when the object stops matching
};

struct Term {
  std::string field, value;
  bool negate = false;
};
// field=value, field==value, field!=value, comma-separated, ANDed.
std::optional<std::vector<Term>> parse_selector(const std::string& kind, const std::string& s, std::string& error);
bool matches(const std::vector<Term>& terms, const Fields& f);
// The node a selector pins pods to (spec.nodeName=X), or null.
const std::string* pinned_node(const std::vector<Term>& terms);

std::string status_json(int code, const std::string& reason, const std::string& message, const json& details = nullptr);
std::string kind_name(const std::string& kind);
std::map<std::string, std::string> parse_query(const std::string& q);
// RFC 7386 JSON merge patch.
void merge_patch(json& target, const json& patch);
// `text` (an object) with metadata.resourceVersion set to `rv`; a text scan,
// as benchmarks record objects without parsing them.
std::string with_resource_version(const std::string& text, uint64_t rv);

struct Response {
  Response(int s = 200, std::string b = {}, std::string ra = {}) : status(s), body(std::move(b)), retry_after(std::move(ra)) {}
  int status;
  std::string body;
  std::string retry_after;
  std::string content_type = "application/json";
  // Written after `body` without copying (large lists): shared with the
  // store, which may change meanwhile.
  std::vector<std::shared_ptr<const std::string>> parts;
};

// What a watch sends next.
struct WatchBatch {
  std::vector<std::string> events;  // each "{...}\n"
  uint64_t sent = 0;                // the resume point after them
  bool expired = false;             // one ERROR 410 event in `events`, then the watch ends
};

class FakeStore {
 public:
  explicit FakeStore(const FakeApiServerOptions& options) : options_(options) {}

  // Every change calls this (the transport wakes its watches), the lock held.
  std::function<void()> changed = [] {};

  static std::string key(const std::string& kind, const std::string& ns, const std::string& name) {
    return kind == "nodes" ? name : ns + "/" + name;
  }

  // --- with mu held ---
  std::string create_locked(const std::string& kind, json o);
  // Applies fn to the stored object and bumps its version.
  std::optional<std::string> update_locked(const std::string& kind, const std::string& k, const std::function<void(json&)>& fn);
  bool remove_locked(const std::string& kind, const std::string& k);
  void record(const std::string& kind, const std::string& type, const Obj& now, std::optional<Fields> before,
              std::shared_ptr<const std::string> before_json = nullptr);
  void index_pod(const std::optional<Fields>& before, const Fields* now);

  // --- taking mu ---
  // A LIST (limit/continue, resourceVersion semantics); `expire` answers 410
  // to a list at a resourceVersion (an injected fault).
  Response list(const std::string& kind, const std::string& ns, const std::map<std::string, std::string>& q, bool expire);
  // The Binding write (§5.1) and a merge patch (§5.3).
  Response bind(const std::string& ns, const std::string& name, const std::string& body);
  Response patch(const std::string& kind, const std::string& ns, const std::string& name, const std::string& content_type,
                 const std::string& body);
  // A watch's start at `rv_param` ("", "0": synthetic ADDED of the current
  // objects), and the changes after `sent`.
  WatchBatch watch_start(const std::string& kind, const std::string& ns, const std::vector<Term>& terms, const std::string& rv_param,
                         bool expire);
  WatchBatch watch_next(const std::string& kind, const std::string& ns, const std::vector<Term>& terms, uint64_t sent);
  std::string bookmark(const std::string& kind, uint64_t at) const;

  mutable std::mutex mu;
  std::map<std::string, std::map<std::string, Obj>> objects;  // kind -> key -> object
  std::deque<HistoryEvent> history;
  uint64_t rv = 1;
  std::map<std::string, uint64_t> kind_rv;  // kind -> the resource version of its last write
  uint64_t compacted = 1;  // resume points below this are gone
  uint64_t uid_counter = 0;
  // Pods by spec.nodeName, as the API server's watch cache indexes them:
  // a kubelet's (or the bind fence's) list of one node's pods does not scan
  // the cluster.
  std::unordered_map<std::string, std::set<std::string>> pods_by_node;

 private:
  struct Snapshot {
    uint64_t rv;
    std::vector<std::shared_ptr<const std::string>> items;  // shared with the store: a copy is a count
    std::chrono::steady_clock::time_point created;
  };
  // Continue snapshots kept at most (the oldest dropped, its token then
  // 410 Expired, as an expired one): a client that reads one page of a long
  // list (limit=1, to learn the current resourceVersion) never continues.
  static constexpr size_t kMaxSnapshots = 64;
  const FakeApiServerOptions& options_;
  std::map<std::string, Snapshot> snapshots_;  // continue token id -> snapshot
  uint64_t snapshot_counter_ = 0;
};

}  // namespace fracpack::testing::fake
