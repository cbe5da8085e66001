#include "scheduling/fragmentation.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::fragmentation_test {
namespace {

using fracpack::testing::gpu_shape;

std::vector<CardFree> cards(FragmentationModel& m, std::initializer_list<int> free, const std::string& model = "1080") {
  std::vector<CardFree> out;
  for (int f : free) out.push_back(CardFree{f, 0, 16384, m.model_id(model)});
  return out;
}

// ../shared/reference/replay-spec.md §6.2 unit vector (frag_test.go): C = 1000, g = [200, 1000, 1000, 500],
// one typical pod (c = 6000, u = 465, k = 1, p = 0.0933): class Q4, F = 0.0933 * 2700.
TEST(Fragmentation, SimulatorUnitVector) {
  FragmentationModel m(Workload({{gpu_shape(6000, 465, 1), 0.0933}}));
  auto c = cards(m, {200, 1000, 1000, 500});
  EXPECT_NEAR(m.frag(1000, c), 251.91, 1e-9);
  const auto cat = m.categories(1000, c);
  EXPECT_NEAR(cat[3], 251.91, 1e-9);  // q4_lack_cpu
}

// GetGpuFragMilli on g = [200, 1000, 1000, 500]: 700 for u = 1000, 0 for u = 200.
TEST(Fragmentation, SatisfiedShapeCountsOnlyTooSmallCards) {
  FragmentationModel whole(Workload({{gpu_shape(1000, 1000, 1), 1.0}}));
  auto c1 = cards(whole, {200, 1000, 1000, 500});
  EXPECT_DOUBLE_EQ(whole.frag(64000, c1), 700);
  FragmentationModel small(Workload({{gpu_shape(1000, 200, 1), 1.0}}));
  auto c2 = cards(small, {200, 1000, 1000, 500});
  EXPECT_DOUBLE_EQ(small.frag(64000, c2), 0);
}

TEST(Fragmentation, UnfitShapesCountAllIdleCompute) {
  // CPU-only shapes: all idle GPU is fragment for them.
  FragmentationModel cpu(Workload({{gpu_shape(4000, 0, 0), 1.0}}));
  auto c = cards(cpu, {200, 1000});
  EXPECT_DOUBLE_EQ(cpu.frag(64000, c), 1200);
  // Needs 2 free cards, node has 1: lack GPU.
  FragmentationModel two(Workload({{gpu_shape(1000, 1000, 2), 1.0}}));
  auto c2 = cards(two, {200, 1000});
  EXPECT_DOUBLE_EQ(two.frag(64000, c2), 1200);
  // Wrong model: no access.
  FragmentationModel v100(Workload({{gpu_shape(1000, 100, 1, "V100M16"), 1.0}}));
  auto c3 = cards(v100, {200, 1000});
  EXPECT_DOUBLE_EQ(v100.frag(64000, c3), 1200);
  const auto cat = v100.categories(64000, c3);
  EXPECT_DOUBLE_EQ(cat[6], 1200);  // no_access
  // A full node has no fragment.
  auto none = cards(two, {0, 0});
  EXPECT_DOUBLE_EQ(two.frag(64000, none), 0);
}

TEST(Fragmentation, MemoryMakesCardsUnusable) {
  PodShape s = gpu_shape(1000, 100, 1);
  s.memory_mib = 8192;
  FragmentationModel m(Workload({{s, 1.0}}));
  std::vector<CardFree> c = {CardFree{500, 4096, 16384, m.model_id("A")}, CardFree{500, 12000, 16384, m.model_id("A")}};
  EXPECT_DOUBLE_EQ(m.frag(64000, c), 500);  // the first card's compute is stranded by its memory
}

TEST(Fragmentation, MemoisedAnswersEqualFreshOnes) {
  Workload w({{gpu_shape(3000, 500, 1), 0.5}, {gpu_shape(12000, 1000, 1), 0.3}, {gpu_shape(2000, 0, 0), 0.2}});
  FragmentationModel memo(w);
  for (int cpu : {1000, 2500, 5000, 11999, 12000, 20000, 600000}) {
    for (int a : {0, 300, 500, 1000}) {
      for (int b : {100, 600, 1000}) {
        FragmentationModel fresh(w);
        auto c1 = cards(memo, {a, b});
        auto c2 = cards(fresh, {b, a});  // order does not matter
        const double first = memo.frag(cpu, c1);
        EXPECT_DOUBLE_EQ(first, memo.frag(cpu, c1));
        EXPECT_DOUBLE_EQ(first, fresh.frag(cpu, c2));
      }
    }
  }
}

}  // namespace
}  // namespace fracpack::scheduling::fragmentation_test
