#include "server/api_binder.h"

namespace fracpack::server {

ApiBinder::ApiBinder(k8s::ClientConfig client, int workers, k8s::EventRecorder* events)
    : client_(std::move(client)), events_(events) {
  for (int i = 0; i < std::max(1, workers); ++i) {
    workers_.emplace_back([this] {
      k8s::ApiClient api(client_);
      work(api);
    });
  }
}

ApiBinder::~ApiBinder() {
  std::deque<Job> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(jobs_);
  }
  ready_.notify_all();
  for (auto& w : workers_) w.join();
  for (auto& j : left) j.done(Outcome{Error{"fracpack is shutting down; the pod was not bound"}});
}

void ApiBinder::bind(k8s::BindTarget target, const k8s::Pod&, std::function<void(Outcome)> done) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      jobs_.push_back(Job{std::move(target), std::move(done)});
      ready_.notify_one();
      return;
    }
  }
  done(Outcome{Error{"fracpack is shutting down; the pod was not bound"}});
}

void ApiBinder::work(k8s::ApiClient& client) {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    bool gone = false, unknown = false;
    auto r = k8s::bind_pod(client, job.target, &gone, &unknown);
    if (r) {
      job.done(Outcome{});
      continue;
    }
    if (events_ != nullptr) {
      events_->record(k8s::EventRef{job.target.namespace_name, job.target.name, job.target.uid}, "Warning", "FailedBinding",
                      r.message());
    }
    job.done(Outcome{Error{r.message()}, gone, unknown});
  }
}

}  // namespace fracpack::server
