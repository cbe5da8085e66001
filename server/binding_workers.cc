#include "server/binding_workers.h"

#include <algorithm>
#include <string>
#include <thread>

namespace fracpack::server {

namespace {

// The bind timeout ran out `doing` something, before the Binding was posted.
Binder::Outcome too_late(const k8s::BindTarget& t, const std::string& doing) {
  return Binder::Outcome{Error{"pod " + t.namespace_name + "/" + t.name + " was not bound to " + t.node +
                               ": fracpack's bind timeout (cluster.bindTimeout) ran out " + doing +
                               ", before the Binding could be posted; kube-scheduler will retry it"}};
}

}  // namespace

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
  std::deque<Pending> left;
  {
    std::unique_lock lock(mu_);
    stopping_ = true;
    left.swap(jobs_);
    ready_.notify_all();
    // Workers finish the bind they are posting (each bounded by its deadline).
    stopped_.wait(lock, [&] { return workers_ == 0; });
  }
  for (auto& p : left) p.listener->finished(Outcome{Error{"fracpack is shutting down; the pod was not bound"}}, p.job.target);
}

void BindingWorkers::start_worker() {
  ++workers_;
  std::thread([this] { work(); }).detach();
}

BindingWorkers::Load BindingWorkers::load() const {
  std::lock_guard lock(mu_);
  return Load{jobs_.size(), workers_, workers_ - idle_, max_workers_};
}

void BindingWorkers::bind(Job job, std::shared_ptr<Listener> listener) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      jobs_.push_back(Pending{std::move(job), std::move(listener), Clock::now()});
      // Every idle worker will take one: start another for what is left.
      if (jobs_.size() > idle_ && workers_ < max_workers_) start_worker();
      ready_.notify_one();
      return;
    }
  }
  listener->finished(Outcome{Error{"fracpack is shutting down; the pod was not bound"}}, job.target);
}

Binder::Outcome BindingWorkers::post(k8s::ApiClient& client, Job& job, Listener& listener) {
  const k8s::BindTarget& t = job.target;
  const std::string who = t.namespace_name + "/" + t.name;
  if (Clock::now() >= job.deadline) return too_late(t, "while the bind waited for a worker");
  if (node_lock_ == nullptr || !job.fenced) return fence_and_post(client, job, listener);
  // A GPU bind under the node lock: taken first, kept when the Binding is
  // applied (or may have been: the device plugin releases it), released
  // when it certainly was not.
  if (Status s = node_lock_->acquire(client, t, job.deadline); !s.ok()) {
    return Outcome{Error{"pod " + who + " was not bound to " + t.node + ": " + s.message()}};
  }
  Outcome o = fence_and_post(client, job, listener);
  if (!o.status.ok() && !o.outcome_unknown) node_lock_->release(client, job.target);
  return o;
}

Binder::Outcome BindingWorkers::fence_and_post(k8s::ApiClient& client, Job& job, Listener& listener) {
  const k8s::BindTarget& t = job.target;
  const std::string who = t.namespace_name + "/" + t.name;
  Outcome out;
  if (job.fenced && fence_ != nullptr) {
    const auto started = Clock::now();
    k8s::BindFence::ReadAt at;
    auto fresh = fence_->node_pods(client, t.node, job.arrived, job.deadline, &at);
    std::string where = "there";  // what the ledger could not be shown to hold
    Result<std::vector<k8s::Pod>> in_namespace = std::vector<k8s::Pod>{};
    if (fresh && !job.fence_namespace.empty()) {
      // A namespace's bound pods may be thousands: read them only when the
      // watch has not shown, within a moment, that the ledger has them.
      const bool caught_up =
          !at.marker_value.empty() && listener.watch_caught_up(at.marker_value, std::min(job.deadline, Clock::now() + kWatchCatchUp));
      metrics_.bind_fence_quota(caught_up);
      if (!caught_up) {
        in_namespace = fence_->namespace_pods(client, job.fence_namespace, at, job.deadline);
        if (!in_namespace) {
          fresh = in_namespace.error();
          where = "in namespace " + job.fence_namespace + ", whose GPU quota it counts against";
        }
      }
    }
    metrics_.bind_fence(std::chrono::duration<double>(Clock::now() - started).count(), fresh.ok());
    if (!fresh && Clock::now() >= job.deadline) return too_late(t, "while reading bound pods from the API server (" + fresh.message() + ")");
    if (!fresh) {
      return Outcome{Error{"pod " + who + " was not bound to " + t.node +
                           ": fracpack could not confirm that its ledger holds every pod the API server has bound " + where + " (" +
                           fresh.message() + "); kube-scheduler will retry it"}};
    }
    if (Status s = listener.recheck(*fresh, *in_namespace, job.target, &out.moved); !s.ok()) {
      return Outcome{Error{"pod " + who + " was not bound to " + t.node + ": " + s.message()}};
    }
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - Clock::now());
  if (left.count() <= 0) return too_late(t, "while the node's pods were read");
  // A Binding posted with a few milliseconds to go would time out here
  // while the API server applies or refuses it: its outcome unknown, its
  // reservation held for nothing. Not posting it is an outcome known.
  // (A quarter of the whole bind timeout at most, for short ones.)
  const auto floor = std::min(kMinPostBudget, std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - job.arrived) / 4);
  if (left < floor) {
    return too_late(t, "while the node's pods were read (" + std::to_string(left.count()) + " ms were left, less than the " +
                           std::to_string(floor.count()) + " ms a Binding is given)");
  }
  bool gone = false, unknown = false;
  auto r = k8s::post_binding(client, t, &gone, &unknown, std::min(left, client_.request_timeout));
  if (r) return out;
  return Outcome{Error{r.message()}, gone, unknown};
}

void BindingWorkers::work() {
  k8s::ApiClient client(client_);  // this worker's keep-alive connection
  while (true) {
    Pending p;
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
      p = std::move(jobs_.front());
      jobs_.pop_front();
    }
    metrics_.bind_waited(std::chrono::duration<double>(Clock::now() - p.queued).count());
    Outcome o = post(client, p.job, *p.listener);
    if (!o.status.ok() && events_ != nullptr) {
      const k8s::BindTarget& t = p.job.target;
      events_->record(k8s::EventRef{t.namespace_name, t.name, t.uid}, "Warning", "FailedBinding", o.status.message());
    }
    const bool unknown = o.outcome_unknown;
    p.listener->finished(std::move(o), p.job.target);
    if (unknown && p.job.settle_unknown) p.listener->settled(settle(client, p.job.target));
  }
}

k8s::Presence BindingWorkers::settle(k8s::ApiClient& client, const k8s::BindTarget& t) {
  // The API server answered nothing useful a moment ago: a few reads,
  // spaced, each with a budget of its own.
  for (int attempt = 0; attempt < kSettleReads; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kSettleSpacing);
    const k8s::Presence p = k8s::already_there(client, t, k8s::kSettleReadTimeout);
    if (p != k8s::Presence::kUnknown) return p;
  }
  return k8s::Presence::kUnknown;
}

}  // namespace fracpack::server
