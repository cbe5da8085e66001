// The CI-sized chaos soak (test/server/chaos.h): about a minute of random
// pods, deletions, API faults and SIGKILL restarts of fracpack, with zero
// invariant violations. The long run is bench/chaos_bench.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test/server/chaos.h"

namespace fracpack::testing {
namespace {

TEST(Chaos, FaultsDeletionsAndRestartsBreakNoInvariant) {
  ChaosOptions o;
  o.operations = 5000;
  o.seed = 20261121;
  o.restart_every = 1250;
  o.verbose = std::getenv("CHAOS_VERBOSE") != nullptr;
  if (const char* ttl = std::getenv("CHAOS_TTL_MS")) o.assume_ttl = std::chrono::milliseconds(std::atoi(ttl));
  const ChaosReport r = run_chaos(o);
  std::string samples;
  for (const auto& s : r.samples) samples += "\n  " + s;
  EXPECT_EQ(r.violations, 0u) << r.summary() << samples;
  // The run did what it says: faults of every kind, restarts, placements.
  EXPECT_EQ(r.restarts, 4u) << r.summary();
  EXPECT_GE(r.faults.size(), 10u) << r.summary();
  EXPECT_GT(r.killed_mid_bind, 0u) << r.summary();
  EXPECT_GT(r.placed, 500u) << r.summary();
  EXPECT_GT(r.deleted, 600u) << r.summary();
  std::printf("%s\n", r.summary().c_str());
}

}  // namespace
}  // namespace fracpack::testing
