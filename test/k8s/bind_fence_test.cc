// The bind fence (k8s/bind_fence.h) against the test API server, and what
// ClusterState::catch_up does with what it reads: another writer's binds
// the watch has not delivered are applied, the reservation is kept, moved
// or refused beside them, and nothing the informer saw deleted comes back.
// The reconciler's over-commit check (confirm_overcommitted) reports only
// what the API server confirms.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "k8s/bind_fence.h"
#include "k8s/binding.h"
#include "k8s/reconciler.h"
#include "k8s/contract/fracpack.h"
#include "scheduling/fit.h"
#include "test/k8s/cluster_harness.h"

namespace fracpack::testing {
namespace {

using namespace std::chrono_literals;
using scheduling::Allocation;
using scheduling::Ledger;

const k8s::ContractNames kNames;

std::map<std::string, std::string> half() { return {{"fracpack.io/gpu-cores", "50"}, {"fracpack.io/gpu-memory", "8192"}}; }

// A pod another scheduler bound: on `node`, card `card`, with its record.
std::string bound_pod(const std::string& name, const std::string& node, int card, int percent = 50, int64_t memory = 8192) {
  return pod_object(PodSpec(name, "default", node, "Running", half(),
                            {{kNames.allocation, allocation_annotation(node, {{card, percent}}, memory)}}, "u-" + name));
}

k8s::Pod decoded(const std::string& json) { return *k8s::parse_pod(json, kNames.selection()); }

k8s::Node node(const std::string& name, int gpus) { return *k8s::parse_node(node_object(name, gpus), kNames.selection()); }

// The reservation a bind made on arrival: half of `card` on `node`.
void reserve(k8s::ClusterState& state, const std::string& uid, const std::string& node, int card) {
  Allocation a{node, {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{card, "", 8192, 500}}}}};
  ASSERT_TRUE(state.assume(scheduling::PodFacts{uid, "default/" + uid, 0, 0}, a, scheduling::Clock::now()).ok());
}

// Chooses the first card with room for half a card.
Result<Allocation> first_fit(const Ledger& l, const std::string& node) {
  const scheduling::NodeState* n = l.node(node);
  for (size_t p = 0; p < n->cards().size(); ++p) {
    if (n->free_cores(p) >= 500 && n->free_memory(p) >= 8192) {
      return Allocation{node, {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{n->cards()[p].index, "", 8192, 500}}}}};
    }
  }
  return Error{"no card with room"};
}

int card_of(const Allocation& a) { return a.containers.at(0).cards.at(0).index; }

// Node n1 with `cards` cards, this replica's reservation of half of card 0
// ("mine"), then the fence's read `fresh` caught up with.
Result<k8s::ClusterState::CaughtUp> reserve_and_catch_up(k8s::ClusterState& state, int cards, const std::vector<k8s::Pod>& fresh) {
  state.apply_node(node("n1", cards));
  reserve(state, "mine", "n1", 0);
  return state.catch_up("n1", fresh, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
}

TEST(ClusterStateCatchUp, KeepsTheReservationWhenItStillFitsBesideTheUnseenPods) {
  k8s::ClusterState state({nullptr, 30s});
  // Another writer put half a card on card 0 and a whole card 1 in use.
  auto r = reserve_and_catch_up(state, 2, {decoded(bound_pod("other", "n1", 0)), decoded(bound_pod("whole", "n1", 1, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 2u);
  EXPECT_FALSE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 0);
  EXPECT_EQ(state.counters().fence_caught_up, 2u);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine")->phase, scheduling::PodPhase::kAssumed);
    EXPECT_EQ(l.pod("u-other")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    EXPECT_TRUE(l.check_invariants().ok());
    return 0;
  });
}

TEST(ClusterStateCatchUp, MovesTheReservationOffACardAnotherWriterFilled) {
  k8s::ClusterState state({nullptr, 30s});
  auto r = reserve_and_catch_up(state, 2, {decoded(bound_pod("other", "n1", 0, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine")->allocation.containers[0].cards[0].index, 1);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    return 0;
  });
}

TEST(ClusterStateCatchUp, RefusesWhenTheNodeIsFullAndReleasesTheReservation) {
  k8s::ClusterState state({nullptr, 30s});
  auto r = reserve_and_catch_up(state, 1, {decoded(bound_pod("other", "n1", 0, 100, 16384))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("bound by another scheduler"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("no card with room"), std::string::npos) << r.message();
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine"), nullptr);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    return 0;
  });
}

// Found by the failover soak: two binds in flight on one node, both
// reserved on a stale ledger. The first one's fence applies the pod another
// scheduler bound there; the second one's fence then finds nothing new, but
// its reservation no longer fits beside that pod and must move.
TEST(ClusterStateCatchUp, AReservationOverCommittedByAnotherFencesCatchUpIsCheckedToo) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  reserve(state, "first", "n1", 1);
  reserve(state, "second", "n1", 0);
  const std::vector<k8s::Pod> fresh = {decoded(bound_pod("other", "n1", 0, 100, 16384))};
  auto first = state.catch_up("n1", fresh, "first", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->applied, 1u);
  auto second = state.catch_up("n1", fresh, "second", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->applied, 0u);
  EXPECT_TRUE(second->rechosen);
  EXPECT_EQ(card_of(second->allocation), 1);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 0);
}

// The API server shows the pod being bound already bound here, with
// another replica's cards: those are what it holds.
TEST(ClusterStateCatchUp, APodAnotherReplicaBoundHoldsTheCardsItsRecordNames) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  reserve(state, "u-mine", "n1", 0);
  auto r = state.catch_up("n1", {decoded(bound_pod("mine", "n1", 1))}, "u-mine", [](const Ledger&) -> Result<Allocation> {
    return Error{"not called"};
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("u-mine")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.node("n1")->use()[0].cores, 0);
    return 0;
  });
}

