#include "node/records.h"

#include <charconv>

namespace fracpack::node {

std::string devices_annotation(const std::vector<GpuDevice>& devices, int slots) {
  std::vector<scheduling::Card> cards;
  cards.reserve(devices.size());
  for (const GpuDevice& d : devices) {
    scheduling::Card c;
    c.index = d.index;
    c.uuid = d.uuid;
    c.model = d.model;
    c.memory_mib = d.memory_mib;
    c.numa = d.numa;
    c.healthy = d.healthy && d.memory_mib > 0;
    c.memory_mib = std::max<int64_t>(c.memory_mib, 1);  // the contract needs a size; an unreadable card is unhealthy anyway
    c.max_sharers = slots;
    cards.push_back(std::move(c));
  }
  return k8s::format_devices(cards);
}

bool may_wait(const k8s::Pod& pod) { return !pod.node_name.empty() && !pod.terminal() && !pod.meta.deleting && pod.phase != "Running"; }

WaitingPod waiting_pod(const k8s::Pod& pod, const std::string& resource, const k8s::ContractNames& names, const std::string& node) {
  WaitingPod w;
  w.uid = pod.meta.uid;
  w.key = pod.key();
  w.creation_timestamp = pod.meta.creation_timestamp;
  std::vector<const k8s::Container*> asking;
  auto add = [&](const k8s::Container& c, bool init) -> Status {
    const std::string* limit = k8s::find(c.limits, resource);
    if (limit == nullptr) return Status::Ok();
    int n = 0;
    auto [p, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (ec != std::errc() || p != limit->data() + limit->size() || n < 0 || n > 64) {
      return Error{"container " + c.name + ": resources.limits[" + resource + "]: \"" + *limit + "\" is not a device count 0..64"};
    }
    if (n == 0) return Status::Ok();
    w.containers.push_back(GpuContainer{c.name, init, n});
    return Status::Ok();
  };
  for (const k8s::Container& c : pod.init_containers) {
    if (Status s = add(c, true); !s.ok()) {
      w.cards = Error{s.message()};
      return w;
    }
  }
  for (const k8s::Container& c : pod.containers) {
    if (Status s = add(c, false); !s.ok()) {
      w.cards = Error{s.message()};
      return w;
    }
  }
  const std::string* record = pod.meta.annotation(names.allocation);
  if (record == nullptr) {
    w.cards = Error{"no annotation " + names.allocation + " (was it bound by fracpack?)"};
    return w;
  }
  auto a = k8s::parse_allocation(*record);
  if (!a) {
    w.cards = Error{"annotation " + names.allocation + ": " + a.message()};
    return w;
  }
  if (a->node != node) {
    w.cards = Error{"annotation " + names.allocation + " names node " + a->node + ", not " + node};
    return w;
  }
  std::vector<std::vector<scheduling::CardShare>> cards;
  for (const GpuContainer& c : w.containers) {
    const scheduling::ContainerAllocation* found = nullptr;
    for (const auto& ca : a->containers) {
      if (ca.name == c.name) found = &ca;
    }
    if (found == nullptr) {
      w.cards = Error{"annotation " + names.allocation + " has no cards for container " + c.name};
      return w;
    }
    if (static_cast<int>(found->cards.size()) != c.devices) {
      w.cards = Error{"annotation " + names.allocation + " gives container " + c.name + " " + std::to_string(found->cards.size()) +
                      " card(s), but it asks " + std::to_string(c.devices) + " " + resource};
      return w;
    }
    cards.push_back(found->cards);
  }
  w.cards = std::move(cards);
  return w;
}

}  // namespace fracpack::node
