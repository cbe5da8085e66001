// Pods placed one at a time in a given order (scheduling/replay/sequence.h):
// what is recorded after every arrival, the bucketed curves, and Python's
// rounding.
#include "scheduling/replay/sequence.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test/support/testlib.h"

namespace fracpack::replay::sequence_test {
namespace {

using fracpack::testing::gpu_shape;
using fracpack::testing::node;
using fracpack::testing::pod;

TEST(Replay, BucketingFollowsTheMergeScripts) {
  // Two arrivals in bucket 0, none in 1 (falls back to 0..2), one in 2.
  std::vector<ArrivalMetrics> ev = {{0, 0, 100.0, 10.0}, {31, 31, 200.0, 20.0}, {124240, 124240, 300.0, 30.0}};
  Curves c = bucket(ev, 6212);
  EXPECT_DOUBLE_EQ(c.alloc[0], round2((0.0 + round2(31.0 / 6212 / 10)) / 2));
  EXPECT_DOUBLE_EQ(c.frag_ratio[0], 15.0);
  EXPECT_DOUBLE_EQ(c.frag_ratio[1], 20.0);  // the fallback bucket 0..2 holds all three
  EXPECT_DOUBLE_EQ(c.frag_ratio[2], 30.0);
  EXPECT_DOUBLE_EQ(c.alloc[2], 2.0);
  EXPECT_TRUE(std::isnan(c.alloc[4]));
  EXPECT_DOUBLE_EQ(round2(2.675), 2.67);  // binary 2.67499999... as Python rounds it
  EXPECT_DOUBLE_EQ(round2(0.125), 0.12);  // exact half: to even
}

TEST(Sequence, GpuDemandIsCardsTimesComputeOfTheAppContainers) {
  EXPECT_EQ(gpu_demand(pod("p", 2, 300)), 600);
  EXPECT_EQ(gpu_demand(pod("c", 0, 0)), 0);
  scheduling::PodRequest with_init = pod("i", 1, 500);
  scheduling::ContainerRequest init = with_init.containers[0];
  init.init = true;
  init.cards = 4;
  with_init.containers.push_back(init);
  EXPECT_EQ(gpu_demand(with_init), 500) << "init containers are not counted";
}

TEST(Sequence, PlacesInOrderAndRecordsEveryArrival) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("a", 1));
  ledger.upsert_node(node("b", 1));
  auto policy = scheduling::make_policy("bestfit", scheduling::PolicyOptions{}).value();
  const scheduling::Workload metric({{gpu_shape(1000, 1000, 1), 1.0}});
  SequenceOptions o;
  o.record_placements = true;
  o.record_events = true;
  o.explain_failures = true;
  const std::vector<scheduling::PodRequest> pods = {pod("p1", 1, 600), pod("p2", 1, 400), pod("p3", 1, 1000),
                                                    pod("p4", 1, 500)};
  const SequenceResult r = place_in_order(ledger, {"b", "a"}, *policy, pods, metric, o, 250);
  EXPECT_EQ(r.arrivals, 4u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.capacity_milli, 2000);
  EXPECT_EQ(r.used_gpu_milli, 2000);
  ASSERT_EQ(r.placements.size(), 4u);
  EXPECT_EQ(r.placements[0].pod, "default/p1");
  EXPECT_EQ(r.placements[0].node, "b") << "ties go to the first node of the order";
  EXPECT_EQ(r.placements[0].cards, std::vector<int>{0});
  EXPECT_EQ(r.placements[1].node, "b") << "best fit fills b";
  EXPECT_EQ(r.placements[2].node, "a");
  EXPECT_EQ(r.placements[3].node, "") << "nothing is left";
  EXPECT_EQ(r.placements[3].reason, "0/2 nodes are available: 2 insufficient GPU");
  ASSERT_EQ(r.events.size(), 4u);
  // Demand counts every arrival, failed ones too, after what was there before.
  EXPECT_EQ(r.events[0].arrived_gpu_milli, 250 + 600);
  EXPECT_EQ(r.events[3].arrived_gpu_milli, 250 + 2500);
  EXPECT_EQ(r.events[0].used_gpu_milli, 600);
  EXPECT_EQ(r.events[3].used_gpu_milli, 2000);
  // After p1, b's 400 free milli cannot take a whole-card pod: fragmented.
  EXPECT_DOUBLE_EQ(r.events[0].frag_milli, 400);
  EXPECT_DOUBLE_EQ(r.events[1].frag_milli, 0);
  EXPECT_DOUBLE_EQ(r.final_frag_milli, 0);
  EXPECT_TRUE(ledger.check_invariants().ok());
  EXPECT_NE(ledger.pod("uid-p3"), nullptr) << "placements are committed";
}

TEST(Sequence, NothingRecordedUnlessAsked) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("a", 1));
  auto policy = scheduling::make_policy("bestfit", scheduling::PolicyOptions{}).value();
  const scheduling::Workload metric({{gpu_shape(1000, 1000, 1), 1.0}});
  const SequenceResult r = place_in_order(ledger, {"a"}, *policy, {pod("p", 1, 500), pod("q", 1, 600)}, metric, {});
  EXPECT_EQ(r.arrivals, 2u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_TRUE(r.placements.empty());
  EXPECT_TRUE(r.events.empty());
}

}  // namespace
}  // namespace fracpack::replay::sequence_test
