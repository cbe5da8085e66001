// What a GPU container may not set itself (README "Isolation: a share is a
// limit"): the environment variables and paths by which the node's limiter
// holds it to its share. MPS reads its limits from the client's
// environment (CUDA_MPS_*) and finds its daemon through a pipe directory;
// HAMi-core is loaded through /etc/ld.so.preload and reads its limits from
// CUDA_DEVICE_* — a container that sets those itself, preloads a library
// of its own before HAMi-core's, or mounts over those paths, lifts its own
// limit. One rule, used by the admission webhook (k8s/admission.cc: every
// limiter, since the node is not known yet) and by the node agent at
// Allocate (node/isolation.cc: its cards' limiter).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scheduling/model.h"

namespace fracpack::k8s {

// Where the limiters appear inside a container.
struct LimiterPaths {
  std::string mps_pipe_dir = "/run/fracpack/mps/pipe";  // the MPS daemon's pipe directory (the host's path, mounted as is)
};
inline constexpr std::string_view kMpsShmPath = "/dev/shm";              // MPS's shared memory, the daemon's
inline constexpr std::string_view kHamiCoreDir = "/usr/local/vgpu";      // HAMi-core's library and cache
inline constexpr std::string_view kHamiCoreLibrary = "/usr/local/vgpu/libvgpu.so";
inline constexpr std::string_view kLdSoPreload = "/etc/ld.so.preload";   // loads HAMi-core into every process
inline constexpr std::string_view kHamiCoreLockDir = "/tmp/vgpulock";    // HAMi-core's lock between processes

// What a container sets itself, as the pod spec says.
struct ContainerSettings {
  const std::vector<std::string>& env;          // env[].name
  const std::vector<std::string>& env_from;     // envFrom[].prefix ("" none)
  const std::vector<std::string>& mount_paths;  // volumeMounts[].mountPath
};

// What a GPU container may not set, as a field and why ("env
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: MPS's memory limit is the agent's to
// set"); "" when nothing. Two parts:
//   - always (any GPU container, any limiter): NVIDIA_VISIBLE_DEVICES, with
//     which the NVIDIA runtime would give it cards its record does not name
//     (the pod spec's value wins over the device plugin's: real tier A2);
//   - for a share (`share`: less than a whole card somewhere), the
//     variables and paths of `limiter`: mps, hami-core; none and mig have
//     nothing a container could lift.
// The webhook passes the cluster's limiter (nodeAgent.isolation) and asks
// for the share part on containers asking share resources; the node agent
// passes its cards' limiter and the record's shares.
std::string limiter_override(const ContainerSettings& c, scheduling::CardIsolation limiter, bool share, const LimiterPaths& paths = {});

// A mount path as the container runtime will use it (Go's filepath.Clean:
// "//", "." and ".." resolved lexically), for comparing with guarded paths.
std::string clean_mount_path(std::string_view path);

}  // namespace fracpack::k8s
