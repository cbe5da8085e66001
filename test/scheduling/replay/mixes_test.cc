// Workload mixes built the FGD paper's way (scheduling/replay/mixes.h).
#include "scheduling/replay/mixes.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "test/support/testlib.h"

namespace fracpack::replay::mixes_test {
namespace {

OpenbPod pod(const std::string& name, int num_gpu, int milli, int64_t cpu = 4000, std::string spec = "") {
  OpenbPod p;
  p.name = name;
  p.cpu_milli = cpu;
  p.memory_mib = 2048;
  p.num_gpu = num_gpu;
  p.gpu_milli = num_gpu > 0 ? milli : 0;
  p.gpu_spec = std::move(spec);
  p.creation_time = 100;
  p.deletion_time = 200;
  return p;
}

// A small base: whole-card, sharing, multi-card and CPU-only pods.
std::vector<OpenbPod> base() {
  std::vector<OpenbPod> b;
  for (int i = 0; i < 40; ++i) b.push_back(pod("w" + std::to_string(i), 1, 1000));
  for (int i = 0; i < 30; ++i) b.push_back(pod("s" + std::to_string(i), 1, i % 2 ? 500 : 250));
  for (int i = 0; i < 4; ++i) b.push_back(pod("m" + std::to_string(i), i % 2 ? 2 : 8, 1000, 32000));
  for (int i = 0; i < 10; ++i) b.push_back(pod("c" + std::to_string(i), 0, 0, 8000));
  return b;
}

const std::vector<OpenbNode> kNodes = {{"n1", 96000, 393216, 8, "G2"}, {"n2", 104000, 524288, 2, "T4"}};

struct Shares {
  double share = 0, multi = 0, spec = 0, cpu_only_cpu = 0;
  size_t gpu_pods = 0, pods = 0;
};
Shares shares(const std::vector<OpenbPod>& pods) {
  Shares s;
  double total = 0, shared = 0, multi = 0, constrained = 0;
  for (const OpenbPod& p : pods) {
    total += static_cast<double>(p.gpu_request());
    if (p.num_gpu == 1 && p.gpu_milli < 1000 && p.gpu_milli > 0) shared += static_cast<double>(p.gpu_request());
    if (p.num_gpu > 1) multi += static_cast<double>(p.gpu_request());
    if (p.gpu_request() > 0) {
      ++s.gpu_pods;
      constrained += p.gpu_spec.empty() ? 0 : 1;
    } else {
      s.cpu_only_cpu += static_cast<double>(p.cpu_milli);
    }
  }
  s.pods = pods.size();
  s.share = 100 * shared / total;
  s.multi = 100 * multi / total;
  s.spec = 100 * constrained / static_cast<double>(s.gpu_pods);
  return s;
}

Result<std::vector<OpenbPod>> mix(const std::string& steps, uint64_t seed = 1, std::vector<OpenbPod> spec_source = {}) {
  auto parsed = parse_mix(steps);
  if (!parsed) return parsed.error();
  const std::vector<OpenbPod> b = base();
  return build_mix(MixInputs{b, kNodes, spec_source, seed}, *parsed);
}

TEST(Mixes, StepsParseAndBadOnesNameWhatIsAccepted) {
  auto two = parse_mix("gpushare60+gpuspec33");
  ASSERT_TRUE(two.ok()) << two.message();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].name(), "gpushare60");
  EXPECT_EQ((*two)[1].name(), "gpuspec33");
  for (const char* bad : {"", "multigpu", "multigpu100", "gpushare101", "cpu-5", "tetris20", "multigpu40+", "gpuspec1x"}) {
    auto r = parse_mix(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.message().find("mix"), std::string::npos) << r.message();
    }
  }
  EXPECT_NE(parse_mix("multigpu100").message().find("0..99"), std::string::npos);
}

