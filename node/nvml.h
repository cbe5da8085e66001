// NVML, loaded at run time with dlopen (../shared/reference/node-side.md §B3): the node agent
// needs a dozen functions and no NVIDIA header package exists, so the few
// types and prototypes are declared in nvml.cc, as go-nvml binds them:
// versioned symbols (nvmlInit_v2, ..._v2) with a fallback to the plain
// name, optional ones (MIG, NUMA, events) looked up and skipped when absent.
//
// Discovery reads every card (index, UUID, model, memory, NUMA node, minor
// number) and, on a card with MIG mode on, its MIG instances instead of the
// card. A card NVML cannot read is reported unhealthy with the error, never
// dropped: the extender then places nothing on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduling/model.h"

namespace fracpack::node {

struct GpuDevice {
  int index = 0;           // NVML's enumeration index; a MIG instance: 100 * parent + slot
  std::string uuid;        // GPU-... or MIG-...
  std::string model;       // nvmlDeviceGetName
  int64_t memory_mib = 0;  // total memory
  int numa = 0;            // NUMA node (0 when the machine reports none)
  int minor = -1;          // /dev/nvidia<minor>; -1 when NVML does not say
  std::string parent_uuid; // a MIG instance's card
  bool healthy = true;
  std::string problem;     // why not healthy
  // What holds a container to its share here (node/isolation.h): the
  // agent's mode, or mig for a MIG instance. isolation_problem: the
  // limiter cannot serve now (the MPS daemon down): the card takes nothing
  // new meanwhile.
  scheduling::CardIsolation isolation = scheduling::CardIsolation::kNone;
  std::string isolation_problem;

  // Healthy, and its limiter ready: what kubelet and the extender are told.
  bool usable() const { return healthy && isolation_problem.empty(); }
  std::string why_unusable() const { return !healthy ? problem : isolation_problem; }
};

struct Discovery {
  std::string driver_version;
  std::vector<GpuDevice> devices;
};

// A health event: NVML reported an error on a device (Xid, ECC) or a device
// stopped answering.
struct HealthEvent {
  std::string uuid;
  std::string problem;
};

class Nvml {
 public:
  // Opens `library` ("libnvidia-ml.so.1", or a path) and calls nvmlInit.
  // `sysfs` is where PCI devices' numa_node files are read when NVML itself
  // has no NUMA call ("/sys").
  static Result<std::unique_ptr<Nvml>> open(const std::string& library, std::string sysfs = "/sys");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  Result<Discovery> discover();
  // Waits up to `timeout` for NVML's critical error events on the devices
  // of the last discover(); returns those seen (none on timeout). Devices
  // that stop answering are reported too. Xids that applications cause
  // (13, 31, 43, 45, 68, 109, as NVIDIA's device plugin skips) are ignored.
  std::vector<HealthEvent> wait_health(std::chrono::milliseconds timeout);

  // A card's compute mode (NVML's: 0 DEFAULT, 2 PROHIBITED, 3
  // EXCLUSIVE_PROCESS), read and set by UUID; setting it needs root.
  static constexpr int kComputeDefault = 0;
  static constexpr int kComputeExclusiveProcess = 3;
  Result<int> compute_mode(const std::string& uuid);
  Status set_compute_mode(const std::string& uuid, int mode);

  struct Api;

 private:
  Nvml() = default;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  std::string sysfs_;
  void* event_set_ = nullptr;
  std::vector<std::pair<void*, std::string>> watched_;  // device handle, UUID
};

}  // namespace fracpack::node
