// Posts Bindings to the API server from a pool of workers, each with its
// own keep-alive connection, so the extender's io threads never wait for
// the API server. A failed bind is also reported as a Kubernetes Event on
// the pod (rate-limited by the recorder).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "k8s/api_client.h"
#include "k8s/events.h"
#include "server/extender_service.h"

namespace fracpack::server {

class ApiBinder final : public Binder {
 public:
  // `events` may be null.
  ApiBinder(k8s::ClientConfig client, int workers, k8s::EventRecorder* events);
  ~ApiBinder() override;  // pending binds fail with "shutting down"
  void bind(k8s::BindTarget target, const k8s::Pod& pod, std::function<void(Outcome)> done) override;

 private:
  struct Job {
    k8s::BindTarget target;
    std::function<void(Outcome)> done;
  };
  void work(k8s::ApiClient& client);

  k8s::ClientConfig client_;
  k8s::EventRecorder* events_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace fracpack::server
