// The binder that posts Bindings (server/binding_workers.h) against the test
// API server, through the one interface it calls back on (Binder::Listener):
// a fenced bind is rechecked beside the node's pods before it is posted, and
// posts what the recheck wrote; a refused recheck, or a deadline passed, posts
// nothing; an unknown outcome is settled by reading the pod; the contract's
// node lock is taken before a fenced bind.
#include "server/binding_workers.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/hami.h"
#include "k8s/node_lock.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::binding_workers_test {
namespace {

using namespace std::chrono_literals;
using server::Binder;

// Records each call and can refuse or rewrite at recheck.
class RecordingListener final : public Binder::Listener {
 public:
  Status refuse_with = Status::Ok();
  k8s::StringMap rewrite;  // set: the recheck moves the reservation and writes these annotations
  std::vector<std::string> calls;
  std::vector<std::string> fresh_uids;  // the pods the recheck was shown
  Binder::Outcome outcome;
  k8s::BindTarget written;
  k8s::Presence presence = k8s::Presence::kUnknown;

  Status recheck(const std::vector<k8s::Pod>& fresh, const std::vector<k8s::Pod>& /*in_namespace*/, k8s::BindTarget& target,
                 bool* moved) override {
    std::lock_guard lock(mu_);
    calls.push_back("recheck");
    for (const auto& p : fresh) fresh_uids.push_back(p.meta.uid);
    if (!refuse_with.ok()) return refuse_with;
    if (!rewrite.empty()) {
      target.annotations = rewrite;
      *moved = true;
    }
    return Status::Ok();
  }
  void finished(Binder::Outcome o, const k8s::BindTarget& t) override {
    std::lock_guard lock(mu_);
    calls.push_back("finished");
    outcome = std::move(o);
    written = t;
    cv_.notify_all();
  }
  void settled(k8s::Presence p) override {
    std::lock_guard lock(mu_);
    calls.push_back("settled");
    presence = p;
    cv_.notify_all();
  }
  // Waits until `n` calls were made (finished, or settled after it).
  bool wait_calls(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 15s, [&] { return calls.size() >= n && calls.back() != "recheck"; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

class BindingWorkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.create("nodes", node_object("n1", 2));
    server_.create("pods", bound_share_pod("other", "n1", 0));
    server_.create("pods", pod_object(PodSpec("p", "default", "", "Pending", half_card(), {}, "u-p")));
  }
  Binder::Job job(bool fenced, std::chrono::milliseconds budget = 5s) {
    Binder::Job j;
    j.target = k8s::BindTarget{"default", "p", "u-p", "n1", {{"fracpack.io/example", "chosen-at-arrival"}}, "0"};
    j.arrived = Binder::Clock::now();
    j.deadline = j.arrived + budget;
    j.fenced = fenced;
    return j;
  }
  std::string bound_node() {
    auto p = k8s::parse_pod(*server_.get("pods", "default", "p"), k8s::Selection{});
    return p ? p->node_name : "?";
  }
  std::string annotation(const std::string& key) {
    auto p = k8s::parse_pod(*server_.get("pods", "default", "p"), k8s::Selection{{key}, {}, {}, false});
    const std::string* v = p ? p->meta.annotation(key) : nullptr;
    return v != nullptr ? *v : "";
  }
  FakeApiServer server_;
  server::Metrics metrics_;
  k8s::BindFence fence_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kConsistent};
};

TEST_F(BindingWorkersTest, AFencedBindIsRecheckedBesideTheNodesPodsThenPostsWhatTheRecheckWrote) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  auto listener = std::make_shared<RecordingListener>();
  listener->rewrite = {{"fracpack.io/example", "moved-by-the-recheck"}};
  workers.bind(job(true), listener);
  ASSERT_TRUE(listener->wait_calls(2));
  EXPECT_EQ(listener->calls, (std::vector<std::string>{"recheck", "finished"}));
  EXPECT_EQ(listener->fresh_uids, std::vector<std::string>{"u-other"}) << "the pods the API server has bound on n1";
  EXPECT_TRUE(listener->outcome.status.ok()) << listener->outcome.status.message();
  EXPECT_TRUE(listener->outcome.moved);
  EXPECT_EQ(bound_node(), "n1");
  EXPECT_EQ(annotation("fracpack.io/example"), "moved-by-the-recheck");
}

