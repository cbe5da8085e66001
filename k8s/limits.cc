#include "k8s/limits.h"

#include <string>

namespace fracpack::k8s {
namespace {

// `whose`: "Kubernetes" for the API server's own limits, "fracpack" for
// the two it does not spell out (UIDs, quantities) that fracpack bounds.
Error too_long(std::string_view path, size_t size, size_t limit, const char* whose = "Kubernetes") {
  return Error{std::string(path) + ": " + std::to_string(size) + " bytes, " + whose + " allows at most " + std::to_string(limit)};
}

Status check_map(const StringMap& map, std::string_view path, size_t key_limit, size_t value_limit) {
  for (const auto& [k, v] : map) {
    if (k.size() > key_limit) return too_long(std::string(path) + " key", k.size(), key_limit);
    if (v.size() > value_limit) {
      return too_long(std::string(path) + "[" + k + "]", v.size(), value_limit, value_limit == kMaxQuantityBytes ? "fracpack" : "Kubernetes");
    }
  }
  return Status::Ok();
}

Status check_containers(const std::vector<Container>& containers, std::string_view path) {
  for (size_t i = 0; i < containers.size(); ++i) {
    const Container& c = containers[i];
    const std::string where = std::string(path) + "[" + std::to_string(i) + "]";
    if (Status s = check_name(c.name, where + ".name", kMaxContainerNameBytes); !s.ok()) return s;
    // Resource names are kept only when fracpack reads them (exact names): their values are what can grow.
    if (Status s = check_map(c.requests, where + ".resources.requests", kMaxLabelKeyBytes, kMaxQuantityBytes); !s.ok()) return s;
    if (Status s = check_map(c.limits, where + ".resources.limits", kMaxLabelKeyBytes, kMaxQuantityBytes); !s.ok()) return s;
  }
  return Status::Ok();
}

size_t map_bytes(const StringMap& map) {
  size_t n = 0;
  for (const auto& [k, v] : map) n += k.size() + v.size() + 2 * sizeof(std::string);
  return n;
}

}  // namespace

Status check_name(std::string_view name, std::string_view path, size_t limit) {
  if (name.size() > limit) return too_long(path, name.size(), limit, limit == kMaxUidBytes ? "fracpack" : "Kubernetes");
  return Status::Ok();
}

Status check_pod_limits(const Pod& pod, std::string_view path) {
  const std::string p(path);
  const ObjectMeta& m = pod.meta;
  if (Status s = check_name(m.name, p + ".metadata.name"); !s.ok()) return s;
  if (Status s = check_name(m.namespace_name, p + ".metadata.namespace", kMaxNamespaceBytes); !s.ok()) return s;
  if (Status s = check_name(m.uid, p + ".metadata.uid", kMaxUidBytes); !s.ok()) return s;
  if (Status s = check_map(m.labels, p + ".metadata.labels", kMaxLabelKeyBytes, kMaxLabelValueBytes); !s.ok()) return s;
  size_t annotations = 0;
  for (const auto& [k, v] : m.annotations) annotations += k.size() + v.size();
  if (annotations > kMaxAnnotationBytes) return too_long(p + ".metadata.annotations", annotations, kMaxAnnotationBytes);
  if (Status s = check_name(pod.node_name, p + ".spec.nodeName"); !s.ok()) return s;
  if (Status s = check_name(pod.nominated_node_name, p + ".status.nominatedNodeName"); !s.ok()) return s;
  if (Status s = check_name(pod.scheduler_name, p + ".spec.schedulerName"); !s.ok()) return s;
  if (Status s = check_containers(pod.containers, p + ".spec.containers"); !s.ok()) return s;
  if (Status s = check_containers(pod.init_containers, p + ".spec.initContainers"); !s.ok()) return s;
  return check_map(pod.overhead, p + ".spec.overhead", kMaxLabelKeyBytes, kMaxQuantityBytes);
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
