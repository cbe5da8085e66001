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

std::string why(const Spec& s, CardIsolation limiter, bool share = true) { return limiter_override(s.settings(), limiter, share); }

TEST(LimiterGuard, AnOrdinaryContainerSetsNothingALimiterReads) {
  const Spec s{{"PATH", "NVIDIA_DRIVER_CAPABILITIES", "MODEL"}, {"", "APP_"}, {"/data", "/dev/shm-not", "/usr/local/vgpu2"}};
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

// Found in review: the NVIDIA runtime gives a container the cards
// NVIDIA_VISIBLE_DEVICES names, and the pod spec's value wins over the
// device plugin's (real tier A2): refused for every GPU container, whole
// cards and any limiter included.
TEST(LimiterGuard, NoGpuContainerNamesItsOwnCards) {
  for (CardIsolation i : {CardIsolation::kNone, CardIsolation::kMps, CardIsolation::kHamiCore, CardIsolation::kMig}) {
    for (bool share : {false, true}) {
      EXPECT_NE(why({{"NVIDIA_VISIBLE_DEVICES"}, {}, {}}, i, share).find("env NVIDIA_VISIBLE_DEVICES"), std::string::npos)
          << scheduling::isolation_name(i) << " share " << share;
    }
  }
  // On MPS a share's limits name its cards by their order in CUDA_VISIBLE_DEVICES.
  EXPECT_NE(why({{"CUDA_VISIBLE_DEVICES"}, {}, {}}, CardIsolation::kMps), "");
  EXPECT_EQ(why({{"CUDA_VISIBLE_DEVICES"}, {}, {}}, CardIsolation::kNone), "");
}

// A whole card has no limit to lift; a limiter's variables mean nothing
// where another (or none) runs. (Found in review: the webhook refused
// LD_PRELOAD on every GPU pod, whatever the cluster ran.)
TEST(LimiterGuard, OnlyAShareOnACardWithThatLimiterIsHeldToIt) {
  EXPECT_EQ(why({{"LD_PRELOAD", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {}, {"/dev/shm"}}, CardIsolation::kMps, /*share=*/false), "");
  EXPECT_EQ(why({{"LD_PRELOAD"}, {}, {"/etc/ld.so.preload"}}, CardIsolation::kHamiCore, /*share=*/false), "");
  EXPECT_EQ(why({{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "LD_PRELOAD"}, {}, {"/dev/shm"}}, CardIsolation::kNone), "");
  EXPECT_EQ(why({{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "LD_PRELOAD"}, {}, {"/dev/shm"}}, CardIsolation::kMig), "");
}

// Found in review: runc and containerd clean a mount path (Go's
// filepath.Clean) before mounting; the guard compares cleaned paths.
TEST(LimiterGuard, AMountPathIsComparedAsTheRuntimeCleansIt) {
  for (const char* path : {"/etc/./ld.so.preload", "//etc/ld.so.preload", "/etc/../etc/ld.so.preload", "/etc//ld.so.preload/", "/usr/local/./vgpu/x"}) {
    EXPECT_NE(why({{}, {}, {path}}, CardIsolation::kHamiCore), "") << path;
  }
  for (const char* path : {"/run//fracpack/mps/pipe", "/run/fracpack/mps/./pipe", "/dev/../dev/shm"}) {
    EXPECT_NE(why({{}, {}, {path}}, CardIsolation::kMps), "") << path;
  }
  EXPECT_EQ(clean_mount_path("/a/b/../c/./d//"), "/a/c/d");
  EXPECT_EQ(clean_mount_path("/../.."), "/");
  EXPECT_EQ(clean_mount_path("relative/x"), "/relative/x");
}

}  // namespace
}  // namespace fracpack::k8s::limiter_guard_test
