// node/isolation: what each container's Allocate answer carries to hold it
// to its share — MPS's pipe and limits, HAMi-core's library and limits.
#include "node/isolation.h"

#include <gtest/gtest.h>

namespace fracpack::node::isolation_test {
namespace {

using scheduling::CardIsolation;
using scheduling::CardShare;

GpuDevice card(int index, CardIsolation isolation, int64_t memory_mib = 40960) {
  GpuDevice d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index);
  d.model = "NVIDIA A100-SXM4-40GB";
  d.memory_mib = memory_mib;
  d.isolation = isolation;
  return d;
}

Assignment assignment(std::vector<CardShare> cards, SpecSettings spec = {}) {
  return Assignment{"uid-1", "ml/train", "main", std::move(cards), std::move(spec)};
}

Result<ContainerIsolation> run(const Assignment& a, const std::vector<const GpuDevice*>& cards, const IsolationOptions& o = {}) {
  return isolate(a, cards, k8s::ContainerSettings{a.spec.env, a.spec.env_from, a.spec.mount_paths}, o);
}

TEST(Isolation, AnMpsShareGetsItsMemoryAndComputeLimitsAndTheDaemonsPipe) {
  const GpuDevice c = card(2, CardIsolation::kMps);
  IsolationOptions o;
  o.mode = CardIsolation::kMps;
  o.mps_dir = "/run/fp/mps";
  auto iso = run(assignment({CardShare{2, "GPU-2", 8192, 300}}), {&c}, o);
  ASSERT_TRUE(iso.ok()) << iso.message();
  EXPECT_EQ(iso->isolation, CardIsolation::kMps);
  EXPECT_EQ(iso->env.at("CUDA_MPS_PIPE_DIRECTORY"), "/run/fp/mps/pipe");
  EXPECT_EQ(iso->env.at("CUDA_VISIBLE_DEVICES"), "GPU-2");
  EXPECT_EQ(iso->env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=8192M") << "by ordinal among the visible devices";
  EXPECT_EQ(iso->env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
  EXPECT_EQ(iso->mounts, (std::vector<Mount>{{"/run/fp/mps/pipe", "/run/fp/mps/pipe", false}, {"/dev/shm", "/run/fp/mps/shm", false}}));
}

TEST(Isolation, AWholeMpsCardIsAClientWithoutLimits) {
  const GpuDevice a = card(0, CardIsolation::kMps), b = card(1, CardIsolation::kMps);
  auto iso = run(assignment({CardShare{0, "GPU-0", 40960, 1000}, CardShare{1, "GPU-1", 0, 0}}), {&a, &b});
  ASSERT_TRUE(iso.ok()) << iso.message();
  EXPECT_EQ(iso->env.at("CUDA_VISIBLE_DEVICES"), "GPU-0,GPU-1");
  EXPECT_FALSE(iso->env.contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
  EXPECT_FALSE(iso->env.contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  EXPECT_TRUE(iso->env.contains("CUDA_MPS_PIPE_DIRECTORY")) << "in EXCLUSIVE_PROCESS mode only MPS clients reach the card";
}

TEST(Isolation, MpsComputeIsTheSmallestShareInWholePercentsAtLeastOne) {
  const GpuDevice a = card(0, CardIsolation::kMps), b = card(1, CardIsolation::kMps);
  auto iso = run(assignment({CardShare{0, "GPU-0", 1024, 500}, CardShare{1, "GPU-1", 2048, 250}}), {&a, &b});
  ASSERT_TRUE(iso.ok()) << iso.message();
  EXPECT_EQ(iso->env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=1024M,1=2048M");
  EXPECT_EQ(iso->env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25") << "one value for the client: its smallest share";
  auto tiny = run(assignment({CardShare{0, "GPU-0", 1024, 5}}), {&a});
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "1");
}

TEST(Isolation, AHamiCoreShareGetsTheLibraryPreloadedAndItsLimits) {
  const GpuDevice c = card(1, CardIsolation::kHamiCore);
  IsolationOptions o;
  o.mode = CardIsolation::kHamiCore;
  o.hami_core_library = "/opt/hami/libvgpu.so";
  o.hami_core_dir = "/var/lib/fp/hami";
  auto iso = run(assignment({CardShare{1, "GPU-1", 8192, 300}}), {&c}, o);
  ASSERT_TRUE(iso.ok()) << iso.message();
  EXPECT_EQ(iso->isolation, CardIsolation::kHamiCore);
  EXPECT_EQ(iso->env.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "8192m");
  EXPECT_EQ(iso->env.at("CUDA_DEVICE_SM_LIMIT"), "30");
  EXPECT_EQ(iso->env.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"), "/usr/local/vgpu/uid-1_main.cache");
  const std::vector<Mount> want{{"/usr/local/vgpu", "/var/lib/fp/hami/containers/uid-1_main", false},
                                {"/usr/local/vgpu/libvgpu.so", "/opt/hami/libvgpu.so", true},
                                {"/tmp/vgpulock", "/var/lib/fp/hami/vgpulock", false},
                                {"/etc/ld.so.preload", "/var/lib/fp/hami/ld.so.preload", true}};
  EXPECT_EQ(iso->mounts, want);
  EXPECT_EQ(iso->host_dirs, (std::vector<std::string>{"/var/lib/fp/hami/containers/uid-1_main", "/var/lib/fp/hami/vgpulock"}));
  EXPECT_EQ(hami_core_preload_text(), "/usr/local/vgpu/libvgpu.so\n") << "the library's path inside the container";
}

TEST(Isolation, CardsWithoutALimiterOrMigInstancesCarryNothing) {
  for (CardIsolation i : {CardIsolation::kNone, CardIsolation::kMig}) {
    const GpuDevice c = card(0, i);
    auto iso = run(assignment({CardShare{0, "GPU-0", 1024, 100}}), {&c});
    ASSERT_TRUE(iso.ok()) << iso.message();
    EXPECT_EQ(iso->isolation, i);
    EXPECT_TRUE(iso->env.empty());
    EXPECT_TRUE(iso->mounts.empty());
  }
}

TEST(Isolation, AContainerThatLiftsItsOwnLimitIsRefusedByName) {
  const GpuDevice c = card(0, CardIsolation::kMps);
  auto iso = run(assignment({CardShare{0, "GPU-0", 1024, 100}}, SpecSettings{{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}, {}, {}}), {&c});
  ASSERT_FALSE(iso.ok());
  EXPECT_NE(iso.message().find("pod ml/train container main lifts its own limit: env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), std::string::npos)
      << iso.message();
  // The same variable on a card without a limiter: nothing to lift.
  const GpuDevice plain = card(0, CardIsolation::kNone);
  EXPECT_TRUE(run(assignment({CardShare{0, "GPU-0", 1024, 100}}, SpecSettings{{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}, {}, {}}), {&plain}).ok());
}

TEST(Isolation, CardsOfTwoLimitersInOneContainerAreRefused) {
  const GpuDevice a = card(0, CardIsolation::kMps), b = card(100, CardIsolation::kMig);
  auto iso = run(assignment({CardShare{0, "GPU-0", 1024, 100}, CardShare{100, "GPU-100", 1024, 100}}), {&a, &b});
  ASSERT_FALSE(iso.ok());
  EXPECT_NE(iso.message().find("two ways (mps and mig)"), std::string::npos) << iso.message();
}

}  // namespace
}  // namespace fracpack::node::isolation_test