TEST(ClusterStateCatchUp, NothingNewLeavesEverythingAsItWas) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  state.apply_pod(decoded(bound_pod("seen", "n1", 1)));
  reserve(state, "mine", "n1", 0);
  const uint64_t version = state.read([](const Ledger& l) { return l.node("n1")->version(); });
  // The read shows what the ledger has, pods on other nodes, terminal pods.
  k8s::Pod done = decoded(bound_pod("done", "n1", 0, 100, 16384));
  done.phase = "Succeeded";
  const std::vector<k8s::Pod> fresh = {decoded(bound_pod("seen", "n1", 1)), decoded(bound_pod("elsewhere", "n2", 0, 100, 16384)), done};
  auto r = state.catch_up("n1", fresh, "mine", [](const Ledger&) -> Result<Allocation> { return Error{"not called"}; });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.node("n1")->version(); }), version);
}

// A read may predate a deletion the watch has already applied: the pod must
// not come back (nothing would ever remove it again).
TEST(ClusterStateCatchUp, APodTheInformerSawDeletedIsNotBroughtBack) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  const k8s::Pod gone = decoded(bound_pod("gone", "n1", 0, 100, 16384));
  state.apply_pod(gone);
  state.delete_pod(gone);
  reserve(state, "mine", "n1", 0);
  auto r = state.catch_up("n1", {gone}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-gone"); }), nullptr);
}

TEST(ClusterStateCatchUp, AReservationReleasedMeanwhileIsNotBound) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  auto r = state.catch_up("n1", {}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("released meanwhile"), std::string::npos) << r.message();
}

class BindFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.create("nodes", node_object("n1", 2));
    server_.create("nodes", node_object("n2", 2));
    server_.create("pods", bound_pod("a", "n1", 0));
    server_.create("pods", bound_pod("b", "n2", 0));
    server_.create("pods", pod_object(PodSpec("pending", "default", "", "Pending", half(), {}, "u-pending")));
    server_.create("pods", pod_object(PodSpec("finished", "default", "n1", "Succeeded", half(), {}, "u-finished")));
  }
  FakeApiServer server_;
  k8s::BindFence fence_{k8s::kLivePodsSelector, kNames.selection()};
  k8s::BindFence versioned_{k8s::kLivePodsSelector, kNames.selection(), k8s::BindFence::Read::kResourceVersion};
};

TEST_F(BindFenceTest, ReadsTheNodesLivePodsWithOneConsistentList) {
  k8s::ApiClient client(client_for(server_));
  const auto now = k8s::BindFence::Clock::now();
  auto pods = fence_.node_pods(client, "n1", now, now + 5s);
  ASSERT_TRUE(pods.ok()) << pods.message();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].meta.name, "a");
  EXPECT_NE((*pods)[0].meta.annotation(kNames.allocation), nullptr);
  EXPECT_EQ(server_.request_log().back(), "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed")
      << "no resourceVersion: a consistent read";
  EXPECT_EQ(fence_.stats().version_reads, 0u);
}

TEST_F(BindFenceTest, ReadsTheNodesLivePodsAtTheCurrentVersion) {
  k8s::ApiClient client(client_for(server_));
  const auto now = k8s::BindFence::Clock::now();
  auto pods = versioned_.node_pods(client, "n1", now, now + 5s);
  ASSERT_TRUE(pods.ok()) << pods.message();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].meta.name, "a");
  EXPECT_NE((*pods)[0].meta.annotation(kNames.allocation), nullptr);
  const auto log = server_.request_log();
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2], "GET /api/v1/pods?limit=1") << "a quorum read of one item";
  const std::string rv = std::to_string(server_.resource_version());
  EXPECT_EQ(log.back(), "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&resourceVersion=" + rv)
      << "the node's pods, not older than that version";
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

// Two pods bound on one card by two schedulers: the reconciler reports it.
// A ledger that still holds a pod the API server has deleted (its watch is
// late) holds more than it should, but nothing is double-booked: no report.
TEST_F(BindFenceTest, TheReconcilerReportsOnlyOverCommitsTheApiServerConfirms) {
  k8s::ClusterState state({nullptr, 30s});
  state.apply_node(node("n1", 2));
  state.apply_pod(decoded(*server_.get("pods", "default", "a")));
  const std::string late = bound_pod("late", "n1", 0, 75, 4096);  // with a: 1250 milli on card 0
  server_.create("pods", late);
  state.apply_pod(decoded(late));
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
