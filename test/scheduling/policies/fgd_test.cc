// Fragmentation Gradient Descent (scheduling/policies/fgd.cc): the single
// share's candidate cards with the fragmentation after each, the
// fragmentation after any placement, and the score 100 x sigmoid(dF / 1000).
#include "scheduling/policies/policies.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/support/testlib.h"

namespace fracpack::scheduling::fgd_test {
namespace {

using fracpack::testing::gpu_shape;
using fracpack::testing::node;
using fracpack::testing::pod;

// Whole-card pods only: any free part of a card is fragmented.
std::shared_ptr<const Workload> whole_cards() {
  return std::make_shared<const Workload>(std::vector<WorkloadEntry>{{gpu_shape(1000, 1000, 1), 1.0}});
}

// A node of three cards: card 0 half used, card 1 idle, card 2 an A100.
struct Fixture {
  Ledger ledger;
  Fixture() {
    auto spec = node("n", 3);
    spec.cards[2].model = "A100";
    ledger.upsert_node(spec);
    Allocation a;
    a.node = "n";
    a.containers.push_back(ContainerAllocation{"main", false, {CardShare{0, "", 0, 500}}});
    EXPECT_GE(ledger.confirm(PodFacts{"u", "ns/u", 0, 0}, a), 0);
  }
  const NodeState& n() const { return *ledger.node("n"); }
};

int64_t sigmoid_score(double before, double after) {
  return static_cast<int64_t>(100.0 / (1 + std::exp(-((before - after) / 1000))));
}

TEST(Fgd, ASingleShareIsOneAppContainerOnPartOfOneCard) {
  EXPECT_TRUE(policies::is_single_share(pod("p", 1, 500)));
  EXPECT_TRUE(policies::is_single_share(pod("p", 1, 999)));
  EXPECT_FALSE(policies::is_single_share(pod("p", 1, 1000))) << "a whole card";
  EXPECT_FALSE(policies::is_single_share(pod("p", 2, 500)));
  EXPECT_FALSE(policies::is_single_share(pod("p", 0, 0))) << "no GPU";
  PodRequest init = pod("p", 1, 500);
  init.containers[0].init = true;
  EXPECT_FALSE(policies::is_single_share(init));
  PodRequest two = pod("p", 1, 500);
  two.containers.push_back(two.containers[0]);
  EXPECT_FALSE(policies::is_single_share(two));
}

TEST(Fgd, ShareOptionsAreTheCardsThatCanTakeItWithTheFragmentationAfter) {
  Fixture f;
  FragmentationModel model(*whole_cards());
  PodRequest p = pod("p", 1, 600);
  p.allowed_models = {"T4"};
  std::vector<policies::ShareOption> options;
  const double before = policies::share_options(model, p, f.n(), options);
  EXPECT_DOUBLE_EQ(before, model.frag(f.n()));
  EXPECT_DOUBLE_EQ(before, 500) << "card 0's free half";
  // Card 0 has 500 free (600 does not fit), card 2 is another model: only card 1.
  ASSERT_EQ(options.size(), 1u);
  EXPECT_EQ(options[0].pos, 1);
  EXPECT_DOUBLE_EQ(options[0].frag_after, 500 + 400);
  // frag_after of that pick agrees.
  Picks picks;
  picks.push(1);
  EXPECT_DOUBLE_EQ(policies::frag_after(model, p, f.n(), picks), options[0].frag_after);
}

TEST(Fgd, TheCardThatFragmentsLeastScoresBest) {
  Fixture f;
  auto fgd = policies::make_fgd(whole_cards());
  EXPECT_EQ(fgd->name(), "fgd");
  Evaluation e;
  ASSERT_TRUE(fgd->evaluate(pod("p", 1, 500), f.n(), e));
  // On card 0 the free half is used up: fragmentation 500 -> 0.
  EXPECT_EQ(e.picks.size, 1u);
  EXPECT_EQ(e.picks.pos[0], 0);
  EXPECT_EQ(e.score, sigmoid_score(500, 0));
  EXPECT_EQ(e.score, 62);
}

TEST(Fgd, WholeCardsTakeTheTightestCardsAndScoreTheirChange) {
  Fixture f;
  auto fgd = policies::make_fgd(whole_cards());
  Evaluation e;
  ASSERT_TRUE(fgd->evaluate(pod("w", 1, 1000), f.n(), e));
  ASSERT_EQ(e.picks.size, 1u);
  EXPECT_NE(e.picks.pos[0], 0) << "card 0 has only half free";
  EXPECT_EQ(e.score, 50) << "a whole card fragments nothing: dF = 0";
  // A pod that fits nowhere is not evaluated.
  Evaluation none;
  EXPECT_FALSE(fgd->evaluate(pod("big", 3, 1000), f.n(), none));
  EXPECT_FALSE(fgd->evaluate(pod("share", 1, 600, 20000), f.n(), none));
}

TEST(Fgd, InitContainersLeaveNoFragmentationBehind) {
  Fixture f;
  FragmentationModel model(*whole_cards());
  PodRequest p = pod("p", 1, 500);
  ContainerRequest init = p.containers[0];
  init.init = true;
  init.cores = 300;
  p.containers.insert(p.containers.begin(), init);
  Picks picks;
  picks.push(1);  // the init container's card
  picks.push(0);  // the app container's
  EXPECT_DOUBLE_EQ(policies::frag_after(model, p, f.n(), picks), 0) << "card 1 is whole again once the init container ends";
}

}  // namespace
}  // namespace fracpack::scheduling::fgd_test
