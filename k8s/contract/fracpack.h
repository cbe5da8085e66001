// The fracpack contract (README "How a pod asks for a share"): pods ask with
// fracpack.io/gpu, -memory, -memory-percent and -cores; nodes describe their
// cards with fracpack.io/gpu-devices (else GPU Feature Discovery labels);
// the Binding writes fracpack.io/allocation (every container's cards and
// shares) and fracpack.io/gpu-indices (the flat card list, for simple device
// plugins, and the partial record a restart can still read). Every value is
// validated; errors name the pod or node and the field.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/contract/profile_contract.h"

namespace fracpack::k8s {

// The resource fracpack's pods ask cards with and its node agent registers
// with kubelet, unless the configuration renames it (contract.gpu).
inline constexpr std::string_view kDefaultGpuResource = "fracpack.io/gpu";

// Resource, annotation and label names. These are the defaults; a profile
// in the configuration may rename them.
struct ContractNames {
  // Pod resources (per container, resources.limits).
  std::string gpu = std::string(kDefaultGpuResource);
  std::string gpu_memory = "fracpack.io/gpu-memory";
  std::string gpu_memory_percent = "fracpack.io/gpu-memory-percent";
  std::string gpu_cores = "fracpack.io/gpu-cores";
  // Pod annotations.
  std::string model = "fracpack.io/gpu-model";
  std::string uuid = "fracpack.io/gpu-uuid";
  std::string uuid_exclude = "fracpack.io/gpu-uuid-exclude";
  std::string numa = "fracpack.io/numa";
  // "none": the pod accepts a share its cards cannot enforce (README "Isolation").
  std::string isolation = "fracpack.io/isolation";
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

// Whether a share (less than a card's whole compute) may go on a card that
// cannot enforce it (isolation none, or a part of a MIG instance: nothing
// stops its container from using the whole card). placement.unenforcedShares.
// The built-in default is allow, so that an upgrade whose configuration
// predates the key places as it did (fracpack says so at start); the
// shipped manifests and chart set refuse, so that a new install is safe.
enum class UnenforcedShares {
  kAllow,
  kRefuse,  // only for pods that accept it (annotation fracpack.io/isolation: none)
};
const char* unenforced_shares_name(UnenforcedShares u);  // "allow", "refuse"

struct FracpackOptions {
  UnenforcedShares unenforced_shares = UnenforcedShares::kAllow;
  bool operator==(const FracpackOptions&) const = default;
};

class FracpackContract : public ProfileContract<ContractNames, FracpackOptions> {
 public:
  explicit FracpackContract(ContractNames names = {}, ForeignProfiles foreign = {}, FracpackOptions options = {});

  // CPU and memory follow Kubernetes' effective request; GPU shares follow
  // the contract (README).
  Result<scheduling::PodRequest> pod_request(const Pod& pod) const override;
  // The device annotation, else GFD labels, else no cards; then cordons.
  Result<scheduling::NodeSpec> node_spec(const Node& node) const override;
  // fracpack.io/allocation and fracpack.io/gpu-indices.
  StringMap allocation_annotations(const Pod& pod, const scheduling::Allocation& allocation, const scheduling::NodeSpec& node,
                                   std::chrono::system_clock::time_point now) const override;
  // The allocation record when it parses and names the pod's node; else
  // the flat index list (a partial record); else none.
  RecordedAllocation recorded_allocation(const Pod& pod, const scheduling::NodeSpec* node) const override;
  // fracpack.io/allocation and fracpack.io/gpu-indices (and the signature).
  std::vector<std::string> record_keys() const override { return {names_.allocation, names_.indices}; }
  std::string device_resource() const override { return names_.gpu; }
  // limits.fracpack.io/gpu (cards), .../gpu-memory (MiB), .../gpu-cores
  // (percent of a card).
  std::vector<QuotaKey> quota_keys() const override {
    using scheduling::QuotaResource;
    return {{"limits." + names_.gpu, QuotaResource::kCards, 1},
            {"limits." + names_.gpu_memory, QuotaResource::kMemoryMib, 1},
            {"limits." + names_.gpu_cores, QuotaResource::kCoresPercent, 1}};
  }
  std::vector<std::string> guarded_annotations() const override {
    return {names_.allocation, names_.indices, std::string(kRecordSignatureAnnotation)};
  }
  // With placement.unenforcedShares: allow, that shares may go on cards
  // that cannot enforce them.
  std::vector<std::string> start_warnings() const override;
  std::vector<std::string> placement_annotations() const override {
    return {names_.model, names_.uuid, names_.uuid_exclude, names_.numa, names_.isolation};
  }
};

// The pod annotations of the fracpack contract that steer placement
// (models, UUIDs, NUMA, fracpack.io/isolation), read into `request` whose
// containers are already set. Shared with the tke profile, whose pods are
// served by fracpack's node agent under the same rules.
Status read_placement_annotations(const Pod& pod, const ContractNames& names, const FracpackOptions& options,
                                  scheduling::PodRequest& request);

// The records' codec (the device plugin side reads the same).
// fracpack.io/allocation:
std::string format_allocation(const scheduling::Allocation& allocation);
Result<scheduling::Allocation> parse_allocation(std::string_view json);
// fracpack.io/gpu-indices ("0,3"; sorted, distinct):
std::string format_indices(const scheduling::Allocation& allocation);
std::optional<std::vector<int>> parse_indices(std::string_view text);
// fracpack.io/gpu-devices (`registered` false: every card says
// "registered":false, its agent's device plugin not registered with kubelet):
std::string format_devices(const std::vector<scheduling::Card>& cards, bool registered = true);
// A compute share in milli of a card as the record writes it, in percent
// with at most one decimal (505 -> "50.5").
std::string cores_text(int milli);

}  // namespace fracpack::k8s
