#include "k8s/contract/kubernetes_rules.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "scheduling/fit.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {



Result<int64_t> extended_resource(const Container& c, const std::string& name, bool& named) {
  const std::string* limit = find(c.limits, name);
  const std::string* request = find(c.requests, name);
  named = limit != nullptr || request != nullptr;
  if (!named) return int64_t{0};
  if (limit == nullptr) return Error{"resources.requests[" + name + "]: a limit must be set (requests must equal limits)"};
  auto v = parse_extended_resource(*limit);
  if (!v) return Error{"resources.limits[" + name + "]: " + v.message()};
  if (request != nullptr) {
    auto r = parse_extended_resource(*request);
    if (!r) return Error{"resources.requests[" + name + "]: " + r.message()};
    if (*r != *v) {
      return Error{"resources.requests[" + name + "] (" + *request + ") must equal resources.limits (" + *limit + ")"};
    }
  }
  return v;
}

const std::string& named_resource(const Container& c, const std::vector<std::string>& resources) {
  static const std::string kNone;
  for (const std::string& r : resources) {
    if (find(c.limits, r) != nullptr || find(c.requests, r) != nullptr) return r;
  }
  return kNone;
}

const std::string& named_resource(const Pod& pod, const std::vector<std::string>& resources) {
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const Container& c : *list) {
      if (const std::string& r = named_resource(c, resources); !r.empty()) return r;
    }
  }
  static const std::string kNone;
  return kNone;
}

bool names_any_resource(const Pod& pod, const std::vector<std::string>& resources) { return !named_resource(pod, resources).empty(); }

bool names_resource(const Pod& pod, const std::string& resource) {
  auto names_it = [&](const Container& c) { return find(c.limits, resource) != nullptr || find(c.requests, resource) != nullptr; };
  return std::any_of(pod.containers.begin(), pod.containers.end(), names_it) ||
         std::any_of(pod.init_containers.begin(), pod.init_containers.end(), names_it);
}

namespace {

// requests.cpu (or the limit, which Kubernetes copies into a missing request).
Result<int64_t> node_resource(const Container& c, const std::string& name, bool cpu) {
  const std::string* v = find(c.requests, name);
  if (v == nullptr) v = find(c.limits, name);
  if (v == nullptr) return int64_t{0};
  auto r = cpu ? parse_cpu_milli(*v) : parse_memory_bytes(*v);
  if (!r) return Error{"resources.requests[" + name + "]: " + r.message()};
  return r;
}

}  // namespace

Result<int64_t> effective_request(const Pod& pod, const std::string& name, bool cpu) {
  int64_t app = 0, sidecars = 0, init = 0;
  for (const Container& c : pod.containers) {
    auto v = node_resource(c, name, cpu);
    if (!v) return with_context("container " + c.name, v.error());
    app += *v;
  }
  for (const Container& c : pod.init_containers) {
    auto v = node_resource(c, name, cpu);
    if (!v) return with_context("init container " + c.name, v.error());
    if (c.restart_always) {
      sidecars += *v;
      init = std::max(init, sidecars);
    } else {
      init = std::max(init, sidecars + *v);
    }
  }
  int64_t total = std::max(app + sidecars, init);
  if (const std::string* o = find(pod.overhead, name)) {
    auto v = cpu ? parse_cpu_milli(*o) : parse_memory_bytes(*o);
    if (!v) return Error{"spec.overhead[" + name + "]: " + v.message()};
    total += *v;
  }
  return total;
}

Status pod_facts(const Pod& pod, scheduling::PodRequest& r) {
  const std::string who = "pod " + pod.key();
  r.uid = pod.meta.uid;
  r.namespace_name = pod.meta.namespace_name;
  r.name = pod.meta.name;
  auto cpu = effective_request(pod, "cpu", true);
  if (!cpu) return with_context(who, cpu.error());
  auto mem = effective_request(pod, "memory", false);
  if (!mem) return with_context(who, mem.error());
  r.cpu_milli = *cpu;
  r.memory_bytes = *mem;
  return Status::Ok();
}

Status node_allocatable(const Node& node, scheduling::NodeSpec& spec) {
  const std::string who = "node " + node.meta.name;
  spec.name = node.meta.name;
  if (const std::string* cpu = find(node.allocatable, "cpu")) {
    auto v = parse_cpu_milli(*cpu);
    if (!v) return Error{who + ": status.allocatable[cpu]: " + v.message()};
    spec.cpu_milli = *v;
  }
  if (const std::string* mem = find(node.allocatable, "memory")) {
    auto v = parse_memory_bytes(*mem);
    if (!v) return Error{who + ": status.allocatable[memory]: " + v.message()};
    spec.memory_bytes = *v;
  }
  return Status::Ok();
}

Result<ShareResources> share_resources(const Container& c, const std::string& count, const std::string& memory,
                                       const std::string& percent, const std::string& cores) {
  ShareResources r;
  for (auto [name, value, named] : {std::tuple{&count, &r.count, &r.has_count}, std::tuple{&memory, &r.memory, &r.has_memory},
                                    std::tuple{&percent, &r.percent, &r.has_percent}, std::tuple{&cores, &r.cores, &r.has_cores}}) {
    auto v = extended_resource(c, *name, *named);
    if (!v) return v.error();
    *value = *v;
  }
  if (r.has_count && r.count == 0 && r.names_share()) return Error{"resources.limits[" + count + "] is 0 but a GPU share is named"};
  if (r.count > static_cast<int64_t>(scheduling::Picks::kMax)) {
    return Error{"resources.limits[" + count + "]: " + std::to_string(r.count) + " cards is more than the maximum of 64"};
  }
  return r;
}

std::string name_domain(const std::string& name) {
  const size_t slash = name.find('/');
  return slash == std::string::npos ? name : name.substr(0, slash + 1);
}

Selection selection_of(std::initializer_list<const std::string*> annotations, std::vector<std::string> resources) {
  std::set<std::string> prefixes;
  for (const std::string* a : annotations) prefixes.insert(name_domain(*a));
  Selection s;
  s.annotation_prefixes.assign(prefixes.begin(), prefixes.end());
  s.resources = {"cpu", "memory"};
  s.resources.insert(s.resources.end(), resources.begin(), resources.end());
  return s;
}

int kubelet_minor(std::string_view v) {
  if (v.size() < 4 || v.substr(0, 3) != "v1.") return 0;
  int minor = 0;
  size_t i = 3;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9' && i < 7) minor = minor * 10 + (v[i++] - '0');
  return i == 3 ? 0 : minor;
}

}  // namespace fracpack::k8s
