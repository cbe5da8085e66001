// The binder: where a placement chosen at bind is written. Two
// implementations: BindingWorkers (server/binding_workers.h) posts Bindings
// to the API server, fenced; InMemoryBinder (server/memory_binder.h) applies
// them to the standalone state.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "k8s/binding.h"
#include "k8s/objects.h"
#include "scheduling/result.h"

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
    bool rechosen = false;         // the fence moved the reservation: `target` carries the new cards
  };
  // A recheck after the bind fence (k8s/bind_fence.h): `fresh` are the pods
  // the API server has bound on the target node now; rewrites the target's
  // record if the reservation had to move (and says so in `rechosen`), or
  // says why the bind is refused.
  using Recheck = std::function<Status(const std::vector<k8s::Pod>& fresh, k8s::BindTarget& target, bool* rechosen)>;
  struct Job {
    k8s::BindTarget target;  // its annotations: the allocation record chosen on arrival
    k8s::Pod pod;            // as fracpack knows it (the in-memory binder stores it)
    Clock::time_point arrived{};
    // Not posted after this: kube-scheduler has stopped waiting, and a late
    // Binding would only race whoever it asks next.
    Clock::time_point deadline = Clock::time_point::max();
    Recheck recheck;  // GPU binds (null: nothing to fence)
    // After an unknown outcome (reported first, through `done`), the
    // binder reads the pod until it can tell where it stands and says so
    // here (kThere, kNotThere, kGone; kUnknown when it never could): the
    // reservation is settled at once, not left to its TTL.
    std::function<void(k8s::Presence)> settled;
  };
  virtual void bind(Job job, std::function<void(Outcome, const k8s::BindTarget&)> done) = 0;
};

}  // namespace fracpack::server
