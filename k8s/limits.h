// Kubernetes' own size limits (apimachinery's validation: DNS subdomains and
// labels, label values, the 256 KiB of annotations), checked on what the
// extender's clients send. The API server enforces them on every object it
// stores, so kube-scheduler never sends more; a request that does is not
// from it, and each field past its limit is refused by name. They bound what
// one pod can make fracpack keep (the remembered pods) or write back (its
// names inside rejection reasons).
#pragma once

#include <cstddef>
#include <string_view>

#include "k8s/objects.h"
#include "common/result.h"

namespace fracpack::k8s {

// A size limit, and whose it is (named in the error).
struct SizeLimit {
  size_t bytes;
  const char* set_by;  // "Kubernetes", or "fracpack" for what the API server does not spell out
};

inline constexpr SizeLimit kMaxName{253, "Kubernetes"};           // object and node names (DNS subdomain)
inline constexpr SizeLimit kMaxNamespace{63, "Kubernetes"};       // DNS label
inline constexpr SizeLimit kMaxContainerName{63, "Kubernetes"};   // DNS label
inline constexpr SizeLimit kMaxLabelKey{253 + 1 + 63, "Kubernetes"};
inline constexpr SizeLimit kMaxLabelValue{63, "Kubernetes"};
inline constexpr SizeLimit kMaxAnnotations{256 << 10, "Kubernetes"};  // keys and values of one object together
inline constexpr SizeLimit kMaxUid{128, "fracpack"};              // the API server's UIDs are 36
inline constexpr SizeLimit kMaxQuantity{64, "fracpack"};          // the API server writes quantities canonical (<= ~25)
// Nodes in one filter, prioritize or preempt: 20 x Kubernetes' scalability
// limit of 5 000 nodes per cluster.
inline constexpr size_t kMaxNodesPerRequest = 100000;

// `path` names the value in errors ("Pod", "NodeNames[3]").
Status check_name(std::string_view name, std::string_view path, SizeLimit limit = kMaxName);
Status check_pod_limits(const Pod& pod, std::string_view path);
// An error once a list at `path` reaches its (kMaxNodesPerRequest + 1)th node.
Status check_node_count(size_t count, std::string_view path);

// The bytes a decoded pod holds (strings and containers, roughly): what
// remembering it costs.
size_t approx_bytes(const Pod& pod);

}  // namespace fracpack::k8s
