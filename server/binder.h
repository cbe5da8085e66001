// The binder: where a placement chosen at bind is written (the transport of
// a bind; what to write and what becomes of the reservation is the bind
// service's, server/bind_service.h). Two
// implementations: BindingWorkers (server/binding_workers.h) posts Bindings
// to the API server, fenced; InMemoryBinder (server/memory_binder.h) applies
// them to the standalone state.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "k8s/binding.h"
#include "k8s/objects.h"
#include "common/result.h"

namespace fracpack::server {

// Where a chosen placement is written: the API server (a pool of workers
// posting Bindings) or, standalone, the in-memory state.
class Binder {
 public:
  virtual ~Binder() = default;
  using Clock = std::chrono::steady_clock;
  // What becomes of a bind, reported once, from any thread: ok, or the
  // reason it failed and whether the pod is gone (404: no point keeping
  // anything for it).
  struct Outcome {
    Status status = Status::Ok();
    bool pod_gone = false;
    bool outcome_unknown = false;  // the Binding may have been applied: keep the reservation
    bool moved = false;            // the fence moved the reservation: `target` carries the new cards
  };
  struct Job {
    k8s::BindTarget target;  // its annotations: the allocation record chosen on arrival
    k8s::Pod pod;            // as fracpack knows it (the in-memory binder stores it)
    Clock::time_point arrived{};
    // Not posted after this: kube-scheduler has stopped waiting, and a late
    // Binding would only race whoever it asks next.
    Clock::time_point deadline = Clock::time_point::max();
    // A GPU bind: the node is fenced and the reservation rechecked
    // (Listener::recheck) before the Binding is posted; under a contract
    // with a node lock (Contract::node_lock) the lock is taken first.
    bool fenced = false;
    // Non-empty (a fenced bind whose namespace has a GPU quota): another
    // writer's binds on other nodes count too. The watch's delivery of the
    // fence's marker write proves the ledger has them; failing that (no
    // marker, the watch behind), the namespace's bound pods are read as
    // well. Either way the reservation is rechecked against the quota.
    std::string fence_namespace;
    // A bind that reserved: after an unknown outcome the binder reads the pod
    // until it can tell where it stands (Listener::settled), so the
    // reservation is settled at once, not left to its TTL.
    bool settle_unknown = false;
  };
  // The one interface a binder calls back through, from its own threads:
  // the bind service's bind in flight (server/bind_service.h). The binder
  // holds it until the last call.
  class Listener {
   public:
    virtual ~Listener() = default;
    // After the bind fence (k8s/bind_fence.h): `fresh` are the pods the API
    // server has bound on the target node now, `in_namespace` the pods of
    // Job::fence_namespace (empty when none was read). Rewrites the target's
    // record if the reservation had to move (and says so in `moved`), or
    // says why the bind is refused.
    virtual Status recheck(const std::vector<k8s::Pod>& fresh, const std::vector<k8s::Pod>& in_namespace, k8s::BindTarget& target,
                           bool* moved) = 0;
    // Whether the pod watch delivers the bind fence's marker write carrying
    // `marker_value` by `until`: the ledger then holds every pod bound
    // before it, and the quota's fence needs no namespace read.
    virtual bool watch_caught_up(const std::string& /*marker_value*/, Clock::time_point /*until*/) { return false; }
    // What became of the bind, once: `written` is the target as posted.
    virtual void finished(Outcome outcome, const k8s::BindTarget& written) = 0;
    // Only after an unknown outcome of a Job with settle_unknown, after
    // finished(): kThere, kNotThere, kGone; kUnknown when it never could tell.
    virtual void settled(k8s::Presence presence) = 0;
  };
  virtual void bind(Job job, std::shared_ptr<Listener> listener) = 0;
};

}  // namespace fracpack::server
