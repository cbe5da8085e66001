// ExtenderPreemptionArgs and ExtenderPreemptionResult (k8s.io/kube-scheduler/
// extender/v1): the preemptor and the victims kube-scheduler proposes, decoded
// as Go's encoding/json decodes them; the victims fracpack agrees to, written
// as Go would encode them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

// The preemptor and, per candidate node, the victims kube-scheduler
// proposes (UIDs; full pods are reduced to theirs).
struct PreemptionArgs {
  std::optional<Pod> pod;
  std::map<std::string, std::vector<std::string>> victims;  // node -> pod UIDs
  std::map<std::string, int64_t> pdb_violations;            // node -> NumPDBViolations
  bool meta = true;  // NodeNameToMetaVictims (true) or NodeNameToVictims
};
Result<PreemptionArgs> parse_preemption_args(std::string_view body, const Selection& selection);

// ExtenderPreemptionResult: NodeNameToMetaVictims.
struct MetaVictims {
  std::vector<std::string> uids;
  int64_t pdb_violations = 0;
};
std::string format_preemption_result(const std::map<std::string, MetaVictims>& victims);

}  // namespace fracpack::k8s
