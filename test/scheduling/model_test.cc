// What a pod holds on each card (scheduling/model.h): app containers add up,
// init containers run one at a time before them, and the hold is, per
// dimension, the larger of the two, card by card.
#include "scheduling/model.h"

#include <gtest/gtest.h>

namespace fracpack::scheduling::model_test {
namespace {

ContainerAllocation on(std::vector<CardShare> cards, bool init = false) {
  ContainerAllocation c;
  c.name = init ? "init" : "app";
  c.init = init;
  c.cards = std::move(cards);
  return c;
}
CardShare share(int index, int64_t memory_mib, int cores) { return CardShare{index, "", memory_mib, cores}; }

TEST(Model, AppContainersOnACardAddUp) {
  Allocation a;
  a.containers = {on({share(0, 1000, 200), share(1, 500, 100)}), on({share(0, 2000, 300)})};
  EXPECT_EQ(charges_of(a), (std::vector<CardCharge>{{0, 3000, 500, 2}, {1, 500, 100, 1}}));
}

TEST(Model, InitContainersTakeTheLargerPerDimension) {
  Allocation a;
  a.containers = {on({share(0, 1000, 600)}), on({share(0, 4000, 100)}, true), on({share(0, 500, 800)}, true)};
  // Memory: max(1000, 4000, 500); cores: max(600, 100, 800); one share either way.
  EXPECT_EQ(charges_of(a), (std::vector<CardCharge>{{0, 4000, 800, 1}}));
  // Two app shares outnumber an init container's one.
  a.containers.push_back(on({share(0, 0, 0)}));
  EXPECT_EQ(charges_of(a)[0].shares, 2);
}

TEST(Model, ACardOnlyAnInitContainerUsesIsHeldToo) {
  Allocation a;
  a.containers = {on({share(3, 100, 100)}), on({share(1, 2000, 1000)}, true)};
  EXPECT_EQ(charges_of(a), (std::vector<CardCharge>{{1, 2000, 1000, 1}, {3, 100, 100, 1}})) << "sorted by index";
}

TEST(Model, NoContainersHoldNothing) {
  EXPECT_TRUE(charges_of(Allocation{}).empty());
  EXPECT_EQ(card_indices_text(Allocation{}), "");
}

TEST(Model, CardIndicesAreSortedAndDistinct) {
  Allocation a;
  a.containers = {on({share(5, 1, 1), share(0, 1, 1)}), on({share(5, 1, 1)}), on({share(2, 1, 1), share(0, 1, 1)}, true)};
  EXPECT_EQ(card_indices_text(a), "0,2,5");
}

}  // namespace
}  // namespace fracpack::scheduling::model_test
