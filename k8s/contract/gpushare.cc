#include "k8s/contract/gpushare.h"

#include <charconv>
#include <set>

#include "k8s/contract/codec.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

namespace {

// Capacity first (the extender reads it), allocatable for a node that
// shows none. Absent: 0.
Result<int64_t> node_resource(const Node& node, const std::string& name) {
  const std::string* v = find(node.capacity, name);
  const char* field = "status.capacity";
  if (v == nullptr) {
    v = find(node.allocatable, name);
    field = "status.allocatable";
  }
  if (v == nullptr) return int64_t{0};
  auto q = parse_extended_resource(*v);
  if (!q) return Error{std::string(field) + "[" + name + "]: " + q.message()};
  return *q;
}

}  // namespace

Selection GpushareNames::selection() const {
  // The node's card count is a resource too, read from status.capacity.
  Selection s = selection_of({&index, &device_memory, &pod_memory, &assigned, &assume_time, &cordon}, {gpu_memory, gpu_count});
  s.capacity = true;
  return s;
}

GpushareContract::GpushareContract(GpushareNames names, GpushareOptions options, ForeignProfiles foreign)
    : ProfileContract(profile_name(Profile::kGpushare), std::move(names), options, std::move(foreign)) {
  if (options_.unit_mib != 1) options_.unit_mib = 1024;
}

Result<PodRequest> GpushareContract::pod_request(const Pod& pod) const {
  const std::string& res = names_.gpu_memory;
  const std::string who = "pod " + pod.key();
  if (Status s = foreign_.check_pod(pod, resources_); !s.ok()) return Error{s.message()};
  PodRequest r;
  if (Status s = pod_facts(pod, r); !s.ok()) return Error{s.message()};
  for (const Container& c : pod.init_containers) {
    if (find(c.limits, res) != nullptr || find(c.requests, res) != nullptr) {
      return Error{who + ": init container " + c.name + " asks for " + res +
                   "; gpushare's device plugin matches pods by the gpu-mem of spec.containers only: move it to an app container"};
    }
  }
  ContainerRequest share;
  int asking = 0;
  for (const Container& c : pod.containers) {
    bool named = false;
    auto v = extended_resource(c, res, named);
    if (!v) return with_context(who + ": container " + c.name, v.error());
    if (*v == 0) continue;
    if (*v > (int64_t{1} << 40) / options_.unit_mib) {
      return Error{who + ": container " + c.name + ": resources.limits[" + res + "]: " + std::to_string(*v) +
                   " is out of range (" + unit_name() + ")"};
    }
    if (++asking > 1) {
      return Error{who + ": containers " + share.name + " and " + c.name + " both ask for " + res +
                   "; gpushare's device plugin finds the pod at Allocate by its total gpu-mem and cannot serve two "
                   "containers of one pod: ask in one container"};
    }
    share.name = c.name;
    share.cards = 1;
    share.memory_mib = *v * options_.unit_mib;
  }
  if (asking == 1) r.containers.push_back(std::move(share));
  return r;
}

Result<NodeSpec> GpushareContract::node_spec(const Node& node) const {
  const std::string who = "node " + node.meta.name;
  auto basics = foreign_.node_basics(node);
  if (!basics || !basics->excluded.empty()) return basics;
  NodeSpec spec = std::move(*basics);
  auto total = node_resource(node, names_.gpu_memory);
  if (!total) return Error{who + ": " + total.message()};
  if (*total == 0) return spec;  // not a gpushare node
  auto count = node_resource(node, names_.gpu_count);
  if (!count) return Error{who + ": " + count.message()};
  if (*count == 0) {
    spec.excluded = "node shows " + names_.gpu_memory + " but no " + names_.gpu_count +
                    ": gpushare's device plugin has not reported its cards";
    return spec;
  }
  if (*count > 64) return Error{who + ": " + names_.gpu_count + " " + std::to_string(*count) + " is more than 64 cards"};
  const int64_t per_card = *total / *count;  // the extender's integer division: equal cards
  if (per_card < 1) {
    return Error{who + ": " + names_.gpu_memory + " " + std::to_string(*total) + " over " + std::to_string(*count) +
                 " cards leaves less than 1 " + unit_name() + " a card"};
  }
  if (per_card > (int64_t{1} << 30) / options_.unit_mib) return Error{who + ": " + names_.gpu_memory + " is out of range"};
  for (int i = 0; i < *count; ++i) {
    Card c;
    c.index = i;
    c.memory_mib = per_card * options_.unit_mib;
    spec.cards.push_back(std::move(c));
  }
  if (const std::string* cordon = node.meta.annotation(names_.cordon)) {
    if (Status s = apply_cordons(spec, *cordon, who, names_.cordon); !s.ok()) return Error{s.message()};
  }
  return spec;
}

