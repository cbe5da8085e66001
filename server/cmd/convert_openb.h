// The openb experiment of one seed as a cluster snapshot (fracpack convert
// openb): nodes named with the seed's permutation prefix, the tuned arrivals
// as pending pods created in arrival order (one second apart), the trace's
// shapes as the workload ConfigMap — written in one profile's terms (its
// node registration, its pod resources), so the same experiment runs
// through each contract.
#pragma once

#include <string>

#include "k8s/contract/profiles.h"
#include "scheduling/replay/experiment.h"
#include "common/result.h"

namespace fracpack::cli {

struct OpenbConversion {
  // hami: each card's split count in hami.io/node-nvidia-register (HAMi's
  // device plugin --device-split-count, 10 by default).
  int hami_split_count = 10;
};

struct OpenbSnapshot {
  std::string json;  // a v1 List
  // Arrivals the profile cannot express, left out (gpushare puts a pod on one card).
  size_t left_out = 0;
  std::string left_out_why;
};

// The experiment in the terms of `contract.profile`, with its configured
// names and options (gpushare's memory unit, HAMi's memory factor):
//   fracpack  GPU Feature Discovery labels; fracpack.io/gpu (+ gpu-cores for a
//             share, gpu_milli / 10 percent), gpu_spec as fracpack.io/gpu-model.
//   hami      hami.io/node-nvidia-register (type "NVIDIA-<model>", the
//             trace's nominal memory, split count as above) and allocatable
//             nvidia.com/gpu (cards x split); nvidia.com/gpu + gpucores
//             (100 for a whole card: alone) + gpumem-percentage equal to the
//             cores (a share's memory in proportion to its compute; a whole
//             card names no memory: all of it), gpu_spec as use-gputype.
//   gpushare  capacity and allocatable aliyun.com/gpu-mem (cards x the
//             model's memory in the unit) and aliyun.com/gpu-count; a pod of
//             one card asks gpu-mem = its compute share of the cluster's
//             smallest card (rounded, at least one unit), since gpushare
//             shares by memory alone; gpu_spec is dropped (gpushare has no
//             card model request) and pods of several cards are left out.
Result<OpenbSnapshot> openb_snapshot(const replay::ExperimentSetup& setup, const k8s::ContractConfig& contract, int64_t seed,
                                     const OpenbConversion& options = {});

}  // namespace fracpack::cli
