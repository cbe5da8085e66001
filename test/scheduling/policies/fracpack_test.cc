// fracpack's own policy (scheduling/policies/fracpack.cc): the least
// fragmenting placement against a target workload learned online, scores in
// steps of 50 milli so that ties pack pods onto the first nodes, the
// measure rebuilt (a new generation) only when the learned mix drifts,
// shares paired on cards by the mix's cutting-stock prices, a pod's CPU and
// memory charged with the card remainders they leave to nobody, and whole
// nodes kept for multi-card pods once few are left.
#include <gtest/gtest.h>

#include "scheduling/policy.h"
#include "scheduling/scheduler.h"
#include "test/support/testlib.h"

namespace fracpack::scheduling::policies_fracpack_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

std::shared_ptr<const ShapeCounts> shapes(std::initializer_list<std::pair<PodShape, double>> counts) {
  auto w = std::make_shared<ShapeCounts>();
  for (const auto& [shape, count] : counts) w->add(shape, count);
  return w;
}

// fracpack's scores step by 50 milli of fragmentation: nodes that tie go to
// the first in the order, so pods pack onto the same nodes and the others
// stay whole.
TEST(Policy, FracpackTiesGoToTheFirstNodeSoPodsPackTogether) {
  PolicyOptions o;
  auto w = std::make_shared<ShapeCounts>();
  w->add(PodShape{1000, 500, 1, 0, 0, ""}, 3);
  w->add(PodShape{1000, 1000, 2, 0, 0, ""}, 1);
  o.workload = w;
  auto pol = make_policy("fracpack", o);
  ASSERT_TRUE(pol.ok());
  Ledger l;
  for (const char* n : {"a", "b", "c"}) l.upsert_node(node(n, 2));
  Scheduler s(l, **pol, FitOptions{}, {"c", "b", "a"});
  std::vector<std::string> placed;
  for (int i = 0; i < 4; ++i) {
    const PodRequest p = pod("p" + std::to_string(i), 1, 500);
    s.arrived(p);
    Decision d = s.schedule(p);
    ASSERT_TRUE(d.placed);
    placed.push_back(d.node->name());
  }
  EXPECT_EQ(placed, (std::vector<std::string>{"c", "c", "c", "c"})) << "four half cards fill the first node";
  // Now b and a tie: a two-card pod takes b, the first of them.
  const PodRequest big = pod("big", 2, 1000);
  s.arrived(big);
  Decision d = s.schedule(big);
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "b");
}

TEST(FracpackPolicy, ASingleShareTakesTheCardItFillsAndTheLowestIndexOnTies) {
  PolicyOptions o;
  o.workload = shapes({{PodShape{1000, 1000, 1, 0, 0, ""}, 1}});  // whole cards
  auto pol = make_policy("fracpack", o);
  ASSERT_TRUE(pol.ok());
  Ledger l;
  l.upsert_node(node("n", 4));
  Evaluation idle;
  ASSERT_TRUE((*pol)->evaluate(pod("a", 1, 500), *l.node("n"), idle));
  ASSERT_EQ(idle.picks.size, 1u);
  EXPECT_EQ(idle.picks.pos[0], 0) << "four identical cards: the first";
  // Half of card 2 taken: another half fills it, and strands nothing.
  ASSERT_GE(l.confirm(PodFacts{"u", "ns/u", 0, 0}, Allocation{"n", {ContainerAllocation{"x", false, {CardShare{2, "", 0, 500}}}}}), 0);
  Evaluation fill;
  ASSERT_TRUE((*pol)->evaluate(pod("b", 1, 500), *l.node("n"), fill));
  EXPECT_EQ(fill.picks.pos[0], 2);
  EXPECT_GT(fill.score, idle.score) << "filling a card avoids fragmentation, opening one adds it";
  // A share no card can take: no evaluation.
  Evaluation none;
  EXPECT_FALSE((*pol)->evaluate(pod("c", 1, 500, 20000), *l.node("n"), none));
}

TEST(FracpackPolicy, TheMeasureIsRebuiltOnlyWhenTheLearnedMixDrifts) {
  const PodShape half{1000, 500, 1, 0, 0, ""};
  Ledger l;
  l.upsert_node(node("n", 2));
  for (bool learn : {true, false}) {
    PolicyOptions o;
    o.workload = shapes({{half, 1}});
    o.learn = learn;
    o.prior_weight = 10;
    o.learn_half_life = 20;
    auto pol = make_policy("fracpack", o);
    ASSERT_TRUE(pol.ok());
    EXPECT_EQ((*pol)->generation(), 0u);
    (*pol)->observe(pod("first", 1, 1000), l);  // the first arrival builds the measure
    EXPECT_EQ((*pol)->generation(), 1u) << learn;
    // Only whole-card pods arrive: the learned mix leaves the half-card prior.
    for (int i = 1; i < 600; ++i) (*pol)->observe(pod("p" + std::to_string(i), 1, 1000), l);
    if (learn) {
      EXPECT_GT((*pol)->generation(), 1u) << "the mix drifted";
    } else {
      EXPECT_EQ((*pol)->generation(), 1u) << "without learning the target stays";
    }
  }
}

// A card holding `cores` milli of one pod.
void hold(Ledger& l, const std::string& node, int card, int cores, const std::string& uid) {
  ASSERT_GE(l.confirm(PodFacts{uid, "ns/" + uid, 0, 0},
                      Allocation{node, {ContainerAllocation{"x", false, {CardShare{card, "", 0, cores}}}}}),
            0);
}

