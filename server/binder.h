// The binder: where a bind's API requests run, off the extender's io
// threads. It knows nothing of a bind's steps: the bind service
// (server/bind_service.h) hands it one job per bind, and a worker runs the
// job with what it lends (Worker: its connection to the API server, the bind
// fence, where Events go); the job makes the requests itself (the node
// lock, the fence's reads, the Binding, a read of the pod), in the order of
// the bind's steps. Two implementations: BindingWorkers
// (server/binding_workers.h), a pool of workers each with its own
// connection; InMemoryBinder (server/memory_binder.h), standalone, which runs
// the job at once with no connection (the Binding is applied to the store).
#pragma once

#include <chrono>
#include <functional>

#include "k8s/api_client.h"
#include "k8s/bind_fence.h"
#include "k8s/events.h"

namespace fracpack::server {

class Binder {
 public:
  virtual ~Binder() = default;
  using Clock = std::chrono::steady_clock;

  // What a worker lends the job it runs.
  struct Worker {
    // Its own keep-alive connection to the API server; null standalone
    // (no API server: the Binding is applied to the store at once).
    k8s::ApiClient* client = nullptr;
    // The bind fence (k8s/bind_fence.h); null: none (a single writer).
    k8s::BindFence* fence = nullptr;
    // Where a failed bind is told (a FailedBinding Event); null: nowhere.
    k8s::EventRecorder* events = nullptr;
  };

  // A bind's remaining steps. A null Worker: the binder is shutting down
  // and the job never ran on a worker (nothing was sent).
  using Job = std::function<void(const Worker* worker)>;
  // Runs `job` once: on a worker, or (shutting down) with a null Worker.
  virtual void run(Job job) = 0;
};

}  // namespace fracpack::server
