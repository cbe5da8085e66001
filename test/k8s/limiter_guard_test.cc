// k8s/limiter_guard: what a GPU container may not set itself, because the
// node's limiter reads it (README "Isolation: a share is a limit").
#include "k8s/limiter_guard.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::limiter_guard_test {
namespace {

using scheduling::CardIsolation;

struct Spec {
  std::vector<std::string> env, env_from, mounts;
  ContainerSettings settings() const { return {env, env_from, mounts}; }
};

std::string why(const Spec& s, CardIsolation limiter) { return limiter_override(s.settings(), limiter); }

TEST(LimiterGuard, AnOrdinaryContainerSetsNothingALimiterReads) {
  const Spec s{{"PATH", "CUDA_VISIBLE_DEVICES_X", "MODEL"}, {"", "APP_"}, {"/data", "/dev/shm-not", "/usr/local/vgpu2"}};
  for (CardIsolation i : {CardIsolation::kNone, CardIsolation::kMps, CardIsolation::kHamiCore, CardIsolation::kMig}) {
    EXPECT_EQ(why(s, i), "") << scheduling::isolation_name(i);
  }
}

TEST(LimiterGuard, MpsLimitsAndPipeAreTheAgentsToSet) {
  EXPECT_NE(why({{"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"}, {}, {}}, CardIsolation::kMps).find("env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
            std::string::npos);
  EXPECT_NE(why({{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {}, {}}, CardIsolation::kMps), "");
  EXPECT_NE(why({{"CUDA_MPS_PIPE_DIRECTORY"}, {}, {}}, CardIsolation::kMps), "");
  EXPECT_NE(why({{}, {"CUDA_MPS_"}, {}}, CardIsolation::kMps).find("envFrom with prefix CUDA_MPS_"), std::string::npos);
  EXPECT_NE(why({{}, {"CUDA_"}, {}}, CardIsolation::kMps), "") << "a prefix that can be completed into CUDA_MPS_";
  EXPECT_NE(why({{}, {}, {"/run/fracpack/mps/pipe"}}, CardIsolation::kMps).find("pipe directory"), std::string::npos);
  EXPECT_NE(why({{}, {}, {"/run/fracpack/mps/pipe/"}}, CardIsolation::kMps), "") << "a trailing slash is the same path";
  EXPECT_NE(why({{}, {}, {"/run/fracpack/mps/pipe/control"}}, CardIsolation::kMps), "") << "inside it";
  EXPECT_NE(why({{}, {}, {"/dev/shm"}}, CardIsolation::kMps).find("shared memory"), std::string::npos);
  // HAMi-core's variables mean nothing to MPS.
  EXPECT_EQ(why({{"CUDA_DEVICE_MEMORY_LIMIT_0", "LD_PRELOAD"}, {}, {"/usr/local/vgpu"}}, CardIsolation::kMps), "");
}

TEST(LimiterGuard, HamiCoresLimitsAndLibraryAreTheAgentsToSet) {
  for (const char* name : {"CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_SM_LIMIT", "CUDA_DISABLE_CONTROL", "CUDA_OVERSUBSCRIBE",
                           "GPU_CORE_UTILIZATION_POLICY", "LD_PRELOAD", "LD_AUDIT"}) {
    EXPECT_NE(why({{name}, {}, {}}, CardIsolation::kHamiCore).find(std::string("env ") + name), std::string::npos) << name;
  }
  for (const char* path : {"/usr/local/vgpu", "/usr/local/vgpu/libvgpu.so", "/etc/ld.so.preload", "/tmp/vgpulock"}) {
    EXPECT_NE(why({{}, {}, {path}}, CardIsolation::kHamiCore).find("volumeMounts " + std::string(path)), std::string::npos) << path;
  }
  EXPECT_NE(why({{}, {"LD_"}, {}}, CardIsolation::kHamiCore), "");
  // /dev/shm is MPS's only.
  EXPECT_EQ(why({{}, {}, {"/dev/shm"}}, CardIsolation::kHamiCore), "");
}

TEST(LimiterGuard, TheWebhookChecksEveryLimiterButMpsSharedMemory) {
  // kNone: the node is not known yet.
  EXPECT_NE(why({{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {}, {}}, CardIsolation::kNone), "");
  EXPECT_NE(why({{"LD_PRELOAD"}, {}, {}}, CardIsolation::kNone), "");
  EXPECT_EQ(why({{}, {}, {"/dev/shm"}}, CardIsolation::kNone), "") << "a pod's own /dev/shm is common; only an MPS card's agent refuses it";
  // A MIG instance: the hardware holds the limit.
  EXPECT_EQ(why({{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "LD_PRELOAD"}, {}, {"/dev/shm"}}, CardIsolation::kMig), "");
}

}  // namespace
}  // namespace fracpack::k8s::limiter_guard_test
