// Workload mixes built from a public openb pod list the way the FGD paper
// built its 17 (../shared/reference/replay-spec.md §1.2), at any strength: more CPU-only pods, more
// GPU-sharing pods, more pods constrained to card models, more multi-GPU
// pods. The paper published five of its traces; these recipes rebuild the
// others' kind (and stronger ones) from the default trace, so a policy can be
// measured on mixes it was not tuned on.
//
// Each recipe is a pure, seeded function of its inputs: the same base, seed
// and recipe give the same pod list on every machine. Added pods are copies
// of the base's own rows (their CPU, memory, GPU and, for the dynamic replay,
// creation and deletion times), drawn with replacement.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/replay/openb.h"
#include "common/result.h"

namespace fracpack::replay {

struct MixStep {
  enum class Kind {
    kCpu,       // cpuN: CPU-only pods resampled until their CPU request is N % of the nodes' CPU
    kGpushare,  // gpushareN: whole-card pods replaced by sharing pods until shares are N % of the GPU request
    kGpuspec,   // gpuspecN: N % of the GPU pods constrained to card models
    kMultigpu,  // multigpuN: multi-card pods added until they are N % of the GPU request
  };
  Kind kind = Kind::kCpu;
  int percent = 0;  // 0..100 (cpu: 0..200)

  std::string name() const;  // "multigpu40"
};

// "multigpu40" or "gpushare60+gpuspec33": steps applied left to right.
// Errors name the step and say what is accepted.
Result<std::vector<MixStep>> parse_mix(std::string_view text);

struct MixInputs {
  std::span<const OpenbPod> base;        // the pod list the mix starts from (e.g. default)
  std::span<const OpenbNode> nodes;      // the cluster (cpuN is relative to its CPU)
  std::span<const OpenbPod> spec_source; // pods with gpu_spec to draw constraints from (gpuspecN)
  uint64_t seed = 1;
};

// Applies the steps in order. Pods are renamed openb-pod-0000.. in the
// order of the result. Errors when a step cannot be built from the inputs
// (no pods of the kind to draw from, a percentage the pool cannot reach).
Result<std::vector<OpenbPod>> build_mix(const MixInputs& in, std::span<const MixStep> steps);

// Writes a pod list in the openb CSV format parse_openb_pods reads (with the
// time columns when any pod has them).
std::string format_openb_pods(std::span<const OpenbPod> pods);

}  // namespace fracpack::replay
