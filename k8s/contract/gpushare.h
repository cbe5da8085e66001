// The Aliyun gpushare contract (../shared/reference/node-side.md §A1): fracpack in place of
// gpushare-scheduler-extender, gpushare-device-plugin kept.
//
//   pods    aliyun.com/gpu-mem in the unit of the device plugin's
//           --memory-unit (GiB by default, or MiB), summed over
//           spec.containers, all on one card.
//   nodes   status.capacity aliyun.com/gpu-mem / aliyun.com/gpu-count (the
//           extender's integer division: equal cards), allocatable when a
//           node shows no capacity.
//   bind    ALIYUN_COM_GPU_MEM_IDX (card), _DEV (the card's memory), _POD
//           (the pod's total), _ASSIGNED "false", _ASSUME_TIME (Unix ns): in
//           the Binding, one write.
//   restart IDX and POD of every bound pod not finished.
//   health  the ConfigMap unhealthy-gpu-<node> in kube-system (the name of
//           gpushare's later revisions; unhealthy-<node>, the earlier one,
//           too), data[gpus] = card indices, "0,2": those cards take no
//           placement. An entry that names no card is reported, not read
//           as card 0 (gpushare's strconv.Atoi error gives 0).
//
// What gpushare itself gets wrong, refused here with a clear message: its
// device plugin finds the pod at Allocate by comparing the pod's *total*
// gpu-mem with one container's request, so a pod with two containers
// asking for gpu-mem (or an init container asking) is mis-assigned or
// never started; fracpack refuses such a pod rather than bind it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "k8s/contract/profile_contract.h"

namespace fracpack::k8s {

struct GpushareNames {
  std::string gpu_memory = "aliyun.com/gpu-mem";    // pod resource and node capacity
  std::string gpu_count = "aliyun.com/gpu-count";   // node capacity
  std::string index = "ALIYUN_COM_GPU_MEM_IDX";
  std::string device_memory = "ALIYUN_COM_GPU_MEM_DEV";
  std::string pod_memory = "ALIYUN_COM_GPU_MEM_POD";
  std::string assigned = "ALIYUN_COM_GPU_MEM_ASSIGNED";
  std::string assume_time = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";
  std::string cordon = "fracpack.io/gpu-cordon";  // fracpack's operator cordon, on gpushare nodes too
  // The unhealthy-card ConfigMaps: unhealthy-gpu-<node> (and the older
  // unhealthy-<node>) in this namespace, card indices in data[gpus].
  std::string unhealthy_namespace = "kube-system";
  std::string unhealthy_key = "gpus";

  std::vector<std::string> gpu_resources() const { return {gpu_memory}; }
  Selection selection() const;
  bool operator==(const GpushareNames&) const = default;
};

struct GpushareOptions {
  int64_t unit_mib = 1024;  // the device plugin's --memory-unit: GiB (1024) or MiB (1)
  bool operator==(const GpushareOptions&) const = default;
};

class GpushareContract : public ProfileContract<GpushareNames, GpushareOptions> {
 public:
  explicit GpushareContract(GpushareNames names = {}, GpushareOptions options = {}, ForeignProfiles foreign = {});

  Result<scheduling::PodRequest> pod_request(const Pod& pod) const override;
  Result<scheduling::NodeSpec> node_spec(const Node& node) const override;
  StringMap allocation_annotations(const Pod& pod, const scheduling::Allocation& allocation, const scheduling::NodeSpec& node,
                                   std::chrono::system_clock::time_point now) const override;
  RecordedAllocation recorded_allocation(const Pod& pod, const scheduling::NodeSpec* node) const override;
  // IDX, POD and DEV: gpushare's device plugin rewrites ASSIGNED and
  // ASSUME_TIME at Allocate, never these.
  std::vector<std::string> record_keys() const override { return {names_.index, names_.pod_memory, names_.device_memory}; }
  // gpushare's device plugin hands out one device ID per GiB.
  std::string device_resource() const override { return names_.gpu_memory; }
  std::vector<std::string> guarded_annotations() const override {
    return {names_.index, names_.device_memory, names_.pod_memory, names_.assigned, names_.assume_time,
            std::string(kRecordSignatureAnnotation)};
  }
  // unhealthy-gpu-<node> and unhealthy-<node> in kube-system: the cards
  // data[gpus] lists ("0,2") are unhealthy.
  std::string node_config_map_namespace() const override { return names_.unhealthy_namespace; }
  std::vector<std::string> config_map_nodes(const ConfigMap& config_map) const override;
  Status apply_config_map(const ConfigMap& config_map, scheduling::NodeSpec& spec) const override;

 private:
  std::string unit_name() const { return options_.unit_mib == 1 ? "MiB" : "GiB"; }
};

}  // namespace fracpack::k8s
