// The CI-sized chaos soak (test/support/chaos.h): about a minute of random
// pods, deletions, API faults and SIGKILL restarts of fracpack, with zero
// invariant violations. The long run is bench/chaos_bench.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test/support/chaos.h"

namespace fracpack::testing::chaos_test {
namespace {

ChaosOptions ci_options() {
  ChaosOptions o;
  o.operations = 5000;
  o.seed = 20261121;
  o.restart_every = 1250;
  o.verbose = std::getenv("CHAOS_VERBOSE") != nullptr;
  if (const char* ttl = std::getenv("CHAOS_TTL_MS")) o.assume_ttl = std::chrono::milliseconds(std::atoi(ttl));
  // Set by the sanitizer test presets (CMakePresets.json): TSan runs fracpack
  // 5-15 times slower, and its reconciler's passes with it.
  if (const char* slack = std::getenv("CHAOS_TTL_SLACK_MS")) o.ttl_slack = std::chrono::milliseconds(std::atoi(slack));
  return o;
}

ChaosReport run(const ChaosOptions& o) {
  const ChaosReport r = run_chaos(o);
  std::string samples;
  for (const auto& s : r.samples) samples += "\n  " + s;
  EXPECT_EQ(r.violations, 0u) << r.summary() << samples;
  EXPECT_EQ(r.restarts, o.operations / o.restart_every) << r.summary();
  EXPECT_GT(r.deleted, o.operations / 10) << r.summary();
  std::printf("%s\n", r.summary().c_str());
  return r;
}

// Watches broken a few times a second: the informers sit in their backoff
// (up to 30 s) and fracpack works from lists, its own binds and the
// reconciler's GETs.
TEST(Chaos, AWatchStormBreaksNoInvariant) {
  const ChaosReport r = run(ci_options());
  EXPECT_EQ(r.faults.size(), 12u) << "every kind of fault: " << r.summary();
  EXPECT_GT(r.placed, 300u) << r.summary();
}

// Watches broken rarely, so deletions and binds reach fracpack as watch
// events (late, cut mid-event), and restarts catch binds in flight.
TEST(Chaos, FaultsDeletionsAndRestartsBreakNoInvariant) {
  ChaosOptions o = ci_options();
  o.disruption_rate = 0.0004;
  const ChaosReport r = run(o);
  EXPECT_GE(r.faults.size(), 6u) << r.summary();
  EXPECT_GT(r.killed_mid_bind, 0u) << r.summary();
  // Most changes, as events: more than one per pod created (in the storm
  // above: a few dozen events in all).
  EXPECT_GT(r.watch_events, r.created) << r.summary();
  EXPECT_GT(r.placed, 500u) << r.summary();
}

// The same soak in each peer's contract (test/support/soak_profile.h): HAMi
// (its node lock taken, kubelet admitting each bound pod through HAMi's
// device plugin double, which releases the lock) and gpushare (memory-only
// shares, its plugin double marking pods assigned).
class ChaosProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(ChaosProfile, FaultsDeletionsAndRestartsBreakNoInvariant) {
  ChaosOptions o = ci_options();
  o.profile = GetParam();
  o.disruption_rate = 0.0004;
  const ChaosReport r = run(o);
  EXPECT_GE(r.faults.size(), 6u) << r.summary();
  EXPECT_GT(r.killed_mid_bind, 0u) << r.summary();
  EXPECT_GT(r.placed, 500u) << r.summary();
  // kubelet admitted most of them through the peer's plugin (the rest
  // were deleted first).
  EXPECT_GT(r.admitted, r.placed / 2) << r.summary();
}

INSTANTIATE_TEST_SUITE_P(Profiles, ChaosProfile, ::testing::Values("hami", "gpushare"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace fracpack::testing::chaos_test
