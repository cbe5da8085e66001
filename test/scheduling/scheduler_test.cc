// One scheduling decision over a ledger (scheduling/scheduler.h): every node
// filtered, the feasible ones scored, ties to the earliest node in the order,
// the placement committed (or not); schedule_on for one node; failures
// explained as kube-scheduler counts them.
#include "scheduling/scheduler.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::scheduler_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

std::unique_ptr<Policy> bestfit() { return make_policy("bestfit", PolicyOptions{}).value(); }

TEST(Scheduler, TiesGoToTheEarliestNodeAndFailuresAreExplained) {
  Ledger l;
  for (const char* n : {"a", "b", "c"}) l.upsert_node(node(n, 1));
  auto pol = make_policy("bestfit", PolicyOptions{});
  ASSERT_TRUE(pol.ok());
  Scheduler s(l, **pol, FitOptions{}, {"c", "b", "a"});
  Decision d = s.schedule(pod("p1", 1, 600));
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "c");
  d = s.schedule(pod("p2", 1, 400));  // fills c exactly: best fit
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "c");
  d = s.schedule(pod("p3", 1, 1000));
  EXPECT_EQ(d.node->name(), "b");
  d = s.schedule(pod("p4", 1, 1000));
  EXPECT_EQ(d.node->name(), "a");
  d = s.schedule(pod("p5", 1, 100), true, true);
  EXPECT_FALSE(d.placed);
  EXPECT_EQ(d.reason, "0/3 nodes are available: 3 insufficient GPU");
  EXPECT_TRUE(l.check_invariants().ok());
}

TEST(Scheduler, ChooseDoesNotCommit) {
  Ledger l;
  l.upsert_node(node("a", 1));
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"a"});
  const Decision d = s.choose(pod("p", 1, 600));
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node, l.node("a"));
  EXPECT_EQ(d.feasible, 1u);
  EXPECT_EQ(d.allocation.node, "a");
  ASSERT_EQ(d.allocation.containers.size(), 1u);
  EXPECT_EQ(d.allocation.containers[0].cards.at(0).cores, 600);
  EXPECT_EQ(l.pod("uid-p"), nullptr) << "nothing recorded";
  // Committed, the pod holds its cards: the same demand no longer fits twice.
  ASSERT_TRUE(s.schedule(pod("p", 1, 600)).placed);
  ASSERT_NE(l.pod("uid-p"), nullptr);
  EXPECT_EQ(l.assumed_count(), 0u) << "confirmed, not assumed";
  EXPECT_FALSE(s.schedule(pod("q", 1, 600)).placed);
}

TEST(Scheduler, OnlyTheOrderedNodesTheLedgerKnowsAreConsidered) {
  Ledger l;
  for (const char* n : {"a", "b"}) l.upsert_node(node(n, 1));
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"ghost", "b"});
  const Decision d = s.schedule(pod("p", 1, 500));
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "b");
  EXPECT_EQ(d.feasible, 1u) << "a is not in the order, ghost not in the ledger";
  const Decision none = s.schedule(pod("q", 1, 600), true, true);
  EXPECT_FALSE(none.placed);
  EXPECT_EQ(none.reason, "0/1 nodes are available: 1 insufficient GPU");
}

TEST(Scheduler, AFailureWithoutExplainSaysNoNodeFits) {
  Ledger l;
  l.upsert_node(node("a", 1));
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"a"});
  const Decision d = s.schedule(pod("p", 2, 500));
  EXPECT_FALSE(d.placed);
  EXPECT_EQ(d.feasible, 0u);
  EXPECT_EQ(d.reason, "no node fits");
}

TEST(Scheduler, ExplainedFailuresAreCountedMostCommonFirst) {
  Ledger l;
  l.upsert_node(node("a", 1));
  l.upsert_node(node("b", 1));
  l.upsert_node(node("c", 4, 16384, "T4", 500));  // CPU too small for the pod
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"a", "b", "c"});
  const Decision d = s.schedule(pod("p", 2, 500, 0, 1000), true, true);
  ASSERT_FALSE(d.placed);
  // "insufficient cpu: needs ..." loses its numbers; a and b share one reason.
  EXPECT_EQ(d.reason.rfind("0/3 nodes are available: 2 ", 0), 0u) << d.reason;
  EXPECT_NE(d.reason.find(", 1 insufficient cpu"), std::string::npos) << d.reason;
}

TEST(Scheduler, ScheduleOnJudgesOnlyThatNode) {
  Ledger l;
  for (const char* n : {"a", "b"}) l.upsert_node(node(n, 1));
  l.upsert_node(node("outside", 1));
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"a", "b"});
  const Decision on_b = s.schedule_on(pod("p", 1, 700), *l.node("b"));
  ASSERT_TRUE(on_b.placed);
  EXPECT_EQ(on_b.node->name(), "b") << "a would tie and come first; only b was asked";
  EXPECT_EQ(on_b.feasible, 1u);
  ASSERT_NE(l.pod("uid-p"), nullptr);
  const Decision full = s.schedule_on(pod("q", 1, 700), *l.node("b"));
  EXPECT_FALSE(full.placed);
  EXPECT_EQ(full.reason, "no node fits");
  const Decision outside = s.schedule_on(pod("r", 1, 100), *l.node("outside"));
  EXPECT_FALSE(outside.placed);
  EXPECT_EQ(outside.reason, "node outside is not in the scheduler's order");
  const Decision uncommitted = s.schedule_on(pod("s", 1, 300), *l.node("b"), false);
  EXPECT_TRUE(uncommitted.placed);
  EXPECT_EQ(l.pod("uid-s"), nullptr);
}

TEST(Scheduler, AVerdictIsJudgedAgainWhenItsNodeChanges) {
  Ledger l;
  l.upsert_node(node("a", 1));
  auto pol = bestfit();
  Scheduler s(l, *pol, FitOptions{}, {"a"});
  ASSERT_TRUE(s.schedule(pod("p", 1, 1000)).placed);
  EXPECT_FALSE(s.schedule(pod("q", 1, 1000)).placed);
  ASSERT_TRUE(l.remove("uid-p"));
  // The same demand again: the node changed, so it fits again.
  const Decision d = s.schedule(pod("r", 1, 1000));
  EXPECT_TRUE(d.placed);
  EXPECT_TRUE(l.check_invariants().ok());
}

}  // namespace
}  // namespace fracpack::scheduling::scheduler_test
