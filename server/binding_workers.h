// A pool of workers that run binds' jobs (server/binder.h), each worker with
// its own keep-alive connection to the API server, so the extender's io
// threads never wait for it. A worker lends its job that connection, the
// bind fence and the Event recorder, and knows nothing of the bind's steps:
// those, and their order, are the bind service's (server/bind_service.cc).
//
// The pool grows with the binds in flight: kube-scheduler binds
// asynchronously, so when the API server answers some requests slowly a
// fixed handful of connections would hold every bind queued behind the slow
// ones (latency becomes queueing, binds run out their deadline waiting). A
// job that finds every worker busy starts another, up to `max_workers`;
// workers idle for `kIdle` stop, down to `min_workers`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "k8s/api_client.h"
#include "k8s/bind_fence.h"
#include "k8s/events.h"
#include "server/binder.h"
#include "server/metrics.h"

namespace fracpack::server {

class BindingWorkers final : public Binder {
 public:
  // `events` may be null; `fence` may be null (no fence: a single writer).
  BindingWorkers(k8s::ClientConfig client, int max_workers, k8s::EventRecorder* events, k8s::BindFence* fence, Metrics& metrics,
                 int min_workers = 2);
  // Waits for the jobs running (each bounded by its bind's deadline); the
  // jobs still queued run with a null Worker: nothing was sent.
  ~BindingWorkers() override;
  void run(Job job) override;

  // For /metrics: jobs waiting for a worker, workers running and busy.
  struct Load {
    size_t queued = 0, workers = 0, busy = 0, max_workers = 0;
  };
  Load load() const;

  static constexpr std::chrono::seconds kIdle{60};

 private:
  struct Queued {
    Job job;
    Clock::time_point queued{};
  };
  void work();
  void start_worker();  // with mu_ held

  k8s::ClientConfig client_;
  k8s::EventRecorder* events_;
  k8s::BindFence* fence_;
  Metrics& metrics_;
  const size_t min_workers_, max_workers_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable stopped_;  // a worker ended (drain waits for all)
  std::deque<Queued> jobs_;
  bool stopping_ = false;
  size_t workers_ = 0;  // running
  size_t idle_ = 0;     // waiting for a job
};

}  // namespace fracpack::server
