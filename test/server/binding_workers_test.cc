// The binder's worker pool (server/binding_workers.h) against the test API
// server: a job runs on a worker, which lends it its own connection, the
// bind fence and the Event recorder, and knows nothing of a bind's steps
// (those are the bind service's: test/server/bind_service_test.cc); the pool
// grows with the jobs in flight; jobs still queued at shutdown run with no
// worker (nothing is sent).
#include "server/binding_workers.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "k8s/contract/fracpack.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::binding_workers_test {
namespace {

using namespace std::chrono_literals;
using server::Binder;

// Opens once; jobs wait on it.
class Gate {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class BindingWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.create("nodes", node_object("n1", 2));
    server_.create("pods", bound_share_pod("other", "n1", 0));
    server_.create("pods", pod_object(PodSpec("p", "default", "", "Pending", half_card(), {}, "u-p")));
  }
  static k8s::BindTarget target() { return k8s::BindTarget{"default", "p", "u-p", "n1", {{"fracpack.io/example", "written"}}, "0"}; }
  std::string bound_node() {
    auto p = k8s::parse_pod(*server_.get("pods", "default", "p"), k8s::Selection{});
    return p ? p->node_name : "?";
  }
  std::string annotation(const std::string& key) {
    auto p = k8s::parse_pod(*server_.get("pods", "default", "p"), k8s::Selection{{key}, {}, {}, false});
    const std::string* v = p ? p->meta.annotation(key) : nullptr;
    return v != nullptr ? *v : "";
  }
  // Runs `job` on a worker of `workers` and waits for it.
  static void run_and_wait(server::BindingWorkers& workers, const std::function<void(const Binder::Worker*)>& job) {
    std::promise<void> done;
    workers.run([&](const Binder::Worker* worker) {
      job(worker);
      done.set_value();
    });
    ASSERT_EQ(done.get_future().wait_for(15s), std::future_status::ready);
  }
  FakeApiServer server_;
  server::Metrics metrics_;
  k8s::BindFence fence_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kConsistent};
};

TEST_F(BindingWorkersTest, AJobRunsWithItsWorkersConnectionFenceAndEvents) {
  k8s::EventRecorder events(client_for(server_), k8s::EventOptions{});
  server::BindingWorkers workers(client_for(server_), 2, &events, &fence_, metrics_);
  std::vector<std::string> fresh;
  Result<k8s::BindOutcome> posted = Error{"not posted"};
  run_and_wait(workers, [&](const Binder::Worker* w) {
    ASSERT_NE(w, nullptr);
    ASSERT_NE(w->client, nullptr);
    EXPECT_EQ(w->fence, &fence_);
    EXPECT_EQ(w->events, &events);
    const auto now = Binder::Clock::now();
    auto pods = w->fence->node_pods(*w->client, "n1", now, now + 5s);
    ASSERT_TRUE(pods.ok()) << pods.message();
    for (const auto& p : *pods) fresh.push_back(p.meta.uid);
    posted = k8s::post_binding(*w->client, target());
  });
  EXPECT_EQ(fresh, std::vector<std::string>{"u-other"}) << "the pods the API server has bound on n1";
  EXPECT_TRUE(posted.ok()) << posted.message();
  EXPECT_EQ(bound_node(), "n1");
  EXPECT_EQ(annotation("fracpack.io/example"), "written");
  EXPECT_NE(metrics_.serialize().find("fracpack_bind_queue_wait_seconds_count 1"), std::string::npos)
      << "the time the job waited for a worker";
}

TEST_F(BindingWorkersTest, WithoutAFenceOrEventsTheWorkerLendsNone) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, nullptr, metrics_);
  run_and_wait(workers, [&](const Binder::Worker* w) {
    ASSERT_NE(w, nullptr);
    EXPECT_NE(w->client, nullptr);
    EXPECT_EQ(w->fence, nullptr);
    EXPECT_EQ(w->events, nullptr);
  });
}

// kube-scheduler binds asynchronously: a job that finds every worker busy
// starts another, up to the most.
TEST_F(BindingWorkersTest, ThePoolGrowsWithTheJobsInFlight) {
  server::BindingWorkers workers(client_for(server_), 3, nullptr, &fence_, metrics_, 1);
  Gate gate;
  std::atomic<int> ran{0};
  for (int i = 0; i < 4; ++i) {
    workers.run([&](const Binder::Worker*) {
      gate.wait();
      ++ran;
    });
  }
  ASSERT_TRUE(Cluster::wait_for([&] { return workers.load().busy == 3 && workers.load().queued == 1; }));
  const auto load = workers.load();
  EXPECT_EQ(load.workers, 3u);
  EXPECT_EQ(load.queued, 1u) << "three workers at most";
  EXPECT_EQ(load.max_workers, 3u);
  gate.open();
  ASSERT_TRUE(Cluster::wait_for([&] { return ran.load() == 4; }));
}

// A job still queued when the pool stops never ran on a worker: it runs
// once with none, so the bind can answer that nothing was sent.
TEST_F(BindingWorkersTest, AJobStillQueuedAtShutdownRunsWithNoWorker) {
  auto workers = std::make_unique<server::BindingWorkers>(client_for(server_), 1, nullptr, &fence_, metrics_, 1);
  Gate gate;
  std::atomic<bool> first_had_worker{false};
  std::atomic<int> second_runs{0};
  std::atomic<bool> second_had_worker{true};
  workers->run([&](const Binder::Worker* w) {
    first_had_worker = w != nullptr;
    gate.wait();
  });
  workers->run([&](const Binder::Worker* w) {
    second_had_worker = w != nullptr;
    ++second_runs;
  });
  ASSERT_TRUE(Cluster::wait_for([&] { return workers->load().busy == 1 && workers->load().queued == 1; }));
  // Stopping begins (the queue is taken from the workers), then the
  // running job ends: no sleep decides the order.
  const server::BindingWorkers* pool = workers.get();
  auto stopping = std::async(std::launch::async, [&] { workers.reset(); });
  ASSERT_TRUE(Cluster::wait_for([&] { return pool->load().queued == 0; }));
  gate.open();  // the running job ends; the pool stops
  ASSERT_EQ(stopping.wait_for(15s), std::future_status::ready);
  EXPECT_TRUE(first_had_worker);
  EXPECT_EQ(second_runs, 1);
  EXPECT_FALSE(second_had_worker);
}

}  // namespace
}  // namespace fracpack::testing::binding_workers_test
