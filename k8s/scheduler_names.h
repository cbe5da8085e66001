// Which pods are fracpack's: those whose spec.schedulerName is one of the
// configured schedulerNames. The extender binds, admission lets ask for
// GPU shares, and the node agent serves, only these pods; each asks here,
// so the three cannot disagree on an edge (issue 42: an empty list read as
// "none" by bind, "any" by the agent).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack::k8s {

// The scheduler fracpack's manifests deploy, and the one list every
// component starts from when not configured.
inline constexpr std::string_view kDefaultSchedulerName = "fracpack";
inline std::vector<std::string> default_scheduler_names() { return {std::string(kDefaultSchedulerName)}; }

// Whether a pod with this spec.schedulerName is fracpack's to place and
// serve. An empty list names no scheduler, so no pod is ours: the
// configuration refuses one ("schedulerNames: must name at least one
// scheduler"), and a component handed one anyway fails closed rather than
// binding or serving other schedulers' pods with fracpack's rights.
inline bool placed_by_fracpack(std::string_view pod_scheduler_name, const std::vector<std::string>& scheduler_names) {
  return std::find(scheduler_names.begin(), scheduler_names.end(), pod_scheduler_name) != scheduler_names.end();
}

}  // namespace fracpack::k8s
