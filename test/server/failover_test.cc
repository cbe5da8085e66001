// The CI-sized failover soak (test/support/failover.h): two fracpack
// processes on the test API server, kube-scheduler's calls moved from one to
// the other at each failover, watches cut mid-event on 10 % of events (more
// than the long run's 3 %, so a run of seconds sees watches fall behind as
// client-go's backoff grows), pods deleted now and then. No card may end up over-committed in the
// annotations, whether the old leader stays up or is killed with binds in
// flight. The long run is bench/failover_bench.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test/support/failover.h"
#include "test/support/testlib.h"

namespace fracpack::testing::failover_test {
namespace {

FailoverOptions ci_options(bool kill) {
  FailoverOptions o;
  // Under ASan these ran 20 times slower than plain (262 s for the quota
  // test, the longest of the sanitizer stage): FRACPACK_TEST_SCALE_DOWN
  // runs a quarter of the operations there, the 9 failovers all the same.
  o.operations = test_scale_down() > 1 ? 500 : 2000;
  o.failovers = 9;
  o.watch_cut_permille = 100;
  o.seed = kill ? 20261124 : 20261125;
  o.kill_old_leader = kill;
  o.verbose = std::getenv("FAILOVER_VERBOSE") != nullptr;
  return o;
}

// `min_placed`: of the operations, the share that must have placed a pod.
void expect_no_overcommit(const FailoverReport& r, const FailoverOptions& o, uint64_t min_placed_per_mille = 100) {
  std::string samples;
  for (const auto& s : r.samples) samples += "\n  " + s;
  std::printf("%s\n", r.summary().c_str());
  EXPECT_EQ(r.overcommitted_max, 0u) << r.summary() << samples;
  EXPECT_EQ(r.overcommitted_at_end, 0u) << r.summary() << samples;
  EXPECT_EQ(r.failovers, static_cast<uint64_t>(o.failovers));
  EXPECT_GT(r.placed, o.operations * min_placed_per_mille / 1000) << r.summary();
  EXPECT_GT(r.deleted, o.operations / 20) << r.summary();
  // Every GPU bind was fenced: a read of its node's pods each, and with
  // bindFenceRead: marker or resourceVersion, its writes or version reads too.
  EXPECT_GE(r.node_reads, r.placed) << r.summary();
  EXPECT_EQ(r.marker_fallbacks, 0) << r.summary();
  if (o.bind_fence_read == k8s::BindFenceRead::kResourceVersion || o.bind_fence_read == k8s::BindFenceRead::kMarker) {
    EXPECT_GT(r.fence_reads, 0u) << r.summary();
  } else {
    EXPECT_EQ(r.fence_reads, 0u) << r.summary();
  }
}

TEST(Failover, TheOldLeaderStaysUpAndNoCardIsOverCommitted) {
  const FailoverOptions o = ci_options(false);
  expect_no_overcommit(run_failover(o), o);
}

// (With the marker's fence, for API servers before 1.31.)
TEST(Failover, TheOldLeaderIsKilledWithBindsInFlightAndNoCardIsOverCommitted) {
  FailoverOptions o = ci_options(true);
  o.bind_fence_read = k8s::BindFenceRead::kMarker;
  const FailoverReport r = run_failover(o);
  expect_no_overcommit(r, o);
  EXPECT_GT(r.killed_mid_bind, 0u) << r.summary();
}

// Namespace GPU quota through failovers (issue 32): ten namespaces with
// ResourceQuotas, pods spread over them; the annotations' usage of each is
// sampled every 25 operations, after each failover and at the end, and no
// namespace may ever be seen above a hard limit. The new leader's watch may
// lag the old leader's binds on other nodes, which a node's fence alone
// does not see.
TEST(Failover, NoNamespaceIsEverSeenAboveItsGpuQuota) {
  for (const bool kill : {false, true}) {
    FailoverOptions o = ci_options(kill);
    o.quota_namespaces = 10;
    o.seed += 7;
    if (kill) o.bind_fence_read = k8s::BindFenceRead::kMarker;
    const FailoverReport r = run_failover(o);
    expect_no_overcommit(r, o, 50);  // the quotas hold about 27 of the 64 cards
    std::printf("%s", r.quota_table().c_str());
    if (o.bind_fence_read == k8s::BindFenceRead::kMarker) {
      // The watch's delivery of the marker write spares most binds the
      // namespace read (not all: watches are cut). A statistic of the full
      // run: scaled down (sanitizers), the binds right after a failover,
      // which the marker cannot spare, are too large a share to say.
      if (test_scale_down() == 1) {
        EXPECT_LT(r.namespace_reads, r.placed) << r.quota_table();
      }
    } else {
      // Without a marker every GPU bind reads its namespace's bound pods.
      EXPECT_GE(r.namespace_reads, r.placed) << r.quota_table();
    }
    std::string samples;
    for (const auto& s : r.samples) samples += "\n  " + s;
    EXPECT_EQ(r.over_quota_max, 0u) << r.quota_table() << samples;
    EXPECT_EQ(r.over_quota_at_end, 0u) << r.quota_table() << samples;
    EXPECT_GT(r.quota_samples, o.operations / o.quota_sample_every) << r.quota_table();
    // The quotas did refuse pods (otherwise this proves nothing), in every
    // namespace that asked for more than its quota.
    uint64_t refused = 0;
    for (const auto& [ns, c] : r.namespaces) refused += c.refused_by_filter + c.refused_by_bind;
    EXPECT_GT(refused, o.operations / 100) << r.quota_table();
  }
}

}  // namespace
}  // namespace fracpack::testing::failover_test