TEST_F(BindingWorkersTest, ABindWithoutCardsIsPostedWithoutAFence) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  auto listener = std::make_shared<RecordingListener>();
  workers.bind(job(false), listener);
  ASSERT_TRUE(listener->wait_calls(1));
  EXPECT_EQ(listener->calls, std::vector<std::string>{"finished"});
  EXPECT_TRUE(listener->outcome.status.ok()) << listener->outcome.status.message();
  EXPECT_EQ(bound_node(), "n1");
  EXPECT_EQ(server_.requests("GET /api/v1/pods?fieldSelector"), 0) << "no fence read";
}

TEST_F(BindingWorkersTest, ARefusedRecheckPostsNothingAndSaysWhy) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  auto listener = std::make_shared<RecordingListener>();
  listener->refuse_with = Error{"no card left beside the unseen pods"};
  workers.bind(job(true), listener);
  ASSERT_TRUE(listener->wait_calls(2));
  EXPECT_FALSE(listener->outcome.status.ok());
  EXPECT_NE(listener->outcome.status.message().find("no card left beside the unseen pods"), std::string::npos)
      << listener->outcome.status.message();
  EXPECT_FALSE(listener->outcome.outcome_unknown);
  EXPECT_EQ(bound_node(), "") << "never posted";
}

TEST_F(BindingWorkersTest, ABindPastItsDeadlineIsNeverPosted) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  auto listener = std::make_shared<RecordingListener>();
  Binder::Job late = job(true);
  late.deadline = late.arrived - 1ms;
  workers.bind(std::move(late), listener);
  ASSERT_TRUE(listener->wait_calls(1));
  EXPECT_EQ(listener->calls, std::vector<std::string>{"finished"}) << "not even rechecked";
  EXPECT_NE(listener->outcome.status.message().find("cluster.bindTimeout"), std::string::npos) << listener->outcome.status.message();
  EXPECT_EQ(bound_node(), "");
}

TEST_F(BindingWorkersTest, AnUnknownOutcomeIsSettledByReadingThePod) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  // The Binding is applied, then the connection dropped before the answer
  // (twice: the client retries a request whose reused connection closed).
  server_.faults().drop_binding_response = 2;
  server_.faults().fail_gets = 100;  // and the GET that would tell fails too, at first
  auto listener = std::make_shared<RecordingListener>();
  Binder::Job j = job(true);
  j.settle_unknown = true;
  workers.bind(std::move(j), listener);
  ASSERT_TRUE(listener->wait_calls(2));
  ASSERT_TRUE(listener->outcome.outcome_unknown) << listener->outcome.status.message();
  server_.faults().fail_gets = 0;
  ASSERT_TRUE(listener->wait_calls(3));
  EXPECT_EQ(listener->calls, (std::vector<std::string>{"recheck", "finished", "settled"}));
  EXPECT_EQ(listener->presence, k8s::Presence::kThere);
}

TEST_F(BindingWorkersTest, AFencedBindTakesTheContractsNodeLockFirst) {
  server::BindingWorkers workers(client_for(server_), 2, nullptr, &fence_, metrics_);
  const k8s::HamiContract hami;  // its lock: hami.io/mutex.lock
  workers.use_node_lock(hami.node_lock());
  auto listener = std::make_shared<RecordingListener>();
  workers.bind(job(true), listener);
  ASSERT_TRUE(listener->wait_calls(2));
  ASSERT_TRUE(listener->outcome.status.ok()) << listener->outcome.status.message();
  auto node = k8s::parse_node(*server_.get("nodes", "", "n1"), k8s::Selection{{"hami.io/mutex.lock"}, {}, {}, false});
  ASSERT_TRUE(node.ok());
  const std::string* held = node->meta.annotation("hami.io/mutex.lock");
  ASSERT_NE(held, nullptr) << "kept after the Binding: HAMi's device plugin releases it at Allocate";
  EXPECT_NE(held->find(",default,p"), std::string::npos) << *held;
  // In order: the lock (a PATCH of the node), the fence's read, the Binding.
  const std::vector<std::string> log = server_.request_log();
  auto first = [&](const std::string& prefix) {
    for (size_t i = 0; i < log.size(); ++i) {
      if (log[i].rfind(prefix, 0) == 0) return i;
    }
    return log.size();
  };
  const size_t lock_at = first("PATCH /api/v1/nodes/n1"), fence_at = first("GET /api/v1/pods?"),
               bind_at = first("POST /api/v1/namespaces/default/pods/p/binding");
  ASSERT_LT(bind_at, log.size());
  EXPECT_LT(lock_at, fence_at);
  EXPECT_LT(fence_at, bind_at);
}

}  // namespace
}  // namespace fracpack::testing::binding_workers_test