TEST(Mixes, EachRecipeReachesItsShareFromTheBasesOwnPods) {
  const Shares b = shares(base());
  auto multi = mix("multigpu50");
  ASSERT_TRUE(multi.ok()) << multi.message();
  const Shares m = shares(*multi);
  EXPECT_GE(m.multi, 50);
  EXPECT_LT(m.multi, 60) << "stops once reached";
  EXPECT_GT(m.pods, b.pods) << "multi-card pods are added";

  auto share = mix("gpushare80");
  ASSERT_TRUE(share.ok()) << share.message();
  const Shares s = shares(*share);
  EXPECT_GE(s.share, 80);
  EXPECT_EQ(s.pods, b.pods) << "whole-card pods are replaced, the count stays";

  auto cpu = mix("cpu20");
  ASSERT_TRUE(cpu.ok()) << cpu.message();
  const Shares c = shares(*cpu);
  EXPECT_GE(c.cpu_only_cpu, 0.2 * (96000 + 104000));
  EXPECT_EQ(c.gpu_pods, b.gpu_pods) << "the GPU pods stay";

  std::vector<OpenbPod> source = {pod("x", 1, 1000, 4000, "T4"), pod("y", 1, 300, 4000, "G2"), pod("z", 8, 1000, 4000, "G2")};
  auto spec = mix("gpuspec50", 1, source);
  ASSERT_TRUE(spec.ok()) << spec.message();
  const Shares p = shares(*spec);
  EXPECT_GE(p.spec, 50);
  for (const OpenbPod& q : *spec) {
    // A constraint comes from a source pod of the same kind.
    if (q.gpu_spec.empty()) continue;
    const std::string want = q.num_gpu == 1 && q.gpu_milli == 1000 ? "T4" : "G2";
    EXPECT_EQ(q.gpu_spec, want) << q.name;
  }
}

TEST(Mixes, TheSameSeedGivesTheSameListAndTimesAndNamesAreKept) {
  auto a = mix("multigpu40+gpushare60", 7);
  auto b = mix("multigpu40+gpushare60", 7);
  auto c = mix("multigpu40+gpushare60", 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << (a.ok() ? "" : a.message()) << (c.ok() ? "" : c.message());
  EXPECT_EQ(format_openb_pods(*a), format_openb_pods(*b));
  EXPECT_NE(format_openb_pods(*a), format_openb_pods(*c));
  std::set<std::string> names;
  for (const OpenbPod& p : *a) {
    names.insert(p.name);
    EXPECT_EQ(p.creation_time, 100);
    EXPECT_EQ(p.deletion_time, 200);
  }
  EXPECT_EQ(names.size(), a->size()) << "renamed, unique";
  EXPECT_EQ(a->front().name, "openb-pod-0000");
  // The CSV reads back as the same pods.
  auto back = parse_openb_pods(format_openb_pods(*a));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(format_openb_pods(*back), format_openb_pods(*a));
}

TEST(Mixes, AStepWithNothingToDrawFromIsRefused) {
  std::vector<OpenbPod> only_whole = {pod("w", 1, 1000)};
  auto r = build_mix(MixInputs{only_whole, kNodes, {}, 1}, *parse_mix("multigpu30"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no multi-card pod"), std::string::npos) << r.message();
  r = build_mix(MixInputs{only_whole, kNodes, {}, 1}, *parse_mix("gpuspec20"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("spec source"), std::string::npos) << r.message();
}

// On the public default trace, the recipes land where the paper's public
// mixes are (../shared/reference/replay-spec.md §1.2): gpushare40 at 40.1 % shares, multigpu20 at
// 20.4 % multi-card, gpuspec33 at 33.8 % constrained GPU pods.
TEST(Mixes, OnTheDefaultTraceTheRecipesMatchThePapersPublicMixes) {
  auto nodes_text = testing::read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods_text = testing::read_shared("traces/openb/openb_pod_list_default.csv");
  auto spec_text = testing::read_shared("traces/openb/openb_pod_list_gpuspec33.csv");
  ASSERT_TRUE(nodes_text && pods_text && spec_text) << "openb trace not found under " << testing::shared_dir();
  const auto nodes = *parse_openb_nodes(*nodes_text);
  const auto pods = *parse_openb_pods(*pods_text);
  const auto specs = *parse_openb_pods(*spec_text);
  for (const auto& [steps, lo, hi] : std::vector<std::tuple<std::string, double, double>>{
           {"gpushare40", 40, 40.3}, {"multigpu20", 20, 20.6}, {"gpuspec33", 33, 33.1}}) {
    auto built = build_mix(MixInputs{pods, nodes, specs, 1}, *parse_mix(steps));
    ASSERT_TRUE(built.ok()) << steps << ": " << built.message();
    const Shares s = shares(*built);
    const double got = steps == "gpushare40" ? s.share : steps == "multigpu20" ? s.multi : s.spec;
    EXPECT_GE(got, lo) << steps;
    EXPECT_LE(got, hi) << steps;
  }
}

}  // namespace
}  // namespace fracpack::replay::mixes_test
