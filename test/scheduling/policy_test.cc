#include "scheduling/policy.h"

#include <gtest/gtest.h>

#include "scheduling/scheduler.h"
#include "test/support/testlib.h"

namespace fracpack::scheduling::policy_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

// A node whose cards have the given free compute.
Ledger ledger_with_free(std::initializer_list<int> free) {
  Ledger l;
  l.upsert_node(node("n", static_cast<int>(free.size())));
  Allocation used;
  used.node = "n";
  int index = 0;
  ContainerAllocation c{"x", false, {}};
  for (int f : free) {
    if (f < 1000) c.cards.push_back(CardShare{index, "", 0, 1000 - f});
    ++index;
  }
  if (!c.cards.empty()) {
    used.containers.push_back(c);
    l.confirm(PodFacts{"used", "d/used", 0, 0}, used);
  }
  return l;
}

int64_t score(const std::string& policy, const Ledger& l, const PodRequest& p) {
  auto pol = make_policy(policy, PolicyOptions{});
  EXPECT_TRUE(pol.ok());
  Evaluation e;
  EXPECT_TRUE((*pol)->evaluate(p, *l.node("n"), e));
  return e.score;
}

// ../shared/reference/replay-spec.md §5.6 vectors (gpu_packing_score_test.go).
TEST(Policy, GpuPackingVectors) {
  EXPECT_EQ(score("gpupacking", ledger_with_free({200, 1000, 1000, 500}), pod("a", 2, 1000)), 48);
  EXPECT_EQ(score("gpupacking", ledger_with_free({1000, 1000, 1000, 1000}), pod("a", 2, 1000)), 29);
  EXPECT_EQ(score("gpupacking", ledger_with_free({1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}), pod("a", 1, 1000)), 25);
  EXPECT_EQ(score("gpupacking", ledger_with_free({200, 1000, 1000, 500}), pod("a", 2, 200)), 93);
  EXPECT_EQ(score("gpupacking", ledger_with_free({200, 1000}), pod("cpu", 0, 0)), 0);
}

TEST(Policy, GpuClusteringGroupsShapes) {
  Ledger l = ledger_with_free({1000, 1000});  // no pods: base 25*(8000-2000)/8000 = 18, +25 idle
  EXPECT_EQ(score("gpuclustering", l, pod("a", 1, 500)), 18 + 25);
  Allocation a;
  a.node = "n";
  a.containers.push_back(ContainerAllocation{"m", false, {CardShare{0, "", 0, 500}}});
  l.confirm(PodFacts{"s", "d/s", 0, 0}, a);  // one share pod: Gfree 1500 -> base 20
  EXPECT_EQ(score("gpuclustering", l, pod("b", 1, 300)), 20 + 75);
  EXPECT_EQ(score("gpuclustering", l, pod("c", 1, 1000)), 20);
  EXPECT_EQ(score("gpuclustering", l, pod("cpu", 0, 0)), 0);
}

TEST(Policy, BestFitAndDotProdPreferTighterNodes) {
  Ledger full = ledger_with_free({300, 1000});
  Ledger idle = ledger_with_free({1000, 1000});
  for (const char* p : {"bestfit", "binpack"}) {
    EXPECT_GT(score(p, full, pod("a", 1, 200)), score(p, idle, pod("a", 1, 200))) << p;
  }
  // DotProd's integer scores are coarse: equal here, never reversed.
  EXPECT_GE(score("dotprod", full, pod("a", 1, 200)), score("dotprod", idle, pod("a", 1, 200)));
  EXPECT_LT(score("spread", full, pod("a", 1, 200)), score("spread", idle, pod("a", 1, 200)));
}

