// The openb experiment of one seed as a cluster snapshot (fracpack convert
// openb): nodes named with the seed's permutation prefix, the tuned arrivals
// as pending pods created in arrival order (one second apart), the trace's
// shapes as the workload ConfigMap.
#pragma once

#include <string>

#include "k8s/contract/fracpack.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/result.h"

namespace fracpack::cli {

Result<std::string> openb_snapshot_json(const replay::ExperimentSetup& setup, const k8s::ContractNames& names, int64_t seed);

}  // namespace fracpack::cli
