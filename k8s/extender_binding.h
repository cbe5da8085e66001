// ExtenderBindingArgs and ExtenderBindingResult (k8s.io/kube-scheduler/
// extender/v1): the bind request, decoded as Go's encoding/json decodes it
// (keys matched case-insensitively, an exact match winning), and its reply.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace fracpack::k8s {

struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
// Refuses a body that is not JSON throughout, a field of another type, an
// empty PodName or Node, and names past Kubernetes' limits.
Result<BindingArgs> parse_binding_args(std::string_view body);
std::string format_binding_result(std::string_view error);

}  // namespace fracpack::k8s
