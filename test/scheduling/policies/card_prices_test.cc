// The cutting-stock prices of a share mix (scheduling/policies/card_prices.h):
// the LP's optimum, its prices, a card's best completion (by every size, or
// by those a node's CPU and memory still take) and the regret of a share on
// a card.
#include "scheduling/policies/card_prices.h"

#include <gtest/gtest.h>

#include <map>

namespace fracpack::scheduling::policies::card_prices_test {
namespace {

TEST(CardPrices, OneSizePacksAsManyPerCardAsFit) {
  const CardPrices p(std::map<int, double>{{470, 10}});
  EXPECT_NEAR(p.cards(), 5, 1e-9);  // two per card
  EXPECT_NEAR(p.price(470), 0.5, 1e-9);
  EXPECT_NEAR(p.value(1000), 1, 1e-9);
  EXPECT_NEAR(p.value(530), 0.5, 1e-9);
  EXPECT_NEAR(p.value(469), 0, 1e-9);
  // Whether the 470 opens a card or joins one, the card's best completion holds.
  EXPECT_NEAR(p.regret(1000, 470), 0, 1e-9);
  EXPECT_NEAR(p.regret(530, 470), 0, 1e-9);
}

// The openb default trace's pairing question: a 320 beside a 650 (970 used)
// or on a card of its own (a 650 comes later) loses nothing; beside a 470 it
// leaves 210 that none of the mix's shares fills, and spoils the 470's
// partner (another 470).
TEST(CardPrices, AShareThatSpoilsTheCardsBestCompletionRegretsIt) {
  const CardPrices p(std::map<int, double>{{650, 1}, {320, 1}, {470, 2}});
  EXPECT_NEAR(p.cards(), 2, 1e-9);  // 650 + 320, 470 + 470
  EXPECT_NEAR(p.price(650) + p.price(320), 1, 1e-9);
  EXPECT_NEAR(p.price(470), 0.5, 1e-9);
  EXPECT_NEAR(p.regret(350, 320), 0, 1e-9) << "beside a 650";
  EXPECT_NEAR(p.regret(1000, 320), 0, 1e-9) << "on an empty card";
  EXPECT_GT(p.regret(530, 320), 1.0 / 6 - 1e-9) << "beside a 470";
  EXPECT_NEAR(p.regret(530, 470), 0, 1e-9) << "the 470's partner";
  EXPECT_NEAR(p.regret(1000, 650), 0, 1e-9);
}

// The 810s leave 190; the few 160s fill it at no cost, anywhere they go
// before the 810 they join.
TEST(CardPrices, ScarceSmallSharesFillTheRemaindersOfBigOnes) {
  const CardPrices p(std::map<int, double>{{810, 10}, {160, 4}});
  EXPECT_NEAR(p.cards(), 10, 1e-9);
  EXPECT_NEAR(p.price(810), 1, 1e-9);
  EXPECT_NEAR(p.price(160), 0, 1e-9);
  EXPECT_NEAR(p.regret(190, 160), 0, 1e-9);
  EXPECT_NEAR(p.regret(1000, 160), 0, 1e-9);  // 840 still takes an 810
  EXPECT_NEAR(p.regret(840, 810), 0, 1e-9);
  // A 160 that leaves less than an 810 on a card spoils it.
  EXPECT_NEAR(p.regret(900, 160), 1, 1e-9);
}

// A card's completion needs room on its node: with the CPU a 470 asks gone,
// the 530 beside it is worth nothing; with a 320's still there, a 320's
// worth.
TEST(CardPrices, ACardsCompletionNeedsRoomOnItsNode) {
  const CardPrices p(std::map<int, double>{{470, 2}, {320, 1}, {650, 1}},
                     std::map<int, CardPrices::Needs>{{470, {8000, 30000}}, {320, {4000, 15000}}, {650, {12000, 47000}}});
  EXPECT_EQ(p.fitting(64000, 1 << 20), CardPrices::kAll);
  EXPECT_NEAR(p.value(530, p.fitting(64000, 1 << 20)), 0.5, 1e-9);
  EXPECT_NEAR(p.value(530, p.fitting(5000, 1 << 20)), p.price(320), 1e-9) << "room for a 320 alone";
  EXPECT_NEAR(p.value(530, p.fitting(5000, 10000)), 0, 1e-9) << "no memory for one";
  EXPECT_NEAR(p.value(530, p.fitting(0, 1 << 20)), 0, 1e-9);
  EXPECT_NEAR(p.value(1000, p.fitting(9000, 1 << 20)), 2 * p.price(470), 1e-9) << "no 650 here";
  // The sets computed stay valid as others are computed.
  const std::vector<double>& none = p.values(p.fitting(0, 0));
  for (int64_t cpu = 0; cpu < 20000; cpu += 1000) p.values(p.fitting(cpu, 1 << 20));
  EXPECT_EQ(none.size(), CardPrices::kCard + 1u);
  EXPECT_EQ(none[CardPrices::kCard], 0);
}

TEST(CardPrices, NoCardIsWorthMoreThanOneAndUnknownSizesRegretNothing) {
  const CardPrices p(std::map<int, double>{{50, 3}, {110, 7}, {230, 5}, {320, 11}, {460, 4}, {470, 20}, {590, 3}, {650, 9}, {810, 30}});
  for (int f = 0; f <= CardPrices::kCard; ++f) {
    EXPECT_LE(p.value(f), 1 + 1e-7) << f;
    if (f > 0) {
      EXPECT_GE(p.value(f), p.value(f - 1)) << f;
    }
  }
  for (int size : {50, 110, 230, 320, 460, 470, 590, 650, 810}) {
    for (int f = size; f <= CardPrices::kCard; f += 7) EXPECT_GE(p.regret(f, size), 0) << size << " on " << f;
  }
  EXPECT_EQ(p.price(333), 0);
  EXPECT_EQ(p.regret(1000, 333), 0);
  EXPECT_EQ(p.regret(100, 470), 0) << "a share that does not fit regrets nothing";
  const CardPrices none{std::map<int, double>{}};
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.regret(1000, 500), 0);
  EXPECT_EQ(none.value(1000), 0);
  EXPECT_EQ(none.values().size(), CardPrices::kCard + 1u);
}

}  // namespace
}  // namespace fracpack::scheduling::policies::card_prices_test
