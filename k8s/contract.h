// The fracpack contract (README "How a pod asks for a share"): how pods ask
// for card shares, how nodes describe their cards, and the allocation record
// written at bind. Translates Kubernetes objects into the scheduling model,
// validating every value; errors name the pod or node and the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/model.h"
#include "scheduling/result.h"

namespace fracpack::k8s {

// Resource, annotation and label names. These are the defaults; a profile
// in the configuration may rename them.
struct ContractNames {
  // Pod resources (per container, resources.limits).
  std::string gpu = "fracpack.io/gpu";
  std::string gpu_memory = "fracpack.io/gpu-memory";
  std::string gpu_memory_percent = "fracpack.io/gpu-memory-percent";
  std::string gpu_cores = "fracpack.io/gpu-cores";
  // Pod annotations.
  std::string model = "fracpack.io/gpu-model";
  std::string uuid = "fracpack.io/gpu-uuid";
  std::string uuid_exclude = "fracpack.io/gpu-uuid-exclude";
  std::string numa = "fracpack.io/numa";
  // Node annotations.
  std::string devices = "fracpack.io/gpu-devices";
  std::string cordon = "fracpack.io/gpu-cordon";
  // The allocation record (pod annotations written at bind).
  std::string allocation = "fracpack.io/allocation";
  std::string indices = "fracpack.io/gpu-indices";
  // NVIDIA GPU Feature Discovery node labels (fallback description).
  std::string gfd_count = "nvidia.com/gpu.count";
  std::string gfd_memory = "nvidia.com/gpu.memory";
  std::string gfd_product = "nvidia.com/gpu.product";

  // The four pod resources.
  std::vector<std::string> gpu_resources() const { return {gpu, gpu_memory, gpu_memory_percent, gpu_cores}; }
  // What the object decoders must keep for this contract.
  Selection selection() const;

  bool operator==(const ContractNames&) const = default;
};

// kube-scheduler's IsInterested: does any container (app or init) name one
// of the contract's resources in its requests or limits?
bool requests_gpu(const Pod& pod, const ContractNames& names);

// The pod's placement request. CPU and memory follow Kubernetes' effective
// request (max of init vs app containers plus overhead); GPU shares follow
// the contract.
Result<scheduling::PodRequest> pod_request(const Pod& pod, const ContractNames& names);

// The node's cards (device annotation, else GFD labels, else none), cordons
// and allocatable CPU/memory.
Result<scheduling::NodeSpec> node_spec(const Node& node, const ContractNames& names);

// The allocation record: fracpack.io/allocation and fracpack.io/gpu-indices.
std::string format_allocation(const scheduling::Allocation& allocation);
std::string format_indices(const scheduling::Allocation& allocation);
Result<scheduling::Allocation> parse_allocation(std::string_view json);

// The node's card list as the device annotation writes it.
std::string format_devices(const std::vector<scheduling::Card>& cards);

}  // namespace fracpack::k8s
