#include "server/binding_workers.h"

#include <algorithm>

namespace fracpack::server {

BindingWorkers::BindingWorkers(k8s::ClientConfig client, int max_workers, k8s::EventRecorder* events, k8s::BindFence* fence,
                               Metrics& metrics, int min_workers)
    : client_(std::move(client)),
      events_(events),
      fence_(fence),
      metrics_(metrics),
      min_workers_(static_cast<size_t>(std::clamp(min_workers, 1, std::max(1, max_workers)))),
      max_workers_(static_cast<size_t>(std::max(1, max_workers))) {
  std::lock_guard lock(mu_);
  while (workers_ < min_workers_) start_worker();
}

BindingWorkers::~BindingWorkers() {
  std::deque<Queued> left;
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    left.swap(jobs_);
    ready_.notify_all();
    // Workers finish the job they are running (each bounded by its deadline).
    stopped_.wait(lock, [&] { return workers_ == 0; });
  }
  for (auto& q : left) q.job(nullptr);
}

void BindingWorkers::start_worker() {
  ++workers_;
  std::thread([this] { work(); }).detach();
}

BindingWorkers::Load BindingWorkers::load() const {
  std::lock_guard lock(mu_);
  return Load{jobs_.size(), workers_, workers_ - idle_, max_workers_};
}

void BindingWorkers::run(Job job) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      jobs_.push_back(Queued{std::move(job), Clock::now()});
      // Every idle worker will take one: start another for what is left.
      if (jobs_.size() > idle_ && workers_ < max_workers_) start_worker();
      ready_.notify_one();
      return;
    }
  }
  job(nullptr);
}

void BindingWorkers::work() {
  k8s::ApiClient client(client_);  // this worker's keep-alive connection
  const Worker lent{&client, fence_, events_};
  while (true) {
    Queued q;
    {
      std::unique_lock lock(mu_);
      ++idle_;
      const bool woken = ready_.wait_for(lock, kIdle, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (stopping_ || (!woken && workers_ > min_workers_)) {
        --workers_;
        stopped_.notify_all();
        return;
      }
      if (jobs_.empty()) continue;
      q = std::move(jobs_.front());
      jobs_.pop_front();
    }
    metrics_.bind_waited(std::chrono::duration<double>(Clock::now() - q.queued).count());
    q.job(&lent);
  }
}

}  // namespace fracpack::server
