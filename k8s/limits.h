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
#include "scheduling/result.h"

namespace fracpack::k8s {

inline constexpr size_t kMaxNameBytes = 253;           // object and node names (DNS subdomain)
inline constexpr size_t kMaxNamespaceBytes = 63;       // DNS label
inline constexpr size_t kMaxContainerNameBytes = 63;   // DNS label
inline constexpr size_t kMaxUidBytes = 128;            // the API server's UIDs are 36
inline constexpr size_t kMaxLabelKeyBytes = 253 + 1 + 63;
inline constexpr size_t kMaxLabelValueBytes = 63;
inline constexpr size_t kMaxAnnotationBytes = 256 << 10;  // keys and values of one object together
inline constexpr size_t kMaxQuantityBytes = 64;        // the API server writes quantities canonical (<= ~25)
// Nodes in one filter or prioritize: 20 x Kubernetes' scalability limit of
// 5 000 nodes per cluster.
inline constexpr size_t kMaxNodesPerRequest = 100000;

// `path` names the value in errors ("Pod", "NodeNames[3]").
Status check_name(std::string_view name, std::string_view path, size_t limit = kMaxNameBytes);
Status check_pod_limits(const Pod& pod, std::string_view path);

// The bytes a decoded pod holds (strings and containers, roughly): what
// remembering it costs.
size_t approx_bytes(const Pod& pod);

}  // namespace fracpack::k8s
