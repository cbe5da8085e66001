// Doubles of the peers' ../shared/reference/node-side.md code that reads what fracpack writes,
// written from ../shared/reference/node-side.md (§A1 gpushare, §A2 HAMi),
// not from fracpack's code: they parse the raw pod JSON on the test API
// server with their own decoders, as the Go originals do.
//
//   HAMi's device plugin Allocate (§A2.6): the pod named by the node lock,
//   else the first Pending pod on the node in bind-phase allocating; each
//   call takes the next non-empty entry of hami.io/vgpu-devices-to-allocate
//   (its device count must equal kubelet's), erases it, and marks the pod
//   bind-phase success when none is left; success or failure releases the
//   node lock if it names the pod.
//   HAMi's scheduler after a restart (§A2.8): per card UUID, the shares,
//   memory and cores of hami.io/vgpu-devices-allocated of every pod with
//   hami.io/vgpu-node not Succeeded/Failed.
//   gpushare's device plugin Allocate (§A1.4): Pending pods on the node
//   with ASSUME_TIME and ASSIGNED "false", oldest ASSUME_TIME first, the
//   first whose total gpu-mem equals the request; it patches ASSIGNED true.
//   gpushare's extender BuildCache (§A1.7): per (node, IDX), the sum of POD
//   of pods with a node, POD > 0, not Succeeded/Failed.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::testing {

// The annotation `key` of a pod or node object ("" when absent or not a string).
std::string annotation_of(const nlohmann::json& object, const std::string& key);

struct HamiAllocation {
  std::string pod;                                // namespace/name the plugin served
  std::vector<std::vector<std::string>> devices;  // per Allocate call, the card UUIDs
  std::vector<std::vector<int64_t>> memory_mib;   // and each one's memory limit
};
// kubelet admitting the pod's containers on `node`: one Allocate call per
// container with nvidia.com/gpu, `counts` its number of device IDs.
Result<HamiAllocation> hami_allocate(FakeApiServer& api, const std::string& node, const std::vector<int>& counts);

struct HamiCardUse {
  int shares = 0;
  int64_t memory_mib = 0;
  int cores = 0;  // percent
  bool operator==(const HamiCardUse&) const = default;
};
// (node, UUID) -> use, as HAMi's scheduler counts after a restart.
std::map<std::pair<std::string, std::string>, HamiCardUse> hami_scheduler_usage(const FakeApiServer& api);

struct GpushareAllocation {
  std::string pod;  // namespace/name
  int index = -1;   // the card (ALIYUN_COM_GPU_MEM_IDX)
};
Result<GpushareAllocation> gpushare_allocate(FakeApiServer& api, const std::string& node, int64_t units);

// (node, card index) -> used gpu-mem units, as gpushare's extender counts after a restart.
std::map<std::pair<std::string, int>, int64_t> gpushare_extender_usage(const FakeApiServer& api);

}  // namespace fracpack::testing
