// The target workload (scheduling/workload.h): pod shapes, FGD's typical
// pods, shape counts with their mean node memory, and the workload learned
// online with decayed counts.
#include "scheduling/workload.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::workload_test {
namespace {

using fracpack::testing::gpu_shape;
using fracpack::testing::pod;

TEST(Workload, TypicalPodsFollowTheSimulatorRule) {
  std::vector<PodShape> pods;
  for (int i = 0; i < 50; ++i) pods.push_back(gpu_shape(1000, 500, 1));
  for (int i = 0; i < 30; ++i) pods.push_back(gpu_shape(2000, 1000, 1));
  for (int i = 0; i < 16; ++i) pods.push_back(gpu_shape(4000, 0, 0));
  for (int i = 0; i < 4; ++i) pods.push_back(gpu_shape(8000, 1000, 8));
  Workload w = Workload::typical(pods, 95);
  // 50 + 30 + 16 = 96 >= 95: the 8-GPU shape is cut, shares renormalised over 96.
  ASSERT_EQ(w.entries().size(), 3u);
  EXPECT_EQ(w.entries()[0].shape.cores, 500);
  EXPECT_NEAR(w.entries()[0].share, 50.0 / 96, 1e-12);
  EXPECT_NEAR(w.entries()[2].share, 16.0 / 96, 1e-12);
  // Ties in count go to the larger CPU first.
  std::vector<PodShape> tie = {gpu_shape(1000, 500, 1), gpu_shape(3000, 500, 1)};
  Workload t = Workload::typical(tie, 100);
  EXPECT_EQ(t.entries()[0].shape.cpu_milli, 3000);
}

TEST(Workload, LearnedWorkloadForgetsOldShapesAndKeepsNodeMemory) {
  LearnedWorkload learned(100);
  for (int i = 0; i < 1000; ++i) learned.observe(gpu_shape(1000, 500, 1), 4096);
  for (int i = 0; i < 1000; ++i) learned.observe(gpu_shape(2000, 1000, 1), i % 2 == 0 ? 40960 : 57344);
  ShapeCounts w = learned.snapshot();
  ASSERT_EQ(w.counts().size(), 2u);
  const double recent = w.counts().at(gpu_shape(2000, 1000, 1)) / w.total();
  EXPECT_GT(recent, 0.99);  // the recent shape dominates
  EXPECT_NEAR(w.node_memory_mib(gpu_shape(2000, 1000, 1)), 49152, 100);  // the mean of its pods'
  EXPECT_DOUBLE_EQ(w.node_memory_mib(gpu_shape(1000, 500, 1)), 4096);
}

TEST(Workload, ShapeCountsKeepEachShapesMeanNodeMemory) {
  ShapeCounts counts;
  counts.add(gpu_shape(1000, 500, 1), 3, 4096);
  counts.add(gpu_shape(1000, 500, 1), 1, 8192);  // the same shape: one entry, the mean memory
  counts.add(gpu_shape(2000, 1000, 1), 4);
  EXPECT_EQ(counts.counts().size(), 2u);
  EXPECT_DOUBLE_EQ(counts.node_memory_mib(gpu_shape(1000, 500, 1)), 5120);
  EXPECT_DOUBLE_EQ(counts.node_memory_mib(gpu_shape(2000, 1000, 1)), 0);  // not given
  Workload w = Workload::typical(counts, 100);
  ASSERT_EQ(w.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(w.entries()[0].share + w.entries()[1].share, 1.0);
}

TEST(Workload, AShapeIsTheAppContainersCardsAndLargestShare) {
  PodRequest p = pod("p", 1, 300, 2048, 1500);
  ContainerRequest second = p.containers[0];
  second.cards = 2;
  second.cores = 500;
  second.memory_mib = 1024;
  second.memory_percent = 10;
  p.containers.push_back(second);
  ContainerRequest init = p.containers[0];
  init.init = true;
  init.cards = 4;
  init.cores = 1000;
  p.containers.push_back(init);
  p.allowed_models = {"T4", "A100"};
  const PodShape s = shape_of(p);
  EXPECT_EQ(s.cpu_milli, 1500);
  EXPECT_EQ(s.cards, 3) << "the app containers' cards, not the init container's";
  EXPECT_EQ(s.cores, 500);
  EXPECT_EQ(s.memory_mib, 2048);
  EXPECT_EQ(s.memory_percent, 10);
  EXPECT_EQ(s.models, "T4|A100");
  // HAMi's use-gputype names parts of models: no model list in the shape.
  p.model_match = PodRequest::ModelMatch::kContainsIgnoringCase;
  EXPECT_EQ(shape_of(p).models, "");
}

TEST(Workload, AZeroCpuRequestCountsAs100m) {
  EXPECT_EQ(shape_of(pod("p", 1, 500, 0, 0)).cpu_milli, 100);
  const PodShape cpu_only = shape_of(pod("c", 0, 0, 0, 2000));
  EXPECT_EQ(cpu_only.cpu_milli, 2000);
  EXPECT_EQ(cpu_only.cards, 0);
}

TEST(Workload, SplitModelsKeepsTheNonEmptyParts) {
  EXPECT_EQ(split_models("T4|A100"), (std::vector<std::string>{"T4", "A100"}));
  EXPECT_EQ(split_models("|T4||"), (std::vector<std::string>{"T4"}));
  EXPECT_TRUE(split_models("").empty());
  EXPECT_EQ(split_models(shape_of(pod("p", 1, 1)).models), std::vector<std::string>{});
}

TEST(Workload, NodeMemoryIsMiBRoundedUp) {
  PodRequest p = pod("p", 1, 100);
  p.memory_bytes = 0;
  EXPECT_EQ(node_memory_mib(p), 0);
  p.memory_bytes = 1;
  EXPECT_EQ(node_memory_mib(p), 1);
  p.memory_bytes = int64_t{512} << 20;
  EXPECT_EQ(node_memory_mib(p), 512);
  p.memory_bytes = (int64_t{512} << 20) + 1;
  EXPECT_EQ(node_memory_mib(p), 513);
}

TEST(Workload, APriorCountsAsItsWeightInProportionAndDecays) {
  ShapeCounts prior;
  prior.add(gpu_shape(1000, 500, 1), 3, 4096);
  prior.add(gpu_shape(2000, 1000, 1), 1);
  LearnedWorkload learned(100);
  EXPECT_TRUE(learned.snapshot().empty()) << "nothing before a prior or a pod";
  learned.seed(prior, 40);
  ShapeCounts seeded = learned.snapshot();
  EXPECT_NEAR(seeded.total(), 40, 1e-9);
  EXPECT_NEAR(seeded.counts().at(gpu_shape(1000, 500, 1)), 30, 1e-9);
  EXPECT_NEAR(seeded.node_memory_mib(gpu_shape(1000, 500, 1)), 4096, 1e-9);
  EXPECT_EQ(learned.observations(), 0u);
  // 100 observations later (one half-life), the prior weighs half.
  for (int i = 0; i < 100; ++i) learned.observe(gpu_shape(4000, 0, 0));
  EXPECT_EQ(learned.observations(), 100u);
  EXPECT_NEAR(learned.snapshot().counts().at(gpu_shape(1000, 500, 1)), 15, 1e-6);
  // An empty prior adds nothing.
  LearnedWorkload none;
  none.seed(ShapeCounts{}, 10);
  EXPECT_TRUE(none.snapshot().empty());
}

TEST(Workload, ManyObservationsNeverOverflow) {
  LearnedWorkload learned(1);  // halves every observation: the scale grows fastest
  for (int i = 0; i < 5000; ++i) learned.observe(gpu_shape(1000, i % 2 ? 500 : 1000, 1), 1024);
  const ShapeCounts s = learned.snapshot();
  ASSERT_EQ(s.counts().size(), 2u);
  for (const auto& [shape, count] : s.counts()) EXPECT_TRUE(std::isfinite(count) && count > 0);
  EXPECT_NEAR(s.total(), 2.0, 1e-6) << "the decayed counts sum to 1/(1 - 1/2)";
  EXPECT_NEAR(s.node_memory_mib(gpu_shape(1000, 500, 1)), 1024, 1e-6);
}

}  // namespace
}  // namespace fracpack::scheduling::workload_test
