#include "k8s/contract/tke.h"

#include "k8s/contract/codec.h"
#include "scheduling/fit.h"
#include "scheduling/quantity.h"

namespace fracpack::k8s {

namespace {

// fracpack's names with the device resource kubelet counts on a tke node:
// the node side reads "allocatable 0" of it, the agent registers it.
ContractNames node_side_names(const TkeNames& n) {
  ContractNames c = n.fracpack;
  c.gpu = n.vcuda_core;
  return c;
}

constexpr int64_t kMaxCores = TkeContract::kCardPercent * static_cast<int64_t>(scheduling::Picks::kMax);

// A container's request, or none (cards == 0) when it names neither resource.
Result<ContainerRequest> container_request(const Container& c, bool init, const TkeNames& n) {
  ContainerRequest r;
  r.name = c.name;
  r.init = init;
  bool has_core = false, has_memory = false;
  auto core = extended_resource(c, n.vcuda_core, has_core);
  if (!core) return core.error();
  auto memory = extended_resource(c, n.vcuda_memory, has_memory);
  if (!memory) return memory.error();
  if (!has_core || *core == 0) {
    if (has_memory && *memory != 0) {
      return Error{"resources.limits[" + n.vcuda_memory + "] without " + n.vcuda_core +
                   ": kubelet asks the node agent for a card only for " + n.vcuda_core + " (GPUManager refuses it too); add " +
                   n.vcuda_core + ": 1..99 for a share of one card"};
    }
    return r;  // no GPU for this container
  }
  const std::string core_field = "resources.limits[" + n.vcuda_core + "]: ";
  if (*core < 0) return Error{core_field + std::to_string(*core) + " is negative"};
  if (*core > kMaxCores) {
    return Error{core_field + std::to_string(*core) + " is more than " + std::to_string(scheduling::Picks::kMax) +
                 " whole cards (percent of a card, 100 a card)"};
  }
  if (*core >= TkeContract::kCardPercent) {
    if (*core % TkeContract::kCardPercent != 0) {
      return Error{core_field + std::to_string(*core) +
                   " is above 100 and not a multiple of 100: whole cards are 100, 200, ...; a share of one card is 1..99 (as GPUManager)"};
    }
    // Whole cards: GPUManager gives the whole card whatever vcuda-memory says.
    r.cards = static_cast<int>(*core / TkeContract::kCardPercent);
    r.cores = scheduling::kCardMilli;
    r.memory_percent = 100;
    return r;
  }
  const std::string memory_field = "resources.limits[" + n.vcuda_memory + "]";
  if (!has_memory || *memory == 0) {
    return Error{core_field + std::to_string(*core) + " is a share of one card and needs " + memory_field +
                 " (256 MiB blocks: 4 is 1 GiB), as GPUManager's share mode does"};
  }
  if (*memory < 0 || *memory > (int64_t{1} << 40) / TkeContract::kBlockMib) {
    return Error{memory_field + ": " + std::to_string(*memory) + " is out of range (256 MiB blocks)"};
  }
  r.cards = 1;
  r.cores = static_cast<int>(*core) * 10;
  r.memory_mib = *memory * TkeContract::kBlockMib;
  return r;
}

}  // namespace

Selection TkeNames::selection() const {
  Selection s = node_side_names(*this).selection();
  for (const std::string* r : {&vcuda_core, &vcuda_memory}) {
    if (!s.keep_resource(*r)) s.resources.push_back(*r);
  }
  // kubelet's count of vcuda-core, and GPUManager's nodes by it.
  s.capacity = true;
  return s;
}

TkeContract::TkeContract(TkeNames names, ForeignProfiles foreign, FracpackOptions options)
    : ProfileContract(profile_name(Profile::kTke), std::move(names), options, foreign), node_side_(node_side_names(names_), std::move(foreign), options) {}

Result<int> TkeContract::cards_of_devices(int64_t devices) const {
  if (devices >= 1 && devices < kCardPercent) return 1;
  if (devices >= kCardPercent && devices <= kMaxCores && devices % kCardPercent == 0) return static_cast<int>(devices / kCardPercent);
  return Error{std::to_string(devices) + " is not a share of one card (1..99) or whole cards (100, 200, ... 6400)"};
}

Result<PodRequest> TkeContract::pod_request(const Pod& pod) const {
  const std::string who = "pod " + pod.key();
  if (Status s = foreign_.check_pod(pod, resources_); !s.ok()) return Error{s.message()};
  PodRequest r;
  if (Status s = pod_facts(pod, r); !s.ok()) return Error{s.message()};
  size_t total_cards = 0;
  auto add = [&](const Container& c, bool init) -> Status {
    auto cr = container_request(c, init, names_);
    if (!cr) return with_context(who + ": " + (init ? "init container " : "container ") + c.name, cr.error());
    if (cr->cards > 0) {
      total_cards += static_cast<size_t>(cr->cards);
      r.containers.push_back(std::move(*cr));
    }
    return Status::Ok();
  };
  for (const Container& c : pod.init_containers) {
    // Sidecars run beside the app containers: they count as app containers.
    if (Status s = add(c, !c.restart_always); !s.ok()) return Error{s.message()};
    // vcuda-memory is no node resource; kubelets before 1.31 refuse an init
    // container naming one.
    if (find(c.limits, names_.vcuda_memory) != nullptr || find(c.requests, names_.vcuda_memory) != nullptr) {
      r.init_names_unknown_resources = true;
    }
  }
  for (const Container& c : pod.containers) {
    if (Status s = add(c, false); !s.ok()) return Error{s.message()};
  }
  if (total_cards > scheduling::Picks::kMax) {
    return Error{who + ": asks for " + std::to_string(total_cards) + " card shares in all; the maximum is 64"};
  }
  if (Status s = read_placement_annotations(pod, names_.fracpack, options_, r); !s.ok()) return Error{s.message()};
  return r;
}

Result<NodeSpec> TkeContract::node_spec(const Node& node) const {
  const std::string who = "node " + node.meta.name;
  const std::string* devices = node.meta.annotation(names_.fracpack.devices);
  // kubelet's count of vcuda-core: capacity stays when allocatable drops to 0.
  const std::string* counted = find(node.capacity, names_.vcuda_core);
  if (counted == nullptr) counted = find(node.allocatable, names_.vcuda_core);
  if (devices == nullptr) {
    auto spec = foreign_.node_basics(node);
    if (!spec || !spec->excluded.empty()) return spec;
    if (counted != nullptr) {
      auto q = parse_extended_resource(*counted);
      if (!q || *q > 0) {
        spec->excluded = "node's " + names_.vcuda_core + " is served by another device plugin (GPUManager's?): fracpack's node agent "
                         "has not published annotation " + names_.fracpack.devices +
                         "; fracpack leaves the node alone until its agent replaces that plugin";
      }
    }
    return spec;  // no cards (GFD labels are not read: they are on GPUManager's nodes too)
  }
  auto spec = node_side_.node_spec(node);
  if (!spec || !spec->excluded.empty() || !spec->unavailable.empty() || spec->cards.empty()) return spec;
  if (counted == nullptr) {
    // kubelet admits a pod whose extended resource its node does not
    // advertise without asking any device plugin: the pod would run
    // with no card chosen by fracpack, or all of them (NVIDIA_VISIBLE_DEVICES=all).
    for (auto& c : spec->cards) c.cordoned = true;
    spec->unavailable = "kubelet counts no " + names_.vcuda_core +
                        " on this node: the node agent serves another resource or has not registered (run it with contract.profile: tke); "
                        "no card is offered until it does";
  }
  return spec;
}

}  // namespace fracpack::k8s
