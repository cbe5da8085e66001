#include "k8s/limits.h"

#include <string>

namespace fracpack::k8s {
namespace {

Status check_map(const StringMap& map, std::string_view path, SizeLimit key_limit, SizeLimit value_limit) {
  for (const auto& [k, v] : map) {
    if (Status s = check_name(k, std::string(path) + " key", key_limit); !s.ok()) return s;
    if (Status s = check_name(v, std::string(path) + "[" + k + "]", value_limit); !s.ok()) return s;
  }
  return Status::Ok();
}

Status check_containers(const std::vector<Container>& containers, std::string_view path) {
  for (size_t i = 0; i < containers.size(); ++i) {
    const Container& c = containers[i];
    const std::string where = std::string(path) + "[" + std::to_string(i) + "]";
    if (Status s = check_name(c.name, where + ".name", kMaxContainerName); !s.ok()) return s;
    // Resource names are kept only when fracpack reads them (exact names): their values are what can grow.
    if (Status s = check_map(c.requests, where + ".resources.requests", kMaxLabelKey, kMaxQuantity); !s.ok()) return s;
    if (Status s = check_map(c.limits, where + ".resources.limits", kMaxLabelKey, kMaxQuantity); !s.ok()) return s;
  }
  return Status::Ok();
}

size_t map_bytes(const StringMap& map) {
  size_t n = 0;
  for (const auto& [k, v] : map) n += k.size() + v.size() + 2 * sizeof(std::string);
  return n;
}

}  // namespace

Status check_name(std::string_view name, std::string_view path, SizeLimit limit) {
  if (name.size() <= limit.bytes) return Status::Ok();
  return Error{std::string(path) + ": " + std::to_string(name.size()) + " bytes, " + limit.set_by + " allows at most " +
               std::to_string(limit.bytes)};
}

Status check_node_count(size_t count, std::string_view path) {
  if (count <= kMaxNodesPerRequest) return Status::Ok();
  return Error{std::string(path) + ": more than " + std::to_string(kMaxNodesPerRequest) + " nodes"};
}

Status check_pod_limits(const Pod& pod, std::string_view path) {
  const std::string p(path);
  const ObjectMeta& m = pod.meta;
  if (Status s = check_name(m.name, p + ".metadata.name"); !s.ok()) return s;
  if (Status s = check_name(m.namespace_name, p + ".metadata.namespace", kMaxNamespace); !s.ok()) return s;
  if (Status s = check_name(m.uid, p + ".metadata.uid", kMaxUid); !s.ok()) return s;
  if (Status s = check_map(m.labels, p + ".metadata.labels", kMaxLabelKey, kMaxLabelValue); !s.ok()) return s;
  size_t annotations = 0;
  for (const auto& [k, v] : m.annotations) annotations += k.size() + v.size();
  if (annotations > kMaxAnnotations.bytes) {
    return Error{p + ".metadata.annotations: " + std::to_string(annotations) + " bytes, Kubernetes allows at most " +
                 std::to_string(kMaxAnnotations.bytes)};
  }
  if (Status s = check_name(pod.node_name, p + ".spec.nodeName"); !s.ok()) return s;
  if (Status s = check_name(pod.nominated_node_name, p + ".status.nominatedNodeName"); !s.ok()) return s;
  if (Status s = check_name(pod.scheduler_name, p + ".spec.schedulerName"); !s.ok()) return s;
  if (Status s = check_containers(pod.containers, p + ".spec.containers"); !s.ok()) return s;
  if (Status s = check_containers(pod.init_containers, p + ".spec.initContainers"); !s.ok()) return s;
  return check_map(pod.overhead, p + ".spec.overhead", kMaxLabelKey, kMaxQuantity);
}

size_t approx_bytes(const Pod& pod) {
  const ObjectMeta& m = pod.meta;
  size_t n = sizeof(Pod) + m.name.size() + m.namespace_name.size() + m.uid.size() + m.resource_version.size() +
             m.creation_timestamp.size() + map_bytes(m.labels) + map_bytes(m.annotations) + pod.node_name.size() +
             pod.scheduler_name.size() + pod.nominated_node_name.size() + pod.phase.size() + map_bytes(pod.overhead);
  for (const auto* list : {&pod.containers, &pod.init_containers}) {
    for (const Container& c : *list) n += sizeof(Container) + c.name.size() + map_bytes(c.requests) + map_bytes(c.limits);
  }
  return n;
}

}  // namespace fracpack::k8s
