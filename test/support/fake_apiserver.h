// An in-process kube-apiserver for tests, faithful to
// ../shared/reference/kubernetes-protocol.md §4-§7 for what fracpack (and
// kubectl get/watch/create --raw) use:
//
//   LIST   /api/v1/pods, /api/v1/namespaces/{ns}/pods, /api/v1/nodes: limit
//          and continue (pages of one consistent snapshot; tokens expire;
//          RV "0" served whole, as from a watch cache, unless disabled),
//          resourceVersion semantics, field selectors (=, ==, !=).
//   WATCH  ?watch=true|1: chunked JSON events, synthetic ADDED for RV ""/"0",
//          "changes after N" otherwise, 200 + ERROR 410 when N is older than
//          the bounded history, BOOKMARKs with allowWatchBookmarks (every
//          bookmark_interval and before the deadline), timeoutSeconds,
//          ADDED/DELETED when an object starts/stops matching the selector.
//   POST   .../pods/{name}/binding (201, 404, 409 already assigned / being
//          deleted / UID precondition / scheduling gates, 400 name mismatch),
//          .../events; PATCH pods and nodes (merge-patch, resourceVersion
//          precondition).
//   GET    single objects; /api, /apis, /api/v1, /version for kubectl.
//   TLS    optional, with a required bearer token (plain HTTP accepts
//          token-less requests, as clients never send tokens there).
//
// Resource versions are one global increasing counter, as the reference
// recommends. Objects are kept as JSON text (a benchmark loads 150 000
// realistic pods). Faults are switched on by tests, one-shot or persistent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fracpack::testing {

struct Faults {
  std::atomic<int> close_watches{0};      // the next N watches end at once (200, no events)
  std::atomic<int> drop_mid_event{0};     // the next N events are cut mid-object and the connection dropped
  std::atomic<bool> split_events{false};  // each event goes out in several chunks
  std::atomic<bool> batch_events{false};  // events that are ready go out together in one chunk
  std::atomic<int> expire_watches{0};     // the next N watches get 200 + an ERROR 410 event
  std::atomic<int> expire_lists{0};       // the next N lists with a resourceVersion get 410
  std::atomic<int> conflict_bindings{0};  // the next N bindings get 409
  std::atomic<int> fail_bindings{0};      // the next N bindings get 500
  std::atomic<int> throttle{0};           // the next N requests get 429 with Retry-After: 1
  std::atomic<int> unauthorized{0};       // the next N requests get 401
  std::atomic<int> slow_ms{0};            // every response waits this long first
  std::atomic<int> drop_binding_response{0};  // the next N bindings are applied, then the connection dropped
  std::atomic<int> fail_gets{0};              // the next N GETs of one object get 500
  std::atomic<int> event_delay_ms{0};         // watch events wait this long before they are sent
  // Standing faults that strike at random (a seeded draw per request or
  // event), in thousandths: as a flaky network or a restarting API server
  // does, rather than the next N.
  std::atomic<int> cut_event_permille{0};     // a watch event cut mid-object and the connection dropped
  std::atomic<int> slow_permille{0};          // with slow_ms: only this share of answers is late (0: every one)
  std::atomic<int> lose_binding_permille{0};  // a binding applied, then answered 500 (its reply lost)

  void clear();                // every fault off
  std::string pending() const;  // the counters not zero, as "name N, ..." (for failure messages)
};

struct FakeApiServerOptions {
  bool tls = false;
  std::string cert_pem, key_pem;    // with tls
  std::string token;                // with tls: the bearer token every request must carry
  size_t history = 1000;            // watch events kept; older resource versions get 410
  std::chrono::milliseconds bookmark_interval{1000};
  std::chrono::seconds continue_ttl{300};
  // Like a real apiserver's watch cache, serve a LIST at resourceVersion "0"
  // whole, ignoring limit (§4.2: "one page is typical"); false paginates it.
  bool watch_cache = true;
  // Whether a kind's watch cache learns etcd's progress (progress
  // notifications; 1.21 on): a LIST at resourceVersion N (not older than)
  // is served once the store reaches N. false, as 1.20 was seen to do (later
  // versions with etcd's progress notifications between): once a write of its
  // own kind reaches N (other kinds' writes advance N but not that cache);
  // until then 504 "Too large resource version" (a real server blocks 3 s
  // first).
  bool watch_cache_progress = true;
  // What GET /version says (its minor version; major is 1).
  std::string minor_version = "28";
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  std::string url() const;
  uint16_t port() const;
  Faults& faults();

  // Objects: kind "pods", "nodes" or "events". `json` is a full object;
  // the server sets metadata.uid (if absent), resourceVersion and
  // creationTimestamp (if absent). Returns the stored JSON.
  std::string create(const std::string& kind, const std::string& json);
  // Changes an object: fn edits its JSON text (parse, change, dump); the
  // server bumps its resourceVersion. False if absent.
  bool update(const std::string& kind, const std::string& ns, const std::string& name,
              const std::function<std::string(const std::string&)>& fn);
  bool remove(const std::string& kind, const std::string& ns, const std::string& name);
  std::optional<std::string> get(const std::string& kind, const std::string& ns, const std::string& name) const;
  std::vector<std::string> list(const std::string& kind) const;
  // The pods bound to `node` (a spec.nodeName=<node> field selector, as
  // kubelet's and the device plugins' lists ask for).
  std::vector<std::string> pods_on(const std::string& node) const;
  // Bulk load for benchmarks: no parsing, the text is stored as given (it
  // should carry its own resourceVersion); returns the new resource version.
  uint64_t load_raw(const std::string& kind, const std::string& ns, const std::string& name, const std::string& uid,
                    std::string json, const std::string& node_name = "", const std::string& phase = "");

  // Records a change without parsing (benchmarks): `json` must carry
  // metadata.resourceVersion = resource_version() + 1. type: ADDED, MODIFIED, DELETED.
  uint64_t put_raw_event(const std::string& kind, const std::string& type, const std::string& ns, const std::string& name,
                         const std::string& uid, std::string json, const std::string& node_name = "",
                         const std::string& phase = "");

  uint64_t resource_version() const;
  // Forgets the watch history (every resume point older than now gets 410).
  void compact();
  // Ends every open watch now (as at a server-side timeout).
  void close_watches();

  // Counters for assertions.
  // Requests whose "METHOD path?query" starts with prefix; the query's keys
  // in order, decoded, the values of resourceVersion (but "0"), continue and
  // timeoutSeconds shown as "*".
  int requests(const std::string& prefix = "") const;
  // The last requests (up to 1000), as "METHOD target" with the query string.
  std::vector<std::string> request_log() const;
  int open_watches() const;
  int connections() const;                 // TCP connections accepted
  std::string last_authorization() const;  // the Authorization header of the last request

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A self-signed certificate and key (PEM) for 127.0.0.1 and localhost.
struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};
TestCertificate make_test_certificate(const std::string& common_name = "127.0.0.1");

}  // namespace fracpack::testing
