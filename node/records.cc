#include "node/records.h"

#include <algorithm>

#include "k8s/contract/kubernetes_rules.h"
#include "scheduling/fit.h"

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
    c.healthy = d.usable() && d.memory_mib > 0;
    c.max_sharers = slots;
    c.isolation = d.isolation;
    cards.push_back(std::move(c));
  }
  return k8s::format_devices(cards, registered);
}

bool kubelet_allocates(const k8s::Container& container, const std::string& device_resource) {
  const std::string* limit = k8s::find(container.limits, device_resource);
  return limit != nullptr && *limit != "0";
}

bool asks_devices(const k8s::Pod& pod, const std::string& device_resource) {
  auto asks_in = [&device_resource](const std::vector<k8s::Container>& cs) {
    return std::any_of(cs.begin(), cs.end(), [&device_resource](const k8s::Container& c) { return kubelet_allocates(c, device_resource); });
  };
  return asks_in(pod.init_containers) || asks_in(pod.containers);
}

const k8s::Contract& contract_of(const RecordRules& rules) {
  static const k8s::FracpackContract kDefault;
  return rules.contract ? *rules.contract : kDefault;
}

bool failed_at_allocate(const k8s::Pod& pod) { return pod.phase == "Failed" && pod.reason == "UnexpectedAdmissionError"; }

bool may_wait(const k8s::Pod& pod) { return !pod.node_name.empty() && !pod.terminal() && !pod.meta.deleting && pod.phase != "Running"; }

namespace {

// The containers kubelet allocates, in its Allocate order (init
// containers, sidecars among them, then app containers), each with the
// count of devices it names (Kubernetes' rule for an extended resource,
// the contract's too). Built from what kubelet will do, not from the
// contract's request: a pod the contract cannot read must still take its
// turn and be refused in it, or kubelet's call for it would be matched to
// another pod's cards (test/server/tenant_attacks_test.cc).
Result<std::vector<GpuContainer>> gpu_containers(const k8s::Pod& pod, const k8s::Contract& contract) {
  const std::string resource = contract.device_resource();
  std::vector<GpuContainer> out;
  auto add = [&](const k8s::Container& c, bool init) -> Status {
    if (!kubelet_allocates(c, resource)) return Status::Ok();
    bool named = false;
    auto count = k8s::extended_resource(c, resource, named);
    if (!count) return Error{"container " + c.name + ": " + count.message()};
    // The contract's unit: one ID a card (fracpack.io/gpu), or percent of a card (tke).
    if (auto cards = contract.cards_of_devices(*count); !cards) {
      return Error{"container " + c.name + ": resources.limits[" + resource + "]: " + cards.message()};
    }
    // A sidecar runs beside the app containers (the contract counts it so).
    out.push_back(GpuContainer{c.name, init && !c.restart_always, static_cast<int>(*count), SpecSettings{c.env, c.env_from, c.mount_paths}});
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

// The pod's record as the contract reads it, which must be fracpack's
// (signed) and for `node`.
Result<scheduling::Allocation> signed_record(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  const k8s::Contract& contract = contract_of(rules);
  const std::vector<std::string> keys = contract.record_keys();
  const std::string& annotation = keys.front();
  k8s::RecordedAllocation record = contract.recorded_allocation(pod, nullptr);
  switch (record.kind) {
    case k8s::RecordedAllocation::Kind::kAllocation:
      break;
    case k8s::RecordedAllocation::Kind::kMalformed:
      return Error{record.problem};
    case k8s::RecordedAllocation::Kind::kCards:
      // Only the flat card list: the extender infers from it, the agent
      // serves only the full record its extender writes.
      if (!record.problem.empty()) return Error{record.problem};
      [[fallthrough]];
    case k8s::RecordedAllocation::Kind::kNone:
    case k8s::RecordedAllocation::Kind::kNeedsNode:
      return Error{"no annotation " + annotation + " (was it bound by fracpack?)"};
  }
  scheduling::Allocation& a = record.allocation;
  // (The contract compared it with the pod's node already; the agent's node is checked too.)
  if (a.node != node) return Error{"annotation " + annotation + " names node " + a.node + ", not " + node};
  const std::string message = k8s::record_message(pod.meta.uid, node, keys, pod.meta.annotations);
  if (auto by = k8s::check_record_signature(pod, message, rules.trust); !by) {
    return Error{"annotation " + annotation + " is not fracpack's: " + by.message()};
  }
  return std::move(a);
}

// Each container's cards by the pod's record.
Result<std::vector<std::vector<scheduling::CardShare>>> recorded_cards(const scheduling::Allocation& record,
                                                                       const std::vector<GpuContainer>& containers,
                                                                       const k8s::Contract& contract) {
  const std::string resource = contract.device_resource();
  const std::string annotation = contract.record_keys().front();
  const scheduling::Allocation* a = &record;
  std::vector<std::vector<scheduling::CardShare>> out;
  for (const GpuContainer& c : containers) {
    auto found = std::find_if(a->containers.begin(), a->containers.end(), [&](const auto& ca) { return ca.name == c.name; });
    if (found == a->containers.end()) return Error{"annotation " + annotation + " has no cards for container " + c.name};
    // gpu_containers checked the count.
    const auto asked = contract.cards_of_devices(c.devices);
    const int cards = asked ? *asked : 0;
    if (static_cast<int>(found->cards.size()) != cards) {
      return Error{"annotation " + annotation + " gives container " + c.name + " " + std::to_string(found->cards.size()) +
                   " card(s), but it asks " + std::to_string(c.devices) + " " + resource +
                   (cards == c.devices ? std::string() : " (" + std::to_string(cards) + " card(s))")};
    }
    out.push_back(found->cards);
  }
  return out;
}

bool ours(const k8s::Pod& pod, const RecordRules& rules) { return k8s::placed_by_fracpack(pod.scheduler_name, rules.scheduler_names); }

}  // namespace

WaitingPod waiting_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  WaitingPod w;
  w.uid = pod.meta.uid;
  w.key = pod.key();
  w.creation_timestamp = pod.meta.creation_timestamp;
  const k8s::Contract& contract = contract_of(rules);
  auto containers = gpu_containers(pod, contract);
  if (!containers) {
    w.cards = containers.error();
    return w;
  }
  w.containers = std::move(*containers);
  // The extender's reading of the pod: one it cannot read it never placed.
  auto request = contract.pod_request(pod);
  if (!request) {
    w.cards = request.error();
    return w;
  }
  // Which shares must be alone on their cards (the agent's account judges
  // them by the extender's rule, scheduling::share_within_capacity).
  for (GpuContainer& c : w.containers) {
    for (const scheduling::ContainerRequest& r : request->containers) {
      if (r.name == c.name) c.alone = r.alone;  // (names are unique across a pod's containers)
    }
  }
  if (!ours(pod, rules)) {
    w.cards = Error{"schedulerName \"" + pod.scheduler_name + "\" is not fracpack's: its cards were not chosen by fracpack"};
    return w;
  }
  auto record = signed_record(pod, rules, node);
  if (!record) {
    w.cards = record.error();
    return w;
  }
  w.cards = recorded_cards(*record, w.containers, contract);
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
