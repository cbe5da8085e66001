// Kubernetes' own rules that every GPU contract applies the same way:
// extended resources (requests must equal limits, integers), the effective
// CPU and memory request of a pod (init containers, sidecars, overhead), a
// node's allocatable CPU and memory, and the small text lists annotations
// carry.
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/model.h"
#include "scheduling/result.h"

namespace fracpack::k8s {

// An extended resource of one container: its value, or 0 when the container
// does not name it (`named` says which). Kubernetes defaults a missing
// request to the limit; an extended resource must have a limit and, if it
// has a request, an equal one (kubernetes-protocol.md §8.2).
Result<int64_t> extended_resource(const Container& c, const std::string& name, bool& named);

// Does any container (app or init) name one of `resources` in its requests
// or limits? (kube-scheduler's IsInterested.)
bool names_any_resource(const Pod& pod, const std::vector<std::string>& resources);

// Kubernetes' effective pod request for "cpu" (millicores) or "memory"
// (bytes): max(app containers + sidecars, each init container) + overhead
// (§8.3). Errors name the container and the field.
Result<int64_t> effective_request(const Pod& pod, const std::string& name, bool cpu);

// The pod-level facts of a request: identity, effective CPU and memory.
// Errors name the pod.
Status pod_facts(const Pod& pod, scheduling::PodRequest& out);

// status.allocatable cpu and memory of a node into `spec`. Errors name the node.
Status node_allocatable(const Node& node, scheduling::NodeSpec& spec);

// The non-empty, trimmed parts of `text` split at `sep` ("A|B", "0, 2").
std::vector<std::string> split_list(std::string_view text, char sep);
std::string trim(std::string_view text);
// Every part of `text` split at `sep`, empty ones kept, untrimmed (the
// positional fields of a record: "uuid,10,32768,,").
std::vector<std::string_view> split_fields(std::string_view text, char sep);
// A whole decimal integer and nothing else (no space, no sign but '-').
template <class Int>
bool parse_decimal(std::string_view text, Int& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}
// "value" in double quotes, for messages.
std::string in_quotes(std::string_view text);
// The "<domain>/" of a qualified name ("hami.io/vgpu-node" -> "hami.io/"),
// or the whole name: the prefix a Selection keeps for it.
std::string name_domain(const std::string& name);

}  // namespace fracpack::k8s
