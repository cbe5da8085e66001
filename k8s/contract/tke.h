// The tke profile: pods written for tkestack's GPUManager (gpu-manager and
// gpu-admission, ../shared/reference/node-side.md §A3) run unchanged, placed
// by fracpack's policy and served by fracpack's own node agent, which
// enforces their shares with the node's limiter (MPS, HAMi-core). GPUManager
// itself leaves the nodes: its device plugin re-runs its own card choice at
// Allocate and fails the pod when it differs from the scheduler's, and its
// vcuda library fails under CUDA 12.
//
//   pods    tencent.com/vcuda-core, percent of a card: 1..99 a share of one
//           card, 100, 200, ... whole cards (GPUManager refuses anything
//           else above 100); tencent.com/vcuda-memory in 256 MiB blocks,
//           required with a share (GPUManager's share mode refuses a share
//           without memory), ignored with whole cards (GPUManager gives
//           the whole card). The fracpack.io placement annotations (model,
//           UUIDs, NUMA, isolation) apply as in the fracpack profile.
//   nodes   fracpack.io/gpu-devices, published by fracpack's node agent
//           run with this profile: it registers tencent.com/vcuda-core with
//           kubelet, 100 device IDs a card (GPUManager's own count), so
//           kubelet's Allocate asks as many IDs as the container's
//           vcuda-core. tencent.com/vcuda-memory is no node resource: the
//           extender counts it, and kubelet's admission leaves out extended
//           resources its node does not advertise, as for
//           fracpack.io/gpu-memory. A node whose kubelet counts no
//           vcuda-core offers no card (kubelet would admit the pod without
//           asking the agent); a node with vcuda-core but no devices
//           annotation is GPUManager's and is left alone. No GFD fallback:
//           GFD labels would put pods on GPUManager's nodes.
//   bind    fracpack's record (fracpack.io/allocation, -gpu-indices,
//           signed): the node agent is fracpack's. GPUManager's predicate
//           annotations are not written.
//   restart the record, as the fracpack profile reads it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/profile_contract.h"

namespace fracpack::k8s {

struct TkeNames {
  std::string vcuda_core = "tencent.com/vcuda-core";      // percent of a card; the device resource
  std::string vcuda_memory = "tencent.com/vcuda-memory";  // 256 MiB blocks
  // The node side and the record: fracpack's node agent, fracpack's names
  // (the configuration's contract.*; make_contract sets them).
  ContractNames fracpack;

  std::vector<std::string> gpu_resources() const { return {vcuda_core, vcuda_memory}; }
  Selection selection() const;
  bool operator==(const TkeNames&) const = default;
};

class TkeContract : public ProfileContract<TkeNames, FracpackOptions> {
 public:
  // GPUManager's units.
  static constexpr int64_t kBlockMib = 256;      // one tencent.com/vcuda-memory
  static constexpr int64_t kCardPercent = 100;   // tencent.com/vcuda-core of one whole card

  explicit TkeContract(TkeNames names = {}, ForeignProfiles foreign = {}, FracpackOptions options = {});

  Result<scheduling::PodRequest> pod_request(const Pod& pod) const override;
  Result<scheduling::NodeSpec> node_spec(const Node& node) const override;
  StringMap allocation_annotations(const Pod& pod, const scheduling::Allocation& allocation, const scheduling::NodeSpec& node,
                                   std::chrono::system_clock::time_point now) const override {
    return node_side_.allocation_annotations(pod, allocation, node, now);
  }
  RecordedAllocation recorded_allocation(const Pod& pod, const scheduling::NodeSpec* node) const override {
    return node_side_.recorded_allocation(pod, node);
  }
  std::vector<std::string> record_keys() const override { return node_side_.record_keys(); }
  std::vector<std::string> guarded_annotations() const override { return node_side_.guarded_annotations(); }
  std::vector<std::string> placement_annotations() const override { return node_side_.placement_annotations(); }
  std::vector<std::string> start_warnings() const override { return node_side_.start_warnings(); }
  std::string device_resource() const override { return names_.vcuda_core; }
  // kubelet asks vcuda-core IDs: below 100 one card, else 100 a card.
  Result<int> cards_of_devices(int64_t devices) const override;
  int device_ids_per_card() const override { return static_cast<int>(kCardPercent); }
  // limits.tencent.com/vcuda-core (percent of a card, 100 a whole card)
  // and limits.tencent.com/vcuda-memory (256 MiB blocks).
  std::vector<QuotaKey> quota_keys() const override {
    using scheduling::QuotaResource;
    return {{"limits." + names_.vcuda_core, QuotaResource::kCoresPercent, 1},
            {"limits." + names_.vcuda_memory, QuotaResource::kMemoryMib, kBlockMib}};
  }

 private:
  // fracpack's contract with tencent.com/vcuda-core as its device resource:
  // the devices annotation, the record, and kubelet's count of the resource.
  FracpackContract node_side_;
};

}  // namespace fracpack::k8s
