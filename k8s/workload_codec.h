// The target workload's JSON (pod shapes and counts): what fracpack's
// fragmentation measure and policies judge placements against. Read from
// the workload file, or from a ConfigMap's key "workload.json"; `fracpack
// convert` writes a trace's shapes there.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "scheduling/workload.h"

namespace fracpack::k8s {

// A ConfigMap of this name (any namespace) in a snapshot carries the target
// workload, key "workload.json".
inline constexpr const char* kWorkloadConfigMap = "fracpack-target-workload";
inline constexpr const char* kWorkloadKey = "workload.json";

// {"shapes":[{"cpuMilli":3152,"cards":1,"cores":81,"memoryMiB":0,"memoryPercent":0,"models":"","count":1047,
//              "nodeMemoryMiB":5600},...]}   (nodeMemoryMiB: the shape's pods' mean node memory; optional)
std::string format_workload(const scheduling::ShapeCounts& workload);
Result<scheduling::ShapeCounts> parse_workload(std::string_view json);

}  // namespace fracpack::k8s