StringMap GpushareContract::allocation_annotations(const Pod&, const Allocation& allocation, const NodeSpec& node,
                                                   std::chrono::system_clock::time_point now) const {
  int index = 0;
  int64_t memory = 0, card_memory = 0;
  for (const ContainerAllocation& c : allocation.containers) {
    for (const CardShare& s : c.cards) {
      index = s.index;
      memory += s.memory_mib;
    }
  }
  for (const Card& c : node.cards) {
    if (c.index == index) card_memory = c.memory_mib;
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  return {{names_.index, std::to_string(index)},
          {names_.device_memory, std::to_string(card_memory / options_.unit_mib)},
          {names_.pod_memory, std::to_string(memory / options_.unit_mib)},
          {names_.assigned, "false"},
          {names_.assume_time, std::to_string(ns)}};
}

RecordedAllocation GpushareContract::recorded_allocation(const Pod& pod, const NodeSpec* node) const {
  RecordedAllocation out;
  const std::string* idx = pod.meta.annotation(names_.index);
  if (idx == nullptr) return out;
  int64_t index = -1;
  if (!parse_decimal(*idx, index) || index < 0 || index > 1023) {
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = "annotation " + names_.index + ": \"" + *idx + "\" is not a card index";
    return out;
  }
  // The pod's total, in the plugin's unit; without it the card alone is
  // known and the request says how much.
  const std::string* total = pod.meta.annotation(names_.pod_memory);
  int64_t units = -1;
  if (total == nullptr || !parse_decimal(*total, units) || units < 0 || units > (int64_t{1} << 40) / options_.unit_mib) {
    out.kind = RecordedAllocation::Kind::kCards;
    out.cards = {static_cast<int>(index)};
    out.cards_source = "annotation " + names_.index;
    out.problem = total == nullptr ? "annotation " + names_.pod_memory + " is missing"
                                   : "annotation " + names_.pod_memory + ": \"" + *total + "\" is not a non-negative integer";
    return out;
  }
  std::string container;
  for (const Container& c : pod.containers) {
    const std::string* v = find(c.limits, names_.gpu_memory);
    auto units_of = v != nullptr ? parse_extended_resource(*v) : Result<int64_t>(int64_t{0});
    if (units_of && *units_of > 0 && container.empty()) container = c.name;
  }
  if (container.empty()) {
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = "annotation " + names_.index + " is set but no container asks for " + names_.gpu_memory;
    return out;
  }
  if (node == nullptr) {
    out.kind = RecordedAllocation::Kind::kNeedsNode;
    return out;
  }
  if (index >= static_cast<int64_t>(node->cards.size())) {
    out.kind = RecordedAllocation::Kind::kMalformed;
    out.problem = "annotation " + names_.index + ": card " + std::to_string(index) + " is not on node " + pod.node_name +
                  " (" + std::to_string(node->cards.size()) + " cards)";
    return out;
  }
  Allocation a;
  a.node = pod.node_name;
  a.containers.push_back(ContainerAllocation{container, false, {CardShare{static_cast<int>(index), {}, units * options_.unit_mib, 0}}});
  out.kind = RecordedAllocation::Kind::kAllocation;
  out.allocation = std::move(a);
  return out;
}

std::vector<std::string> GpushareContract::config_map_nodes(const ConfigMap& config_map) const {
  std::vector<std::string> nodes;
  if (config_map.meta.namespace_name != names_.unhealthy_namespace) return nodes;
  // Both revisions' names: "unhealthy-gpu-a" is node a's (the later name)
  // and node gpu-a's (the earlier); a mark on both fails safe.
  const std::string& name = config_map.meta.name;
  for (std::string_view prefix : {"unhealthy-gpu-", "unhealthy-"}) {
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) nodes.push_back(name.substr(prefix.size()));
  }
  return nodes;
}

Status GpushareContract::apply_config_map(const ConfigMap& config_map, NodeSpec& spec) const {
  const std::string* gpus = find(config_map.data, names_.unhealthy_key);
  if (gpus == nullptr) return Status::Ok();
  std::string bad;
  for (const std::string& entry : split_list(*gpus, ',')) {
    int index = -1;
    Card* card = nullptr;
    if (parse_decimal(entry, index)) {
      for (Card& c : spec.cards) {
        if (c.index == index) card = &c;
      }
    }
    if (card == nullptr) {
      bad += (bad.empty() ? "" : ", ") + in_quotes(entry);
      continue;
    }
    card->healthy = false;
  }
  if (bad.empty()) return Status::Ok();
  return Error{"configmap " + config_map.meta.namespace_name + "/" + config_map.meta.name + ": data[" + names_.unhealthy_key +
               "]: " + bad + " names no card of node " + spec.name + " (card indices, comma-separated); the other entries apply"};
}

}  // namespace fracpack::k8s
