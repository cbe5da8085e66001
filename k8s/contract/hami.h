// The HAMi contract (../shared/reference/node-side.md §A2): fracpack in place of HAMi's
// scheduler, HAMi's device plugin and in-container limits kept.
//
//   pods    nvidia.com/gpu (shares, each on its own card), nvidia.com/gpumem
//           (MiB, × memoryFactor), nvidia.com/gpumem-percentage (of the card,
//           rounded down), nvidia.com/gpucores (percent, > 100 clipped, 100 =
//           the card alone); neither memory given: defaultMemory, else the
//           whole card. Card filters nvidia.com/use-gputype / nouse-gputype
//           (any part of the model, ignoring case), use-gpuuuid /
//           nouse-gpuuuid, numa-bind.
//   nodes   hami.io/node-nvidia-register: JSON (zero fields omitted) or the
//           older "uuid,count,mem,cores,type,numa,health[,index,mode]:" text;
//           count = the card's sharer limit; health != true: unhealthy; a
//           node whose allocatable nvidia.com/gpu is 0: every card unhealthy
//           (HAMi's CheckHealth).
//   bind    hami.io/vgpu-devices-to-allocate = -allocated (one entry per
//           spec.containers, each followed by ";", device
//           "UUID,NVIDIA,mem,cores:"), vgpu-node, vgpu-time, bind-phase
//           allocating, bind-time: in the Binding, one write.
//   restart hami.io/vgpu-devices-allocated of every bound pod not finished,
//           cards by UUID.
//
// HAMi's device plugin serves only spec.containers: a pod whose init
// container asks for HAMi resources is refused (HAMi's own scheduler skips
// them and its plugin then mis-assigns, HAMi#2640). Cards in MIG or MPS mode
// are registered but take no fracpack placement (their slices are HAMi's).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "k8s/contract/hami_node_lock.h"
#include "k8s/contract/profile_contract.h"

namespace fracpack::k8s {

struct HamiNames {
  // Pod resources.
  std::string gpu = "nvidia.com/gpu";
  std::string gpu_memory = "nvidia.com/gpumem";
  std::string gpu_memory_percent = "nvidia.com/gpumem-percentage";
  std::string gpu_cores = "nvidia.com/gpucores";
  // Pod annotations (card filters).
  std::string use_type = "nvidia.com/use-gputype";
  std::string nouse_type = "nvidia.com/nouse-gputype";
  std::string use_uuid = "nvidia.com/use-gpuuuid";
  std::string nouse_uuid = "nvidia.com/nouse-gpuuuid";
  std::string numa_bind = "nvidia.com/numa-bind";
  std::string vgpu_mode = "nvidia.com/vgpu-mode";
  // Node annotations.
  std::string register_devices = "hami.io/node-nvidia-register";
  std::string cordon = "fracpack.io/gpu-cordon";  // fracpack's operator cordon, on HAMi nodes too
  // The allocation record.
  std::string to_allocate = "hami.io/vgpu-devices-to-allocate";
  std::string allocated = "hami.io/vgpu-devices-allocated";
  std::string vgpu_node = "hami.io/vgpu-node";
  std::string vgpu_time = "hami.io/vgpu-time";
  std::string bind_phase = "hami.io/bind-phase";
  std::string bind_time = "hami.io/bind-time";
  // The node lock (k8s/contract/hami_node_lock.h).
  std::string node_lock = "hami.io/mutex.lock";

  std::vector<std::string> gpu_resources() const { return {gpu, gpu_memory, gpu_memory_percent, gpu_cores}; }
  Selection selection() const;
  bool operator==(const HamiNames&) const = default;
};

// HAMi's scheduler device configuration (its chart's device-config.yaml).
struct HamiOptions {
  int64_t memory_factor = 1;   // nvidia.com/gpumem is in units of this many MiB
  int64_t default_memory = 0;  // MiB per share when a pod names neither memory; 0: the whole card
  int64_t default_cores = 0;   // percent per share when a pod names no cores
  std::chrono::milliseconds node_lock_expire{std::chrono::minutes(5)};  // HAMi's nodeLockExpire
  bool node_lock_taken = true;  // fracpack's binds take the lock (nodeLock)
  bool operator==(const HamiOptions&) const = default;
};

class HamiContract : public ProfileContract<HamiNames, HamiOptions> {
 public:
  explicit HamiContract(HamiNames names = {}, HamiOptions options = {}, ForeignProfiles foreign = {});

