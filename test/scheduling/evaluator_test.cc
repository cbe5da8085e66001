// The extender's evaluator (scheduling/evaluator.h) over the decision cache
// it shares with the replay (scheduling/decision_cache.h, tested in
// decision_cache_test.cc): verdicts, reasons, and what is computed again when.
#include "scheduling/evaluator.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::evaluator_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

struct Fixture {
  Ledger ledger;
  std::unique_ptr<Policy> policy = make_policy("bestfit", PolicyOptions{}).value();
  Evaluator evaluator{*policy, FitOptions{}};
  Fixture() {
    ledger.upsert_node(node("a", 2));
    ledger.upsert_node(node("b", 1, 16384, "A100"));
  }
  std::vector<const NodeState*> nodes() const { return {ledger.node("a"), ledger.node("b"), nullptr}; }
  std::vector<Verdict> all(const PodRequest& p) {
    std::vector<Verdict> out;
    const auto n = nodes();
    evaluator.evaluate(p, n, [&](size_t, const Verdict& v) { out.push_back(v); });
    return out;
  }
};

TEST(Evaluator, VerdictsCarryCardsOrReasons) {
  Fixture f;
  const auto v = f.all(pod("p", 2, 1000));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].fits);
  EXPECT_EQ(v[0].picks.size, 2);
  EXPECT_FALSE(v[1].fits);
  EXPECT_TRUE(v[1].unresolvable) << "one card can never hold two: " << v[1].reason;
  EXPECT_FALSE(v[1].reason.empty());
  EXPECT_FALSE(v[2].fits);
  EXPECT_NE(v[2].reason.find("node unknown"), std::string::npos) << v[2].reason;
}

TEST(Evaluator, ANodeIsJudgedOncePerChangeAndPerDemand) {
  Fixture f;
  f.all(pod("p1", 1, 500));
  EXPECT_EQ(f.evaluator.stats().misses, 2u);
  f.all(pod("p2", 1, 500));  // another pod, the same demand
  EXPECT_EQ(f.evaluator.stats().misses, 2u);
  EXPECT_EQ(f.evaluator.stats().hits, 2u);
  // A change on node a: only a is judged again.
  f.ledger.confirm(PodFacts{"x", "d/x", 0, 0}, Allocation{"a", {{"m", false, {CardShare{0, "", 0, 500}}}}});
  f.all(pod("p3", 1, 500));
  EXPECT_EQ(f.evaluator.stats().misses, 3u);
  // Another demand: judged afresh.
  f.all(pod("p4", 1, 300));
  EXPECT_EQ(f.evaluator.stats().misses, 5u);
}

TEST(Evaluator, AProjectionIsJudgedWithoutTheCache) {
  Fixture f;
  const NodeState projected = f.ledger.project(node("c", 1));
  const Verdict v = f.evaluator.evaluate_one(pod("p", 1, 1000), projected);
  EXPECT_TRUE(v.fits);
  EXPECT_EQ(f.evaluator.stats().misses + f.evaluator.stats().hits, 0u);
}

}  // namespace
}  // namespace fracpack::scheduling::evaluator_test
