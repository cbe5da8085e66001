#include "node/records.h"

#include <algorithm>

#include "k8s/contract/kubernetes_rules.h"

namespace fracpack::node {

std::string devices_annotation(const std::vector<GpuDevice>& devices, int slots, bool registered) {
  std::vector<scheduling::Card> cards;
  cards.reserve(devices.size());
  for (const GpuDevice& d : devices) {
    scheduling::Card c;
    c.index = d.index;
    c.uuid = d.uuid;
    c.model = d.model;
    // The contract needs a size: a card NVML could not size is unhealthy.
    c.memory_mib = std::max<int64_t>(d.memory_mib, 1);
    c.numa = d.numa;
    c.healthy = d.healthy && d.memory_mib > 0;
    c.max_sharers = slots;
    cards.push_back(std::move(c));
  }
  return k8s::format_devices(cards, registered);
}

bool asks_devices(const k8s::Pod& pod, const std::string& resource) {
  auto asks_in = [&resource](const std::vector<k8s::Container>& cs) {
    return std::any_of(cs.begin(), cs.end(), [&resource](const k8s::Container& c) {
      const std::string* limit = k8s::find(c.limits, resource);
      return limit != nullptr && *limit != "0";
    });
  };
  return asks_in(pod.init_containers) || asks_in(pod.containers);
}

bool may_wait(const k8s::Pod& pod) { return !pod.node_name.empty() && !pod.terminal() && !pod.meta.deleting && pod.phase != "Running"; }

namespace {

// The containers that ask `resource`, in kubelet's Allocate order.
Result<std::vector<GpuContainer>> gpu_containers(const k8s::Pod& pod, const std::string& resource) {
  std::vector<GpuContainer> out;
  auto add = [&](const k8s::Container& c, bool init) -> Status {
    const std::string* limit = k8s::find(c.limits, resource);
    int n = 0;
    if (limit == nullptr) return Status::Ok();
    if (!k8s::parse_decimal(*limit, n) || n < 0 || n > 64) {
      return Error{"container " + c.name + ": resources.limits[" + resource + "]: " + k8s::in_quotes(*limit) + " is not a device count 0..64"};
    }
    if (n > 0) out.push_back(GpuContainer{c.name, init, n});
    return Status::Ok();
  };
  for (const k8s::Container& c : pod.init_containers) {
    if (Status s = add(c, true); !s.ok()) return Error{s.message()};
  }
  for (const k8s::Container& c : pod.containers) {
    if (Status s = add(c, false); !s.ok()) return Error{s.message()};
  }
  return out;
}

// The pod's record, which must be fracpack's (signed) and for `node`.
Result<scheduling::Allocation> signed_record(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  const std::string& annotation = rules.names.allocation;
  const std::string* record = pod.meta.annotation(annotation);
  if (record == nullptr) return Error{"no annotation " + annotation + " (was it bound by fracpack?)"};
  auto a = k8s::parse_allocation(*record);
  if (!a) return Error{"annotation " + annotation + ": " + a.message()};
  if (a->node != node) return Error{"annotation " + annotation + " names node " + a->node + ", not " + node};
  const std::string message = k8s::record_message(pod.meta.uid, node, {rules.names.allocation, rules.names.indices}, pod.meta.annotations);
  if (auto by = k8s::check_record_signature(pod, message, rules.trust); !by) {
    return Error{"annotation " + annotation + " is not fracpack's: " + by.message()};
  }
  return a;
}

// Each container's cards by the pod's record.
Result<std::vector<std::vector<scheduling::CardShare>>> recorded_cards(const scheduling::Allocation& record,
                                                                       const std::vector<GpuContainer>& containers,
                                                                       const std::string& resource, const std::string& annotation) {
  const scheduling::Allocation* a = &record;
  std::vector<std::vector<scheduling::CardShare>> out;
  for (const GpuContainer& c : containers) {
    auto found = std::find_if(a->containers.begin(), a->containers.end(), [&](const auto& ca) { return ca.name == c.name; });
    if (found == a->containers.end()) return Error{"annotation " + annotation + " has no cards for container " + c.name};
    if (static_cast<int>(found->cards.size()) != c.devices) {
      return Error{"annotation " + annotation + " gives container " + c.name + " " + std::to_string(found->cards.size()) +
                   " card(s), but it asks " + std::to_string(c.devices) + " " + resource};
    }
    out.push_back(found->cards);
  }
  return out;
}

bool ours(const k8s::Pod& pod, const RecordRules& rules) {
  const auto& names = rules.scheduler_names;
  return names.empty() || std::find(names.begin(), names.end(), pod.scheduler_name) != names.end();
}

}  // namespace

WaitingPod waiting_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  WaitingPod w;
  w.uid = pod.meta.uid;
  w.key = pod.key();
  w.creation_timestamp = pod.meta.creation_timestamp;
  auto containers = gpu_containers(pod, rules.resource);
  if (!containers) {
    w.cards = containers.error();
    return w;
  }
  w.containers = std::move(*containers);
  if (!ours(pod, rules)) {
    w.cards = Error{"schedulerName \"" + pod.scheduler_name + "\" is not fracpack's: its cards were not chosen by fracpack"};
    return w;
  }
  auto record = signed_record(pod, rules, node);
  if (!record) {
    w.cards = record.error();
    return w;
  }
  w.cards = recorded_cards(*record, w.containers, rules.resource, rules.names.allocation);
  if (w.cards) w.holding = scheduling::charges_of(*record);
  return w;
}

LivePod live_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  LivePod p{pod.key(), std::nullopt};
  if (!ours(pod, rules)) return p;
  if (auto record = signed_record(pod, rules, node)) p.charges = scheduling::charges_of(*record);
  return p;
}

}  // namespace fracpack::node
