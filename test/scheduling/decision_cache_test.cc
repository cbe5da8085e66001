// Verdicts of pod demands on nodes (scheduling/decision_cache.h): which pods
// share a demand, the cache's entries per demand and its least recently used
// eviction (the verdicts it keeps: test/scheduling/verdict_test.cc).
#include "scheduling/decision_cache.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::decision_cache_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

TEST(DecisionCache, KeepsTheMostRecentDemands) {
  DecisionCache cache(1);
  auto& first = cache.entries(pod("p", 1, 500), 2);
  first[0].version = 7;
  EXPECT_EQ(cache.entries(pod("q", 1, 500), 2)[0].version, 7u) << "the same demand, the same entries";
  EXPECT_EQ(cache.entries(pod("r", 1, 300), 2)[0].version, 0u);
  EXPECT_EQ(cache.entries(pod("p", 1, 500), 2)[0].version, 0u) << "evicted by the other demand";
}


TEST(DecisionCache, PodsDifferingOnlyInTheirNamesShareADemand) {
  PodRequest a = pod("a", 1, 500, 1024);
  PodRequest b = pod("b", 1, 500, 1024);
  b.namespace_name = "other";
  b.containers[0].name = "sidecar";
  EXPECT_EQ(demand_key(a), demand_key(b));
  // Anything that changes where a pod fits is another demand.
  auto differs = [&](auto change) {
    PodRequest c = a;
    change(c);
    return demand_key(c) != demand_key(a);
  };
  EXPECT_TRUE(differs([](PodRequest& p) { p.cpu_milli += 1; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.memory_bytes += 1; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].cards = 2; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].cores = 501; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].memory_mib = 1025; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].memory_percent = 10; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].init = true; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].alone = true; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers[0].percent_rounds_down = true; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.containers.push_back(p.containers[0]); }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.allowed_models = {"T4"}; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.excluded_models = {"T4"}; }));
  EXPECT_TRUE(differs([](PodRequest& p) {
    p.allowed_models = {"T4"};
    p.model_match = PodRequest::ModelMatch::kContainsIgnoringCase;
  }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.uuid_allow = {"GPU-1"}; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.uuid_exclude = {"GPU-1"}; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.numa_single = true; }));
  EXPECT_TRUE(differs([](PodRequest& p) { p.init_names_unknown_resources = true; }));
  // A model in the allowed list is not the same as one in the excluded list.
  PodRequest allow = a, exclude = a;
  allow.allowed_models = {"T4"};
  exclude.excluded_models = {"T4"};
  EXPECT_NE(demand_key(allow), demand_key(exclude));
}

TEST(DecisionCache, EntriesAreAtLeastAsLongAsAskedAndStartEmpty) {
  DecisionCache cache;
  auto& e = cache.entries(pod("p", 1, 500), 3);
  ASSERT_GE(e.size(), 3u);
  for (const auto& entry : e) EXPECT_EQ(entry.version, 0u);
  e[2].version = 9;
  auto& longer = cache.entries(pod("p", 1, 500), 5);
  ASSERT_GE(longer.size(), 5u);
  EXPECT_EQ(longer[2].version, 9u) << "growing keeps what was there";
}

TEST(DecisionCache, UsingADemandMakesItTheMostRecent) {
  DecisionCache cache(2);
  cache.entries(pod("a", 1, 100), 1)[0].version = 1;
  cache.entries(pod("b", 1, 200), 1)[0].version = 2;
  EXPECT_EQ(cache.entries(pod("a", 1, 100), 1)[0].version, 1u);  // a is now the most recent
  cache.entries(pod("c", 1, 300), 1)[0].version = 3;              // evicts b
  EXPECT_EQ(cache.entries(pod("a", 1, 100), 1)[0].version, 1u);
  EXPECT_EQ(cache.entries(pod("c", 1, 300), 1)[0].version, 3u);
  EXPECT_EQ(cache.entries(pod("b", 1, 200), 1)[0].version, 0u) << "b was the least recently used";
}

TEST(DecisionCache, AnEntryIsCurrentForOneNodeVersionAndPolicyGeneration) {
  Ledger l;
  l.upsert_node(node("a", 1));
  const NodeState& n = *l.node("a");
  DecisionCache::Entry e;
  EXPECT_FALSE(e.current(n, 0)) << "an empty entry is never current";
  e.version = n.version();
  e.generation = 4;
  EXPECT_TRUE(e.current(n, 4));
  EXPECT_FALSE(e.current(n, 5));
  const uint64_t before = n.version();
  l.upsert_node(node("a", 2));
  ASSERT_NE(l.node("a")->version(), before);
  EXPECT_FALSE(e.current(*l.node("a"), 4)) << "the node changed";
}



}  // namespace
}  // namespace fracpack::scheduling::decision_cache_test
