// How the node agent holds each container to its share of a card (README
// "Isolation: a share is a limit"; ../shared/reference/isolation.md):
//
//   mps        NVIDIA's Multi-Process Service. `fracpack mps-control-daemon`
//              (node/mps_daemon.h, a privileged process of its own) puts the
//              node's cards in EXCLUSIVE_PROCESS compute mode and runs one
//              control daemon for all of them; each container on them is an
//              MPS client: its answer mounts the daemon's pipe directory and
//              shared memory and sets its limits, CUDA_MPS_PINNED_DEVICE_MEM_
//              LIMIT (per visible card, the record's MiB) and
//              CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (the record's compute). A
//              whole card is a client too, without limits: in
//              EXCLUSIVE_PROCESS mode a process outside MPS finds the card
//              busy whenever the MPS server holds it.
//   hami-core  HAMi-core's CUDA interception library (as HAMi's device plugin
//              serves it): the answer mounts the library, a cache folder of
//              the container's own, HAMi-core's lock folder and an
//              /etc/ld.so.preload naming the library, and sets its limits
//              (CUDA_DEVICE_MEMORY_LIMIT_<i>, CUDA_DEVICE_SM_LIMIT).
//   none       nothing: the answer names the cards and the share
//              (FRACPACK_GPU_*) for a limiter of the container's own.
//
// A MIG instance is its own isolation (mig) whatever the mode: the hardware
// holds a container to the instance.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "k8s/limiter_guard.h"
#include "node/allocation_matcher.h"
#include "node/nvml.h"
#include "common/result.h"

namespace fracpack::node {

struct IsolationOptions {
  scheduling::CardIsolation mode = scheduling::CardIsolation::kNone;  // --isolation: none, mps, hami-core
  std::string mps_dir = "/run/fracpack/mps";                          // --mps-dir: the daemon's folder (the host's path)
  std::string hami_core_library = "/usr/local/vgpu/libvgpu.so";       // --hami-core-library (the host's path)
  std::string hami_core_dir = "/var/lib/fracpack/hami-core";          // the per-container caches (the host's path)

  std::string mps_pipe_dir() const { return mps_dir + "/pipe"; }
  std::string mps_shm_dir() const { return mps_dir + "/shm"; }
  std::string mps_status_file() const { return mps_dir + "/status"; }
  k8s::LimiterPaths limiter_paths() const { return {mps_pipe_dir()}; }
};

// A host path mounted into the container.
struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// What a container's Allocate answer carries for its cards' isolation.
struct ContainerIsolation {
  scheduling::CardIsolation isolation = scheduling::CardIsolation::kNone;
  std::map<std::string, std::string> env;
  std::vector<Mount> mounts;
  std::vector<std::string> host_dirs;  // made (0777) before kubelet gets the answer: HAMi-core's cache folder
};

// The isolation the answer for `a` carries; `cards` are the devices the
// record names, in its order (the caller found them). Refused, naming the
// container: cards of two isolations at once (MPS and a MIG instance: one
// container has one MPS pipe), and a container that sets the limiter's
// variables itself or mounts over its paths (k8s/limiter_guard.h) —
// `settings` is what its pod spec says.
Result<ContainerIsolation> isolate(const Assignment& a, const std::vector<const GpuDevice*>& cards, const k8s::ContainerSettings& settings,
                                   const IsolationOptions& options);

// The MiB a record's share gives on `card`: a whole card (or a record
// without memory) gets the card's memory. The one rule for the answer's
// FRACPACK_GPU_MEMORY_MIB and the limiters' memory limits.
int64_t share_memory_mib(const scheduling::CardShare& share, const GpuDevice& card);

// HAMi-core's /etc/ld.so.preload, as mounted into containers: the
// library's path inside them.
std::string hami_core_preload_text();
// The host file holding it (the agent writes it at start).
std::string hami_core_preload_file(const IsolationOptions& options);

}  // namespace fracpack::node