TEST(Policy, FgdPicksTheCardThatFragmentsLeast) {
  // Target workload: half-card pods. Free [600, 1000]: a 500 share on card 0
  // leaves 100 stranded on it; on card 1 it leaves 600 + 500, both usable.
  PolicyOptions o;
  auto half = std::make_shared<ShapeCounts>();
  half->add(PodShape{1000, 500, 1, 0, 0, ""});
  o.workload = half;
  auto fgd = make_policy("fgd", o);
  ASSERT_TRUE(fgd.ok());
  Ledger l = ledger_with_free({600, 1000});
  Evaluation e;
  ASSERT_TRUE((*fgd)->evaluate(pod("a", 1, 500), *l.node("n"), e));
  EXPECT_EQ(e.picks.pos[0], 1);
  EXPECT_EQ(e.score, 50);  // no change in fragmentation: sigmoid(0) = 0.5
  ASSERT_TRUE((*fgd)->evaluate(pod("b", 1, 600), *l.node("n"), e));
  EXPECT_EQ(e.picks.pos[0], 0);  // exactly fills card 0
  auto fracpack = make_policy("fracpack", o);
  ASSERT_TRUE(fracpack.ok());
  ASSERT_TRUE((*fracpack)->evaluate(pod("a", 1, 500), *l.node("n"), e));
  EXPECT_EQ(e.picks.pos[0], 1);
}

TEST(Policy, FactoryRejectsUnknownAndIncomplete) {
  auto unknown = make_policy("tetris", PolicyOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("unknown policy \"tetris\""), std::string::npos);
  auto fgd = make_policy("fgd", PolicyOptions{});
  ASSERT_FALSE(fgd.ok());
  EXPECT_NE(fgd.message().find("target workload"), std::string::npos);
  for (const auto& name : policy_names()) {
    PolicyOptions o;
    auto w = std::make_shared<ShapeCounts>();
    w->add(PodShape{1000, 500, 1, 0, 0, ""});
    o.workload = w;
    EXPECT_TRUE(make_policy(name, o).ok()) << name;
  }
}

TEST(Policy, ExtenderScoreMapsToZeroToTen) {
  EXPECT_EQ(extender_score(50, 0, 100), 4);   // 0.5 x 9, truncated
  EXPECT_EQ(extender_score(100, 0, 100), 10);
  EXPECT_EQ(extender_score(99, 0, 100), 8) << "only the best gets 10";
  EXPECT_EQ(extender_score(0, 0, 100), 0);
  EXPECT_EQ(extender_score(7, 7, 7), 10);
  EXPECT_EQ(extender_score(-5, -10, 10), 2);
}

// A learning policy counts every pod that arrives, placed or not.
TEST(Policy, ThePolicyObservesArrivalsNotOnlyPlacements) {
  struct Counting : Policy {
    int observed = 0;
    std::string_view name() const override { return "counting"; }
    bool evaluate(const PodRequest&, const NodeState&, Evaluation& out) override {
      out.picks.size = 0;
      out.picks.push(0);
      return true;
    }
    void observe(const PodRequest&, const Ledger&) override { ++observed; }
  } counting;
  Ledger l;
  l.upsert_node(node("n", 1));
  Scheduler s(l, counting, FitOptions{}, {"n"});
  for (int i = 0; i < 3; ++i) {
    const PodRequest p = pod("p" + std::to_string(i), 1, 1000);
    s.arrived(p);
    s.schedule(p);  // the second and third find no card
  }
  EXPECT_EQ(counting.observed, 3);
  EXPECT_EQ(l.pod_count(), 1u);
}

// Every policy's card choice follows the card's sharer limit (fit.h share_fits).
TEST(Policy, EveryPolicyRespectsACardsSharerLimit) {
  PolicyOptions o;
  auto half = std::make_shared<ShapeCounts>();
  half->add(PodShape{1000, 500, 1, 0, 0, ""});
  o.workload = half;
  for (const std::string& name : policy_names()) {
    Ledger l;
    NodeSpec spec = node("n", 2, 16384);
    for (auto& c : spec.cards) c.max_sharers = 1;
    l.upsert_node(spec);
    // Card 0 is the fuller one (every packing policy's favourite) but serves its one sharer.
    l.confirm(PodFacts{"used", "d/used", 0, 0},
              Allocation{"n", {ContainerAllocation{"x", false, {CardShare{0, "", 1000, 200}}}}});
    auto pol = make_policy(name, o);
    ASSERT_TRUE(pol.ok()) << name;
    Evaluation e;
    ASSERT_TRUE((*pol)->evaluate(pod("p", 1, 100, 1000), *l.node("n"), e)) << name;
    ASSERT_EQ(e.picks.size, 1) << name;
    EXPECT_EQ(e.picks.pos[0], 1) << name;
  }
}

}  // namespace
}  // namespace fracpack::scheduling::policy_test
