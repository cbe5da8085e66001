// The verdict cache the extender and the replay share
// (scheduling/decision_cache.h): entries per demand, the least recently used
// demand evicted, demand keys that separate what must be judged apart.
#include "scheduling/decision_cache.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling {
namespace {

using fracpack::testing::pod;

TEST(DecisionCache, KeepsTheMostRecentDemands) {
  DecisionCache cache(1);
  auto& first = cache.entries(pod("p", 1, 500), 2);
  first[0].version = 7;
  EXPECT_EQ(cache.entries(pod("q", 1, 500), 2)[0].version, 7u) << "the same demand, the same entries";
  EXPECT_EQ(cache.entries(pod("r", 1, 300), 2)[0].version, 0u);
  EXPECT_EQ(cache.entries(pod("p", 1, 500), 2)[0].version, 0u) << "evicted by the other demand";
}

TEST(DecisionCache, EntriesGrowToTheSlotsAskedAndStartEmpty) {
  DecisionCache cache;
  auto& few = cache.entries(pod("p", 1, 500), 2);
  ASSERT_EQ(few.size(), 2u);
  few[1].version = 3;
  auto& more = cache.entries(pod("p", 1, 500), 5);
  ASSERT_EQ(more.size(), 5u);
  EXPECT_EQ(more[1].version, 3u) << "kept when it grows";
  EXPECT_EQ(more[4].version, 0u);
  EXPECT_EQ(cache.entries(pod("p", 1, 500), 1).size(), 5u) << "never shrinks";
}

}  // namespace
}  // namespace fracpack::scheduling
