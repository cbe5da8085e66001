// The FGD paper's baseline policies and the HAMi-style binpack and spread
// (scheduling/policies/simulator.cc, policies.h): the node as the
// simulator's plugins see it, the spreading card order, random's seed, and
// the utilisation scores. (The score vectors of gpupacking, gpuclustering,
// bestfit and dotprod are in policy_test.cc.)
#include "scheduling/policies/policies.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::simulator_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

// Confirms a pod holding `shares` (card index, cores, memory MiB) on `n`.
void hold(Ledger& l, const std::string& n, const std::string& uid, std::vector<CardShare> shares, int64_t cpu_milli = 0) {
  Allocation a;
  a.node = n;
  a.containers.push_back(ContainerAllocation{"main", false, std::move(shares)});
  ASSERT_GE(l.confirm(PodFacts{uid, "ns/" + uid, cpu_milli, 0}, a), 0);
}

TEST(SimulatorPolicies, TheNodeAsThePluginsSeeIt) {
  Ledger l;
  auto spec = node("n", 4, 16384, "T4", 8000);
  spec.cards[3].cordoned = true;
  l.upsert_node(spec);
  hold(l, "n", "a", {CardShare{0, "", 0, 300}}, 2000);
  const policies::SimNode s = policies::sim_node(*l.node("n"));
  EXPECT_EQ(s.cpu_left, 6000);
  EXPECT_EQ(s.gpus, 4);
  EXPECT_EQ(s.gpu_free, 700 + 1000 + 1000) << "a cordoned card has nothing free";
  EXPECT_EQ(s.fully_free, 2);
}

TEST(SimulatorPolicies, SpreadingRanksTheFreestCardFirst) {
  Ledger l;
  l.upsert_node(node("n", 4));
  hold(l, "n", "a", {CardShare{0, "", 1000, 500}, CardShare{1, "", 0, 200}, CardShare{2, "", 4000, 200}});
  const NodeState& n = *l.node("n");
  const PodRequest p = pod("p", 1, 100);
  std::vector<uint8_t> cand = {0, 1, 2, 3};
  policies::SpreadCardRanker().rank(p, p.containers[0], n, n.use(), cand);
  // Card 3 is idle; 1 and 2 have as much compute free, 1 more memory; 0 last.
  EXPECT_EQ(cand, (std::vector<uint8_t>{3, 1, 2, 0}));
}

TEST(SimulatorPolicies, RandomIsTheSameForTheSameSeed) {
  Ledger l;
  for (int i = 0; i < 8; ++i) l.upsert_node(node("n" + std::to_string(i), 4));
  auto choices = [&](uint64_t seed) {
    auto policy = policies::make_random(seed);
    EXPECT_FALSE(policy->cacheable()) << "a random choice must not be reused";
    std::vector<std::pair<int64_t, uint8_t>> out;
    for (const auto& [name, n] : l.nodes()) {
      Evaluation e;
      EXPECT_TRUE(policy->evaluate(pod("p", 1, 300), n, e));
      out.push_back({e.score, e.picks.pos[0]});
    }
    return out;
  };
  EXPECT_EQ(choices(7), choices(7));
  EXPECT_NE(choices(7), choices(8));
}

TEST(SimulatorPolicies, BinpackAndSpreadScoreTheUtilisationAfterPlacement) {
  Ledger l;
  l.upsert_node(node("n", 2, 16384));
  hold(l, "n", "a", {CardShare{0, "", 8192, 500}});
  const NodeState& n = *l.node("n");
  auto binpack = policies::make_binpack();
  auto spread = policies::make_spread();
  EXPECT_EQ(binpack->name(), "binpack");
  EXPECT_EQ(spread->name(), "spread");
  EXPECT_EQ(binpack->score_range(), (std::pair<int64_t, int64_t>{0, 10000}));
  const PodRequest p = pod("p", 1, 300, 4096);
  Evaluation packed, spread_out;
  ASSERT_TRUE(binpack->evaluate(p, n, packed));
  ASSERT_TRUE(spread->evaluate(p, n, spread_out));
  // Compute (500 + 300) / 2000 = 0.4, memory (8192 + 4096) / 32768 = 0.375: utilisation 0.3875.
  EXPECT_EQ(packed.score, 3875);
  EXPECT_EQ(spread_out.score, 10000 - 3875);
  // binpack shares the busy card, spread takes the idle one.
  EXPECT_EQ(packed.picks.pos[0], 0);
  EXPECT_EQ(spread_out.picks.pos[0], 1);
  // A pod that does not fit: no evaluation.
  Evaluation none;
  EXPECT_FALSE(binpack->evaluate(pod("big", 3, 100), n, none));
}

}  // namespace
}  // namespace fracpack::scheduling::simulator_test
