// Posts Bindings to the API server from a pool of workers, each with its
// own keep-alive connection, so the extender's io threads never wait for
// the API server. Before a GPU bind is posted its node is fenced
// (k8s/bind_fence.h): the pods the API server has bound there are read and
// the reservation re-checked beside them. A bind still queued at its
// deadline is refused, never posted late. A failed bind is also reported as
// a Kubernetes Event on the pod (rate-limited by the recorder).
//
// The pool grows with the binds in flight: kube-scheduler binds
// asynchronously, so when the API server answers some requests slowly a
// fixed handful of connections would hold every bind queued behind the slow
// ones (latency becomes queueing, binds run out their deadline waiting). A
// bind that finds every worker busy starts another, up to `max_workers`;
// workers idle for `kIdle` stop, down to `min_workers`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/bind_fence.h"
#include "k8s/events.h"
#include "k8s/node_lock.h"
#include "server/binder.h"
#include "server/metrics.h"

namespace fracpack::server {

class BindingWorkers final : public Binder {
 public:
  // `events` may be null; `fence` may be null (no fence: a single writer).
  BindingWorkers(k8s::ClientConfig client, int max_workers, k8s::EventRecorder* events, k8s::BindFence* fence, Metrics& metrics,
                 int min_workers = 2);
  ~BindingWorkers() override;  // pending binds fail with "shutting down"
  void bind(Job job, std::shared_ptr<Listener> listener) override;
  // GPU binds first take this per-node lock (the contract's, Contract::
  // node_lock: HAMi's device plugin finds the pod through it) and release
  // it if the Binding fails. Set before the first bind; the contract
  // outlives the workers.
  void use_node_lock(const k8s::NodeLock* lock) { node_lock_ = lock; }

  // For /metrics: binds waiting for a worker, workers running and busy.
  struct Load {
    size_t queued = 0, workers = 0, busy = 0, max_workers = 0;
  };
  Load load() const;

  static constexpr std::chrono::seconds kIdle{60};
  // A Binding is posted only with at least this much of its bind timeout
  // left (a quarter of the timeout when that is less).
  static constexpr std::chrono::milliseconds kMinPostBudget{500};
  // How long a bind in a namespace with a GPU quota waits for the pod watch
  // to deliver the fence's marker write (milliseconds when the watch is
  // live) before it reads the namespace's pods instead.
  static constexpr std::chrono::milliseconds kWatchCatchUp{100};
  // Reads that settle a bind whose outcome was unknown.
  static constexpr int kSettleReads = 5;
  static constexpr std::chrono::milliseconds kSettleSpacing{500};

 private:
  struct Pending {
    Job job;
    std::shared_ptr<Listener> listener;
    Clock::time_point queued{};
  };
  void work();
  void start_worker();  // with mu_ held
  Outcome post(k8s::ApiClient& client, Job& job, Listener& listener);
  Outcome fence_and_post(k8s::ApiClient& client, Job& job, Listener& listener);
  // Where a pod whose Binding's outcome was unknown stands (Binder::Listener::settled, for a Job with settle_unknown).
  static k8s::Presence settle(k8s::ApiClient& client, const k8s::BindTarget& t);

  k8s::ClientConfig client_;
  k8s::EventRecorder* events_;
  k8s::BindFence* fence_;
  const k8s::NodeLock* node_lock_ = nullptr;
  Metrics& metrics_;
  const size_t min_workers_, max_workers_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::condition_variable stopped_;  // a worker ended (drain waits for all)
  std::deque<Pending> jobs_;
  bool stopping_ = false;
  size_t workers_ = 0;  // running
  size_t idle_ = 0;     // waiting for a job
};

}  // namespace fracpack::server