  Result<scheduling::PodRequest> pod_request(const Pod& pod) const override;
  Result<scheduling::NodeSpec> node_spec(const Node& node) const override;
  StringMap allocation_annotations(const Pod& pod, const scheduling::Allocation& allocation, const scheduling::NodeSpec& node,
                                   std::chrono::system_clock::time_point now) const override;
  RecordedAllocation recorded_allocation(const Pod& pod, const scheduling::NodeSpec* node) const override;
  // vgpu-devices-allocated and vgpu-node: HAMi's device plugin rewrites
  // to-allocate (consumed per container) and bind-phase, never these.
  std::vector<std::string> record_keys() const override { return {names_.allocated, names_.vgpu_node}; }
  std::string device_resource() const override { return names_.gpu; }  // nvidia.com/gpu
  std::vector<std::string> guarded_annotations() const override {
    return {names_.to_allocate, names_.allocated, names_.vgpu_node, names_.vgpu_time, names_.bind_phase, names_.bind_time,
            std::string(kRecordSignatureAnnotation)};
  }
  std::vector<std::string> placement_annotations() const override {
    // (Not nvidia.com/vgpu-mode: a pod of another mode, MIG or MPS, is not
    // fracpack's to charge as a hami-core share.)
    return {names_.use_type, names_.nouse_type, names_.use_uuid, names_.nouse_uuid, names_.numa_bind};
  }
  // hami.io/mutex.lock (HamiNames::node_lock), expiring after nodeLockExpire.
  const NodeLock* node_lock() const override { return &node_lock_; }
  const HamiNodeLock& hami_node_lock() const { return node_lock_; }
  // HAMi's ResourceQuota keys (HAMi's docs, userguide/NVIDIA-device/
  // using-resourcequota.md; its scheduler's pkg/device/quota.go):
  // limits.nvidia.com/gpumem in the units of nvidia.com/gpumem
  // (memoryFactor MiB), limits.nvidia.com/gpucores in percent of a card,
  // and limits.nvidia.com/gpu for cards.
  std::vector<QuotaKey> quota_keys() const override {
    using scheduling::QuotaResource;
    return {{"limits." + names_.gpu, QuotaResource::kCards, 1},
            {"limits." + names_.gpu_memory, QuotaResource::kMemoryMib, options_.memory_factor},
            {"limits." + names_.gpu_cores, QuotaResource::kCoresPercent, 1}};
  }

 private:
  HamiNodeLock node_lock_;
};

// hami.io/node-nvidia-register, either form. Cards keep the register's
// index when every card has a distinct one, else their position (older
// plugins omit it; HAMi's records name cards by UUID only).
Result<std::vector<scheduling::Card>> parse_hami_register(std::string_view text);
// The JSON form of it as HAMi's device plugin writes it (Go's omitempty:
// a zero index or NUMA node and a false health left out), every card whole
// in hami-core mode: devcore 100, count its max_sharers, type its model.
// parse_hami_register reads the cards back.
std::string format_hami_register(const std::vector<scheduling::Card>& cards);

// One device of a hami.io/vgpu-devices-* entry.
struct HamiDevice {
  std::string uuid;  // MIG suffix "[..]" stripped
  std::string type;
  int64_t memory_mib = 0;
  int cores = 0;  // percent
  bool operator==(const HamiDevice&) const = default;
};
// The annotation's entries in order, empty ones kept (one per
// spec.containers as HAMi's scheduler and fracpack write it).
Result<std::vector<std::vector<HamiDevice>>> parse_hami_devices(std::string_view text);
std::string format_hami_devices(const std::vector<std::vector<HamiDevice>>& containers);

}  // namespace fracpack::k8s
