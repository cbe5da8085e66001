// The bind fence (k8s/bind_fence.h) against the test API server, and the
// reconciler's over-commit check (confirm_overcommitted), which reads as the
// fence reads and reports only what the API server confirms. What a fence's
// read does to the ledger is ClusterState::catch_up (cluster_state_test.cc).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "k8s/bind_fence.h"
#include "k8s/binding.h"
#include "k8s/reconciler.h"
#include "k8s/server_version.h"
#include "k8s/contract/fracpack.h"
#include "scheduling/fit.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing {
namespace {

using namespace std::chrono_literals;
using scheduling::Ledger;


class BindFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.create("nodes", node_object("n1", 2));
    server_.create("nodes", node_object("n2", 2));
    server_.create("pods", bound_share_pod("a", "n1", 0));
    server_.create("pods", bound_share_pod("b", "n2", 0));
    server_.create("pods", pod_object(PodSpec("pending", "default", "", "Pending", half_card(), {}, "u-pending")));
    server_.create("pods", pod_object(PodSpec("finished", "default", "n1", "Succeeded", half_card(), {}, "u-finished")));
  }
  FakeApiServer server_;
  k8s::BindFence fence_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kConsistent};
  k8s::BindFence versioned_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kResourceVersion};
};

// Both ways of reading return the node's live pods, records included: one
// consistent list, or a consistent read of the version then the node's pods
// not older than it.
TEST_F(BindFenceTest, ReadsTheNodesLivePodsEitherWay) {
  const std::string node_read = "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
  for (k8s::BindFence* fence : {&fence_, &versioned_}) {
    k8s::ApiClient client(client_for(server_));
    const auto now = k8s::BindFence::Clock::now();
    auto pods = fence->node_pods(client, "n1", now, now + 5s);
    ASSERT_TRUE(pods.ok()) << pods.message();
    ASSERT_EQ(pods->size(), 1u);
    EXPECT_EQ((*pods)[0].meta.name, "a");
    EXPECT_NE((*pods)[0].meta.annotation("fracpack.io/allocation"), nullptr);
  }
  const auto log = server_.request_log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], node_read) << "no resourceVersion: a consistent read";
  EXPECT_EQ(log[1], "GET /api/v1/pods?limit=1") << "a quorum read of one item";
  EXPECT_EQ(log[2], node_read + "&resourceVersion=" + std::to_string(server_.resource_version()))
      << "the node's pods, not older than that version";
  EXPECT_EQ(fence_.stats().version_reads, 0u);
  EXPECT_EQ(versioned_.stats().version_reads, 1u);
}

// One version read serves every bind that arrived before it started; a bind
// that arrives after a read started needs a later one.
TEST_F(BindFenceTest, OneVersionReadServesTheBindsThatArrivedBeforeIt) {
  k8s::BindFence& fence = versioned_;
  k8s::ApiClient client(client_for(server_));
  const auto arrived = k8s::BindFence::Clock::now();
  ASSERT_TRUE(fence.node_pods(client, "n1", arrived, arrived + 5s).ok());
  ASSERT_TRUE(fence.node_pods(client, "n2", arrived, arrived + 5s).ok());
  EXPECT_EQ(fence.stats().version_reads, 1u);
  EXPECT_EQ(fence.stats().shared, 1u);
  EXPECT_EQ(fence.stats().node_reads, 2u);
  const auto later = k8s::BindFence::Clock::now();
  ASSERT_TRUE(fence.node_pods(client, "n1", later, later + 5s).ok());
  EXPECT_EQ(fence.stats().version_reads, 2u);
  // Concurrent binds on eight threads, each with its own client: the reads
  // they share are fewer than the binds.
  server_.faults().slow_ms = 20;
  const auto together = k8s::BindFence::Clock::now();
  std::vector<std::future<bool>> binds;
  for (int i = 0; i < 8; ++i) {
    binds.push_back(std::async(std::launch::async, [&] {
      k8s::ApiClient own(client_for(server_));
      return fence.node_pods(own, "n1", together, together + 5s).ok();
    }));
  }
  for (auto& b : binds) EXPECT_TRUE(b.get());
  EXPECT_LT(fence.stats().version_reads, 2u + 8u);
  EXPECT_GE(fence.stats().shared, 1u + 1u);
}

