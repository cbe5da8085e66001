// Kubernetes' own rules that every GPU contract applies the same way:
// extended resources (requests must equal limits, integers), the effective
// CPU and memory request of a pod (init containers, sidecars, overhead), a
// node's allocatable CPU and memory, the share resources the fracpack and
// HAMi contracts read alike, what a profile's decoders keep (selection_of,
// name_domain). The text helpers they use are common/text.h.
#pragma once

#include <charconv>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "k8s/objects.h"
#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::k8s {

// An extended resource of one container: its value, or 0 when the container
// does not name it (`named` says which). Kubernetes defaults a missing
// request to the limit; an extended resource must have a limit and, if it
// has a request, an equal one (../shared/reference/kubernetes-protocol.md §8.2).
Result<int64_t> extended_resource(const Container& c, const std::string& name, bool& named);

// The four share resources of a container as the fracpack and HAMi
// contracts name them (a card count, memory, memory percent, compute),
// each with whether the container names it.
struct ShareResources {
  int64_t count = 0, memory = 0, percent = 0, cores = 0;
  bool has_count = false, has_memory = false, has_percent = false, has_cores = false;
  // Names a share (memory, percent or compute), not only a count.
  bool names_share() const { return has_memory || has_percent || has_cores; }
  // Asks for a GPU at all: "0 GPUs" and naming nothing ask for none.
  bool asks() const { return has_count ? count > 0 : names_share(); }
};
// Refuses a count of 0 beside a share, and more than 64 cards (the most a
// pod's record holds).
Result<ShareResources> share_resources(const Container& c, const std::string& count, const std::string& memory,
                                       const std::string& percent, const std::string& cores);

// Whether a pod asks for cards, the one rule (kube-scheduler's IsInterested;
// the extender, the admission webhook and the profiles all ask it): a
// container (init or app) names one of `resources` in its requests or limits.
// The first of `resources` container `c` names, or "".
const std::string& named_resource(const Container& c, const std::vector<std::string>& resources);
// The first named by a container of the pod (init containers first), or "".
const std::string& named_resource(const Pod& pod, const std::vector<std::string>& resources);
bool names_any_resource(const Pod& pod, const std::vector<std::string>& resources);
bool names_resource(const Pod& pod, const std::string& resource);

// Kubernetes' effective pod request for "cpu" (millicores) or "memory"
// (bytes): max(app containers + sidecars, each init container) + overhead
// (§8.3). Errors name the container and the field.
Result<int64_t> effective_request(const Pod& pod, const std::string& name, bool cpu);

// The pod-level facts of a request: identity, effective CPU and memory.
// Errors name the pod.
Status pod_facts(const Pod& pod, scheduling::PodRequest& out);

// status.allocatable cpu and memory of a node into `spec`. Errors name the node.
Status node_allocatable(const Node& node, scheduling::NodeSpec& spec);

// The minor version of a kubelet's "v1.20.2" (status.nodeInfo.kubeletVersion),
// 0 when it is not "v1.<minor>...".
int kubelet_minor(std::string_view version);
// The "<domain>/" of a qualified name ("hami.io/vgpu-node" -> "hami.io/"),
// or the whole name: the prefix a Selection keeps for it.
std::string name_domain(const std::string& name);
// What the object decoders keep for a profile: the domains of its
// annotation names (name_domain), CPU, memory and its pod resources.
Selection selection_of(std::initializer_list<const std::string*> annotations, std::vector<std::string> resources);

}  // namespace fracpack::k8s
