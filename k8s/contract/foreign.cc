#include "k8s/contract/foreign.h"

#include "k8s/contract/kubernetes_rules.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

ForeignProfiles::ForeignProfiles(std::string serving, std::vector<ForeignProfile> others)
    : serving_(std::move(serving)), others_(std::move(others)) {}

void ForeignProfiles::extend(Selection& selection) const {
  auto add = [](std::vector<std::string>& to, const std::string& v) {
    for (const auto& x : to) {
      if (x == v) return;
    }
    to.push_back(v);
  };
  for (const ForeignProfile& p : others_) {
    for (const auto& a : p.node_annotations) add(selection.annotation_prefixes, a);
    for (const auto& r : p.node_resources) add(selection.resources, r);
    // A plugin's resources stay in capacity when allocatable drops to 0
    // (its cards unhealthy, its endpoint restarting): the mark is read there too.
    if (!p.node_resources.empty()) selection.capacity = true;
    for (const auto& r : p.pod_resources) add(selection.resources, r);
  }
}

std::string ForeignProfiles::node_owner(const Node& node) const {
  for (const ForeignProfile& p : others_) {
    std::string mark;
    for (const auto& a : p.node_annotations) {
      if (node.meta.annotation(a) != nullptr) mark = "annotation " + a;
    }
    for (const auto& r : p.node_resources) {
      for (const StringMap* m : {&node.capacity, &node.allocatable}) {
        const std::string* v = find(*m, r);
        if (v == nullptr || !mark.empty()) continue;
        auto q = parse_extended_resource(*v);
        if (!q || *q > 0) mark = "resource " + r;  // an unreadable count is not proof of absence
      }
    }
    if (!mark.empty()) {
      return "node's GPUs are registered by the " + p.name + " profile's node agent (" + mark +
             "); this fracpack serves the " + serving_ +
             " profile and leaves the node alone (remove the mark if that agent is gone)";
    }
  }
  return {};
}

Result<scheduling::NodeSpec> ForeignProfiles::node_basics(const Node& node) const {
  scheduling::NodeSpec spec;
  if (Status s = node_allocatable(node, spec); !s.ok()) return Error{s.message()};
  spec.excluded = node_owner(node);
  return spec;
}

Status ForeignProfiles::check_pod(const Pod& pod, const std::vector<std::string>& own) const {
  if (!names_any_resource(pod, own)) return Status::Ok();
  for (const ForeignProfile& p : others_) {
    for (const auto& r : p.pod_resources) {
      if (names_resource(pod, r)) {
        return Error{"pod " + pod.key() + ": asks for " + r + " (the " + p.name + " profile) beside the " + serving_ +
                     " profile's resources; one pod is served by one node agent: ask with one profile's resources"};
      }
    }
  }
  return Status::Ok();
}

}  // namespace fracpack::k8s