// The mix of the openb default trace in small: whole cards, and shares that
// pair as 650 + 320 and 470 + 470. A 320 beside a 470 leaves 210 no share of
// the mix fills; the measure alone takes that card (an empty card's 680 is
// lost to the whole-card pods now), the pairing keeps the 320 for an empty
// card, or for the card with a 650 when there is one.
TEST(FracpackPolicy, SharesArePairedOnCardsAsTheMixPacksBest) {
  PolicyOptions o;
  o.workload = shapes({{PodShape{1000, 1000, 1, 0, 0, ""}, 4},
                       {PodShape{1000, 650, 1, 0, 0, ""}, 1},
                       {PodShape{1000, 320, 1, 0, 0, ""}, 1},
                       {PodShape{1000, 470, 1, 0, 0, ""}, 2}});
  o.learn = false;
  auto pol = make_policy("fracpack", o);
  ASSERT_TRUE(pol.ok());
  Ledger l;
  l.upsert_node(node("n", 2));
  hold(l, "n", 0, 470, "a");
  (*pol)->observe(pod("first", 1, 1000), l);
  Evaluation e;
  ASSERT_TRUE((*pol)->evaluate(pod("p", 1, 320), *l.node("n"), e));
  EXPECT_EQ(e.picks.pos[0], 1) << "not beside the 470";
  l.upsert_node(node("m", 3));
  hold(l, "m", 0, 470, "b");
  hold(l, "m", 2, 650, "c");
  ASSERT_TRUE((*pol)->evaluate(pod("q", 1, 320), *l.node("m"), e));
  EXPECT_EQ(e.picks.pos[0], 2) << "beside the 650";
  ASSERT_TRUE((*pol)->evaluate(pod("r", 1, 470), *l.node("m"), e));
  EXPECT_EQ(e.picks.pos[0], 0) << "the 470's partner";
}

// A one-card node with 8 cores: a 470 asking all of them leaves 530 no pod
// can use (no CPU); an 810 asking 3 leaves 190 and room for the small
// shares that fill it. The measure alone sends both to the small node (it
// is of little use to the many pods that need more CPU); counting what a
// pod's CPU costs the node's cards' completions sends the 470 elsewhere.
TEST(FracpackPolicy, APodThatLeavesACardsRemainderNoCpuPaysForIt) {
  PolicyOptions o;
  o.workload = shapes({{PodShape{12000, 1000, 1, 0, 0, ""}, 4},
                       {PodShape{8000, 470, 1, 0, 0, ""}, 2},
                       {PodShape{3000, 810, 1, 0, 0, ""}, 1},
                       {PodShape{2000, 160, 1, 0, 0, ""}, 1}});
  o.learn = false;
  auto pol = make_policy("fracpack", o);
  ASSERT_TRUE(pol.ok());
  Ledger l;
  l.upsert_node(node("small", 1, 16384, "T4", 8000));
  l.upsert_node(node("big", 2, 16384, "T4", 64000));
  Scheduler s(l, **pol, FitOptions{}, {"small", "big"});
  const PodRequest share = pod("share", 1, 470, 0, 8000);
  s.arrived(share);
  Decision d = s.schedule(share, /*commit=*/false);
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "big");
  const PodRequest big_share = pod("big-share", 1, 810, 0, 3000);
  s.arrived(big_share);
  d = s.schedule(big_share, /*commit=*/false);
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "small");
}

// Ten 8-card nodes, pods of one card and rarely of eight. The measure
// weighs the 8-card shape by its arrivals over its cards (here 1/1600 of the
// mix): whether a one-card pod opens a whole node or joins one in use is
// below its resolution. Once one whole node is left of ten, opening it
// costs its scarcity on top, and it is kept for the 8-card pod.
TEST(FracpackPolicy, WholeNodesAreKeptForMultiCardPodsWhenFewAreLeft) {
  PolicyOptions o;
  o.workload = shapes({{PodShape{1000, 1000, 1, 0, 0, ""}, 200}, {PodShape{1000, 1000, 8, 0, 0, ""}, 1}});
  o.learn = false;
  auto pol = make_policy("fracpack", o);
  ASSERT_TRUE(pol.ok());
  Ledger l;
  std::vector<std::string> order;
  for (int i = 0; i < 10; ++i) {
    order.push_back("n" + std::to_string(i));
    l.upsert_node(node(order.back(), 8));
  }
  Scheduler s(l, **pol, FitOptions{}, order);
  const PodRequest one = pod("one", 1, 1000);
  s.arrived(one);
  Evaluation plenty;
  ASSERT_TRUE((*pol)->evaluate(one, *l.node("n0"), plenty));
  for (int i = 1; i < 10; ++i) hold(l, "n" + std::to_string(i), 0, 1000, "u" + std::to_string(i));
  const uint64_t before = (*pol)->generation();
  s.arrived(one);
  EXPECT_GT((*pol)->generation(), before) << "the scarcity changed what evaluate() answers";
  Evaluation scarce, in_use;
  ASSERT_TRUE((*pol)->evaluate(one, *l.node("n0"), scarce));
  ASSERT_TRUE((*pol)->evaluate(one, *l.node("n1"), in_use));
  EXPECT_LT(scarce.score, plenty.score) << "the same idle node, the last one of ten";
  EXPECT_LT(scarce.score, in_use.score);
  Decision d = s.schedule(one);
  ASSERT_TRUE(d.placed);
  EXPECT_NE(d.node->name(), "n0") << "the last whole node is kept";
  const PodRequest eight = pod("eight", 8, 1000);
  s.arrived(eight);
  d = s.schedule(eight);
  ASSERT_TRUE(d.placed);
  EXPECT_EQ(d.node->name(), "n0");
}

}  // namespace
}  // namespace fracpack::scheduling::policies_fracpack_test
