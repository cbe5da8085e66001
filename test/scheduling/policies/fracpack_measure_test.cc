// fracpack's measure (scheduling/policies/fracpack_measure.h): its two views,
// node memory, the shapes' weights, and the remembered results.
#include "scheduling/policies/fracpack_measure.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/support/testlib.h"

namespace fracpack::scheduling::policies::fracpack_measure_test {
namespace {

using Card = FracpackMeasure::Card;

using fracpack::testing::gpu_shape;

ShapeCounts one(const PodShape& s, double node_memory_mib = 0) {
  ShapeCounts c;
  c.add(s, 1, node_memory_mib);
  return c;
}

std::vector<Card> free_cards(std::initializer_list<int> free) {
  std::vector<Card> out;
  for (int f : free) out.push_back(Card{f, 16384, 16384, 0});
  return out;
}

constexpr double kFgd = FracpackMeasure::kFgdWeight;

TEST(FracpackMeasure, TheCapacityViewCountsCpuStrandedCardsAndRemainders) {
  // Whole-card pods needing 12 cores; 3 free cards but 13 cores: FGD's view
  // calls all three usable, the capacity view only one.
  FracpackMeasure whole(one(gpu_shape(12000, 1000, 1)), nullptr);
  EXPECT_DOUBLE_EQ(whole.frag(13000, 1 << 20, free_cards({1000, 1000, 1000})), (1 - kFgd) * 2000);
  EXPECT_DOUBLE_EQ(whole.frag(40000, 1 << 20, free_cards({1000, 1000, 1000})), 0);
  // Not even one pod's CPU: every idle milli, in both views.
  EXPECT_DOUBLE_EQ(whole.frag(11000, 1 << 20, free_cards({1000, 1000})), 2000);
  // Shares of 470: a free card takes two and leaves 60; one with 400 takes none.
  FracpackMeasure share(one(gpu_shape(1000, 470, 1)), nullptr);
  EXPECT_DOUBLE_EQ(share.frag(64000, 1 << 20, free_cards({1000})), (1 - kFgd) * 60);
  EXPECT_DOUBLE_EQ(share.frag(64000, 1 << 20, free_cards({400})), 400);
  // Two-card pods: cards in pairs.
  FracpackMeasure pair(one(gpu_shape(1000, 1000, 2)), nullptr);
  EXPECT_DOUBLE_EQ(pair.frag(64000, 1 << 20, free_cards({1000, 1000, 1000})), (1 - kFgd) * 1000);
  EXPECT_DOUBLE_EQ(pair.frag(64000, 1 << 20, free_cards({1000, 0})), 1000);
}

TEST(FracpackMeasure, NodeMemoryStrandsCardsAsCpuDoes) {
  // The openb 1-GPU pod: 48 GiB of node memory per card.
  FracpackMeasure m(one(gpu_shape(1000, 1000, 1), 49152), nullptr);
  EXPECT_DOUBLE_EQ(m.frag(64000, 2 * 49152, free_cards({1000, 1000})), 0);
  EXPECT_DOUBLE_EQ(m.frag(64000, 60000, free_cards({1000, 1000})), (1 - kFgd) * 1000);  // memory for one
  EXPECT_DOUBLE_EQ(m.frag(64000, 40000, free_cards({1000, 1000})), 2000);  // for none
}

TEST(FracpackMeasure, ShapesWeighByArrivalsOverCardsAndByScarcity) {
  ShapeCounts counts;
  counts.add(gpu_shape(1000, 1000, 1), 1);
  counts.add(gpu_shape(1000, 1000, 8), 1);
  FracpackMeasure m(counts, nullptr);
  EXPECT_NEAR(m.weights().at(gpu_shape(1000, 1000, 1)), 8.0 / 9, 1e-12);
  EXPECT_NEAR(m.weights().at(gpu_shape(1000, 1000, 8)), 1.0 / 9, 1e-12);

  // One node of ten has model X: a shape only X serves weighs sqrt(10) times one any serves.
  Ledger l;
  l.upsert_node(fracpack::testing::node("x", 1, 16384, "X"));
  for (int i = 0; i < 9; ++i) l.upsert_node(fracpack::testing::node("y" + std::to_string(i), 1, 16384, "Y"));
  ShapeCounts pinned;
  pinned.add(gpu_shape(1000, 500, 1, "X"), 1);
  pinned.add(gpu_shape(1000, 500, 1), 1);
  const FracpackMeasure::Supply supply = FracpackMeasure(pinned, nullptr).supply(l);
  EXPECT_NEAR(supply.at(gpu_shape(1000, 500, 1, "X")), 0.1, 1e-12);
  EXPECT_NEAR(supply.at(gpu_shape(1000, 500, 1)), 1.0, 1e-12);
  FracpackMeasure weighted(pinned, &supply);
  EXPECT_NEAR(weighted.weights().at(gpu_shape(1000, 500, 1, "X")) / weighted.weights().at(gpu_shape(1000, 500, 1)),
              std::sqrt(10.0), 1e-9);
  // A node's CPU and memory bound its supply: no node has 100 cores.
  const FracpackMeasure::Supply big = FracpackMeasure(one(gpu_shape(100000, 500, 1)), nullptr).supply(l);
  EXPECT_DOUBLE_EQ(big.at(gpu_shape(100000, 500, 1)), 0);
}

TEST(FracpackMeasure, ModelsAreCheckedPerCard) {
  FracpackMeasure m(one(gpu_shape(1000, 500, 1, "Y")), nullptr);
  Ledger l;
  NodeSpec mixed = fracpack::testing::node("n", 2, 16384, "X");
  mixed.cards[1].model = "Y";
  l.upsert_node(mixed);
  l.upsert_node(fracpack::testing::node("x", 2, 16384, "X"));
  std::vector<Card> cards;
  m.cards_of(*l.node("n"), cards);
  EXPECT_DOUBLE_EQ(m.frag(64000, 1 << 20, cards), 1000);  // card X idle for a Y-only pod; card Y takes two
  m.cards_of(*l.node("x"), cards);
  EXPECT_DOUBLE_EQ(m.frag(64000, 1 << 20, cards), 2000);  // nothing usable
}

TEST(FracpackMeasure, RememberedAnswersEqualFreshOnesInAnyCardOrder) {
  ShapeCounts w;
  w.add(gpu_shape(3000, 500, 1), 5, 8192);
  w.add(gpu_shape(12000, 1000, 1), 3, 49152);
  w.add(gpu_shape(2000, 0, 0), 2, 30000);
  w.add(gpu_shape(30000, 1000, 2), 1, 100000);
  FracpackMeasure remembered(w, nullptr);
  for (int64_t cpu : {1000, 2500, 11999, 12000, 40000}) {
    for (int64_t memory : {5000, 50000, 200000}) {
      for (int a : {0, 300, 500, 1000}) {
        for (int b : {100, 600, 1000}) {
          FracpackMeasure fresh(w, nullptr);
          const double first = remembered.frag(cpu, memory, free_cards({a, b, 1000}));
          EXPECT_DOUBLE_EQ(first, remembered.frag(cpu, memory, free_cards({a, b, 1000})));
          EXPECT_DOUBLE_EQ(first, fresh.frag(cpu, memory, free_cards({1000, b, a})));
        }
      }
    }
  }
}

}  // namespace
}  // namespace fracpack::scheduling::policies::fracpack_measure_test
