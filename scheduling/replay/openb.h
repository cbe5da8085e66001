// The Alibaba openb trace (cluster-trace-gpu-v2023) as the FGD simulator
// reads it (../shared/reference/replay-spec.md §1): node and pod CSV rows, and their translation to
// the scheduling model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::replay {

struct OpenbNode {
  std::string name;  // sn
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::string model;
};

struct OpenbPod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int num_gpu = 0;
  int gpu_milli = 0;      // per GPU, after the converter's clamping (0..1000)
  std::string gpu_spec;   // allowed models, '|'-joined, empty: any
  // Seconds on the trace's clock (the dynamic replay's arrivals and run
  // times); -1 when the list has no such column or the cell is empty.
  int64_t creation_time = -1;
  int64_t deletion_time = -1;

  // GPU demand as the simulator counts it (0 for CPU-only pods).
  int64_t gpu_request() const { return num_gpu > 0 ? int64_t{num_gpu} * gpu_milli : 0; }
  bool has_times() const { return creation_time >= 0 && deletion_time >= 0; }
};

// Parses openb_node_list_*.csv text (sn,cpu_milli,memory_mib,gpu,model).
// Errors name the line and column.
Result<std::vector<OpenbNode>> parse_openb_nodes(std::string_view csv);
// Parses openb_pod_list_*.csv text (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]).
// creation_time and deletion_time are read when present: an empty cell
// leaves the pod without times, a deletion before the creation is an error.
Result<std::vector<OpenbPod>> parse_openb_pods(std::string_view csv);

// GPU memory per card for the trace's models, in MiB. The trace records none
// (it models compute shares only); these nominal sizes give converted nodes a
// complete device description. Unknown models get 16384.
int64_t nominal_memory_mib(std::string_view model);

// Model objects. Node `name` may differ from the trace name (the replay
// prefixes it); cards get their index as UUID-less devices.
scheduling::NodeSpec to_node_spec(const OpenbNode& node, std::string name);
scheduling::PodRequest to_pod_request(const OpenbPod& pod);

}  // namespace fracpack::replay