TEST_F(BindFenceTest, FailsWithTheReasonWhenTheApiServerCannotAnswerInTime) {
  k8s::ApiClient client(client_for(server_));
  server_.faults().throttle = 1;
  auto now = k8s::BindFence::Clock::now();
  auto r = fence_.node_pods(client, "n1", now, now + 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("reading the pods of node n1"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("Too many requests"), std::string::npos) << r.message();
  server_.faults().throttle = 1;
  r = versioned_.node_pods(client, "n1", now, now + 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("current resourceVersion"), std::string::npos) << r.message();
  server_.faults().slow_ms = 300;
  now = k8s::BindFence::Clock::now();
  r = fence_.node_pods(client, "n1", now, now + 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(k8s::BindFence::Clock::now() - now, 1s) << "gives up at the bind's deadline";
  EXPECT_EQ(fence_.stats().failures, 2u);
}

// Found on a real 1.20 API server (issue 31): a consistent list per bind is
// read from etcd there, and a burst's binds failed on it. By default the
// API server's version picks the read: consistent only where the watch
// cache serves it (1.31 on).
TEST(BindFenceAuto, TheApiServersVersionPicksTheRead) {
  for (const auto& [minor, want] : std::vector<std::pair<std::string, k8s::BindFence::Read>>{
           {"20", k8s::BindFence::Read::kResourceVersion}, {"30", k8s::BindFence::Read::kResourceVersion},
           {"31", k8s::BindFence::Read::kConsistent}, {"34+", k8s::BindFence::Read::kConsistent}}) {
    FakeApiServerOptions o;
    o.minor_version = minor;
    FakeApiServer server(o);
    server.create("nodes", node_object("n1", 2));
    k8s::BindFence fence(k8s::kLivePodsSelector, fracpack_contract().selection());
    EXPECT_EQ(fence.mode(), k8s::BindFence::Read::kAuto);
    k8s::ApiClient client(client_for(server));
    const auto now = k8s::BindFence::Clock::now();
    ASSERT_TRUE(fence.node_pods(client, "n1", now, now + 5s).ok());
    ASSERT_TRUE(fence.node_pods(client, "n1", now, now + 5s).ok());
    EXPECT_EQ(fence.mode(), want) << minor;
    EXPECT_EQ(server.requests("GET /version"), 1) << "read once";
    EXPECT_EQ(fence.stats().version_reads > 0, want == k8s::BindFence::Read::kResourceVersion) << minor;
    EXPECT_EQ(fence.resolved_from(), "v1." + minor + ".0-fracpack-fake");
  }
}

TEST(ServerVersion, ReadsMajorAndMinorAsVendorsWriteThem) {
  auto v = k8s::parse_server_version(R"({"major":"1","minor":"20+","gitVersion":"v1.20.2-eks"})");
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->minor, 20);
  EXPECT_FALSE(k8s::consistent_list_from_cache(*v));
  EXPECT_FALSE(k8s::scheduler_knows_unresolvable(*v));
  auto git = k8s::parse_server_version(R"({"major":"","minor":"","gitVersion":"v1.31.4"})");
  ASSERT_TRUE(git) << git.message();
  EXPECT_TRUE(k8s::consistent_list_from_cache(*git));
  EXPECT_TRUE(k8s::scheduler_knows_unresolvable(*git));
  EXPECT_FALSE(k8s::parse_server_version("{}"));
  EXPECT_FALSE(k8s::parse_server_version("not json"));
}

// Two pods bound on one card by two schedulers: the reconciler reports it.
// A ledger that still holds a pod the API server has deleted (its watch is
// late) holds more than it should, but nothing is double-booked: no report.
TEST_F(BindFenceTest, TheReconcilerReportsOnlyOverCommitsTheApiServerConfirms) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(*server_.get("pods", "default", "a")));
  const std::string late = bound_share_pod("late", "n1", 0, 75, 4096);  // with a: 1250 milli on card 0
  server_.create("pods", late);
  state.apply_pod(decoded_pod(late));
  k8s::ApiClient client(client_for(server_));
  auto confirmed = k8s::confirm_overcommitted(client, fence_, state);
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].node, "n1");
  EXPECT_EQ(confirmed[0].index, 0);
  EXPECT_EQ(confirmed[0].cores, 1250);
  ASSERT_EQ(confirmed[0].pods.size(), 2u);
  EXPECT_EQ(confirmed[0].pods[0].first, "default/a");
  EXPECT_EQ(confirmed[0].pods[1].first, "default/late");
  // The API server deletes one; the ledger has not heard yet.
  server_.remove("pods", "default", "late");
  EXPECT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 1);
  EXPECT_TRUE(k8s::confirm_overcommitted(client, fence_, state).empty());
}

}  // namespace
}  // namespace fracpack::testing
