// The bind fence: no placement on a ledger older than the API server.
//
// fracpack's ledger follows the API server through a watch. A single
// replica never places on stale data (its own reservations cover its own
// binds), but any second writer — the other replica after a failover, an
// old leader finishing its binds, a second scheduler profile with its own
// fracpack — binds pods this replica learns of only when its watch delivers
// them, which after a cut watch and client-go's backoff can be seconds
// later. Placing on cards in that window double-books them.
//
// So before a GPU bind is posted, its node's live pods are read from the API
// server as of a moment after the bind arrived, in one of three ways:
//
//   kAuto (default)    the API server's version picks (GET /version, once):
//      kConsistent from 1.31 on, kMarker before (and until the version is
//      known). Found on a real 1.20 API server (issue 31): a consistent list
//      per bind, read from etcd, failed a third of the binds of a burst;
//      kResourceVersion failed every bind of a quiet cluster.
//   kConsistent        one consistent LIST of the node's pods
//      (fieldSelector spec.nodeName=<node>, no resourceVersion: a quorum
//      read). Kubernetes 1.31 and later serve it from the watch cache once
//      the cache has caught up with etcd (ConsistentListFromCache, KEP-2340,
//      GA in 1.34); older API servers read every pod from etcd for it.
//   kMarker            one write, one cached read: a merge patch of an
//      annotation on the marker pod (one pod fracpack owns, never scheduled:
//      manifests/bind-fence.yaml), whose answer carries a resourceVersion
//      later than every pod write committed before the patch; then the
//      node's pods at resourceVersion=<that> ("not older than": served from
//      the watch cache, which reaches it as soon as the patch's own event
//      arrives). One write serves every bind that arrived before it started
//      (single flight). Where the marker pod is missing or the patch is
//      forbidden (403/404), binds fall back to kConsistent and say so
//      (marker_fallbacks); it is tried again a minute later.
//   kResourceVersion  the current resourceVersion from a consistent LIST of
//      one pod (limit=1), then the node's pods at it. Cheap, but the number
//      is etcd's global revision, and before 1.21's progress notifications
//      the pods cache reaches it only with the next pod write: in a quiet
//      cluster a bind waits (3 s blocks, 504 "Too large resource version")
//      past its deadline. Kept for clusters whose pods never rest.
//
// A pod whose namespace has a GPU quota (scheduling/quota.h) has its
// namespace's pods read too, the same way: another writer's binds on other
// nodes count against the quota as well (found by the failover soak with
// quotas: after a failover the new leader, its watch behind, let a namespace
// hold 5 cards of 4).
//
// Reservations::recheck (k8s/reservations.h) then applies the bound pods the ledger lacks, as
// their watch events would, and re-checks the bind's reservation beside
// them. Only resourceVersion strings the server gave are sent back; none is
// compared or ordered here (../shared/reference/kubernetes-protocol.md §4.6).
//
// What this cannot close: a Binding another writer posts after step 2 and
// before this bind's own Binding lands (milliseconds, or an old leader's
// request still in flight: bounded by its request deadline and bind
// timeout). The reconciler reports any over-commit that slips through.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/bind_fence_read.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

class BindFence {
 public:
  using Clock = std::chrono::steady_clock;

  using Read = BindFenceRead;  // k8s/bind_fence_read.h: the names, parsed once

  // The pod kMarker writes: namespace and name (empty: none, so kMarker
  // reads consistently).
  struct Marker {
    std::string ns, name;
  };
  // The annotation the marker's write changes.
  static constexpr std::string_view kMarkerAnnotation = "fracpack.io/bind-fence";

  // `pod_field_selector`: the pod informer's ("status.phase!=Succeeded,..."),
  // so the node read sees what the informer would; `selection`: what the
  // decoder keeps.
  BindFence(std::string pod_field_selector, Selection selection, Read read = Read::kAuto, Marker marker = {});

  // The read in use (kAuto until the version is known; its name:
  // bind_fence_read_name) and the API server version that picked it ("" if
  // none did).
  Read mode() const;
  std::string resolved_from() const;

  // The pods bound to `node` as the API server has them at a resourceVersion
  // no older than `arrived`. Runs on the caller's thread with the caller's
  // client (a bind worker's); gives up at `deadline`.
  // What a read was made at: the resourceVersion ("" for a consistent
  // read) and, with kMarker, the value of the marker write behind it. Once
  // the pod watch delivers that value (ClusterState::wait_fence_marker),
  // the ledger holds every pod bound before the write, in every namespace.
  struct ReadAt {
    std::string version;
    std::string marker_value;
  };
  // `at`, if given: what this read was made at.
  Result<std::vector<Pod>> node_pods(ApiClient& client, const std::string& node, Clock::time_point arrived,
                                     Clock::time_point deadline, ReadAt* at = nullptr);
  // The bound pods of `namespace_name` as the API server has them at the
  // node read's `at` (consistently where that was): for a pod whose
  // namespace has a GPU quota, another writer's binds on other nodes count
  // against it too.
  Result<std::vector<Pod>> namespace_pods(ApiClient& client, const std::string& namespace_name, const ReadAt& at,
                                          Clock::time_point deadline);

  struct Stats {
    uint64_t version_reads = 0;  // kResourceVersion / kMarker: reads (writes) of a current resourceVersion
    uint64_t shared = 0;         // fences served by a read another bind started
    uint64_t node_reads = 0;      // reads of pods: a node's, or a namespace's
    uint64_t failures = 0;
    uint64_t marker_fallbacks = 0;  // kMarker binds read consistently (marker pod missing or forbidden)
  };
  // Why the marker was last refused ("" if it never was).
  std::string marker_problem() const;
  Stats stats() const;

 private:
  // GET `target` (a pod list) at `version` ("" consistently); `what` names it in errors.
  Result<std::vector<Pod>> fresh_pods(ApiClient& client, std::string target, const std::string& what, const std::string& version,
                                      Clock::time_point deadline);
  // A resourceVersion read (kResourceVersion) or written (kMarker) after
  // `arrived`; an empty string: the marker is unusable, read consistently.
  Result<std::string> current_version(ApiClient& client, Read read, Clock::time_point arrived, Clock::time_point deadline,
                                      std::string* marker_value);
  Result<std::string> read_version(ApiClient& client, std::chrono::milliseconds timeout);
  Result<std::string> write_marker(ApiClient& client, std::chrono::milliseconds timeout, std::string* value);
  Read effective_read(ApiClient& client, Clock::time_point deadline);

  const std::string field_selector_;
  const Selection selection_;
  const Read read_;
  const Marker marker_;
  const uint64_t nonce_;                 // this fence's marker values differ from every other's
  uint64_t marker_writes_ = 0;
  Clock::time_point marker_refused_until_{};  // after a 403/404: consistent reads until then
  std::string marker_problem_;
  mutable std::mutex mu_;
  Read resolved_ = Read::kAuto;    // kAuto: what the version picked
  std::string resolved_version_;
  std::condition_variable done_;
  bool reading_ = false;                 // a version read is in flight...
  Clock::time_point reading_since_{};    // ...started then
  Clock::time_point last_started_{};     // the last successful read started then...
  std::string last_version_;             // ...and answered this
  std::string last_marker_value_;        // ...and wrote this to the marker ("" for a version read)
  uint64_t read_generation_ = 0;         // bumped when a read ends, ok or not
  Stats stats_;
};

}  // namespace fracpack::k8s
