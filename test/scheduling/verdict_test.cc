// The one verdict the extender and the replay share (scheduling/verdict.h).
#include "scheduling/verdict.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::verdict_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

TEST(Verdict, JudgeExplainsOnlyWhenAsked) {
  Ledger l;
  l.upsert_node(node("a", 1));
  auto policy = make_policy("bestfit", PolicyOptions{}).value();
  Verdict quiet, explained;
  judge(pod("p", 2, 1000), *l.node("a"), *policy, FitOptions{}, false, quiet);
  judge(pod("p", 2, 1000), *l.node("a"), *policy, FitOptions{}, true, explained);
  EXPECT_FALSE(quiet.fits);
  EXPECT_TRUE(quiet.reason.empty());
  EXPECT_FALSE(explained.fits);
  EXPECT_FALSE(explained.reason.empty());
}

TEST(Verdict, AFitsTheScoreAndCardsOfThePolicy) {
  Ledger l;
  l.upsert_node(node("a", 2));
  auto policy = make_policy("bestfit", PolicyOptions{}).value();
  Verdict v;
  v.reason = "left from an earlier use";
  judge(pod("p", 1, 500), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_TRUE(v.fits);
  EXPECT_TRUE(v.reason.empty()) << "a reused verdict is cleared";
  EXPECT_FALSE(v.unresolvable);
  EXPECT_EQ(v.picks.size, 1);
}

TEST(Verdict, APodNoCardCouldEverTakeIsUnresolvable) {
  Ledger l;
  l.upsert_node(node("a", 1));
  auto policy = make_policy("bestfit", PolicyOptions{}).value();
  Verdict v;
  judge(pod("p", 2, 1000), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_FALSE(v.fits);
  EXPECT_TRUE(v.unresolvable) << v.reason;
}

TEST(Verdict, JudgeScoresWhatFitsAndSaysWhatNeverCould) {
  Ledger l;
  l.upsert_node(node("a", 2));
  auto policy = make_policy("bestfit", PolicyOptions{}).value();
  Verdict v;
  judge(pod("p", 1, 500), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_TRUE(v.fits);
  EXPECT_FALSE(v.unresolvable);
  EXPECT_TRUE(v.reason.empty());
  EXPECT_EQ(v.picks.size, 1u) << "one card picked";
  // Three cards on a node of two: never.
  judge(pod("q", 3, 500), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_FALSE(v.fits);
  EXPECT_TRUE(v.unresolvable);
  EXPECT_FALSE(v.reason.empty());
  // A model the node does not have: never either.
  PodRequest a100 = pod("r", 1, 500);
  a100.allowed_models = {"A100"};
  judge(a100, *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_FALSE(v.fits);
  EXPECT_TRUE(v.unresolvable) << v.reason;
  // The same verdict object judged again: nothing left over from before.
  judge(pod("p", 1, 500), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_TRUE(v.fits);
  EXPECT_FALSE(v.unresolvable);
  EXPECT_TRUE(v.reason.empty());
}

TEST(Verdict, JudgeSaysWhenANodeIsOnlyFullForNow) {
  Ledger l;
  l.upsert_node(node("a", 1));
  PodFacts busy;
  busy.uid = "u-busy";
  busy.key = "default/busy";
  Allocation alloc;
  alloc.node = "a";
  ContainerAllocation c;
  c.name = "main";
  c.cards.push_back(CardShare{0, "", 0, 900});
  alloc.containers.push_back(c);
  ASSERT_GE(l.confirm(busy, alloc), 0);
  auto policy = make_policy("bestfit", PolicyOptions{}).value();
  Verdict v;
  judge(pod("p", 1, 500), *l.node("a"), *policy, FitOptions{}, true, v);
  EXPECT_FALSE(v.fits);
  EXPECT_FALSE(v.unresolvable) << "it fits once the card is free: " << v.reason;
  EXPECT_FALSE(v.reason.empty());
}

}  // namespace
}  // namespace fracpack::scheduling::verdict_test
