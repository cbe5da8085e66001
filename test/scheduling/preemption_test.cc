// The victim search (scheduling/preemption.h): the fewest, lowest-priority
// victims that free the cards a pod needs.
#include "scheduling/preemption.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::preemption_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

void place(Ledger& l, const std::string& uid, int card, int cores) {
  l.confirm(PodFacts{uid, "d/" + uid, 0, 0}, Allocation{"n", {{"m", false, {CardShare{card, "", 0, cores}}}}});
}

TEST(Preemption, TheFewestLowestPriorityVictims) {
  Ledger l;
  l.upsert_node(node("n", 2));
  place(l, "low-small", 0, 300);
  place(l, "low-big", 0, 700);
  place(l, "high", 1, 1000);
  const std::vector<VictimCandidate> candidates = {{"high", 10}, {"low-small", 1}, {"low-big", 1}};
  auto choice = choose_victims(pod("p", 1, 600), l, *l.node("n"), candidates, FitOptions{});
  ASSERT_TRUE(choice.has_value());
  EXPECT_FALSE(choice->fits_already);
  EXPECT_EQ(choice->victims, (std::vector<std::string>{"low-big"})) << "frees 700 alone; low-small is not needed";
}

TEST(Preemption, NothingToPreemptOrNotEnough) {
  Ledger l;
  l.upsert_node(node("n", 1));
  place(l, "a", 0, 400);
  auto fits = choose_victims(pod("p", 1, 500), l, *l.node("n"), {{"a", 0}}, FitOptions{});
  ASSERT_TRUE(fits.has_value());
  EXPECT_TRUE(fits->fits_already);
  EXPECT_FALSE(choose_victims(pod("p", 2, 1000), l, *l.node("n"), {{"a", 0}}, FitOptions{}).has_value());
  EXPECT_FALSE(choose_victims(pod("p", 1, 1000), l, *l.node("n"), {{"unknown", 0}}, FitOptions{}).has_value());
}

}  // namespace
}  // namespace fracpack::scheduling::preemption_test
