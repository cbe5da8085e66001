// The scheduling model: what a node's GPUs are, what a pod asks for, and what
// it was given. These are plain values, built by the adapters (k8s/ from API
// objects, the replay from trace rows) after validation; the engine trusts them.
//
// Units: card compute is counted in per-mille of one card ("milli", 1000 = the
// whole card; the contract's percent times 10, the openb trace's gpu_milli);
// card memory in MiB; node CPU in millicores; node memory in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack::scheduling {

inline constexpr int kCardMilli = 1000;  // compute of one whole card

// How a card keeps each container within its share (README "Isolation"):
// nothing (kNone: a share is a promise; time-slicing with bookkeeping), the
// vendor's MPS with per-client limits (kMps), HAMi-core's CUDA interception
// (kHamiCore), or a MIG instance, whose whole is the hardware's but whose
// parts nothing divides (kMig). Published by the node's agent per card.
enum class CardIsolation : uint8_t { kNone, kMps, kHamiCore, kMig };
// "none", "mps", "hami-core", "mig".
const char* isolation_name(CardIsolation isolation);
// The inverse; false for any other text.
bool parse_isolation(std::string_view text, CardIsolation& out);

// One GPU card of a node, as discovered (device annotation or GFD labels).
struct Card {
  int index = 0;             // device index the device plugin uses
  std::string uuid;          // "GPU-..." or empty when unknown
  std::string model;         // e.g. "V100M32", "A100-SXM4-80GB"
  int64_t memory_mib = 0;    // total memory of the card
  int numa = 0;              // NUMA node of the card
  bool healthy = true;       // unhealthy cards take no new placements
  bool cordoned = false;     // operator-excluded from new placements
  int max_sharers = 0;       // most container shares the card's agent serves at once (HAMi's split count); 0: no limit
  CardIsolation isolation = CardIsolation::kNone;  // what keeps a container within its share here

  bool schedulable() const { return healthy && !cordoned; }
  // Whether a container's share of the card is held to its memory and
  // compute (MPS or HAMi-core); a MIG instance is whole or nothing.
  bool enforces_shares() const { return isolation == CardIsolation::kMps || isolation == CardIsolation::kHamiCore; }
  bool operator==(const Card&) const = default;
};

// A node as the engine needs it. Cards are sorted by index, indices unique.
struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;     // allocatable CPU
  int64_t memory_bytes = 0;  // allocatable memory
  std::vector<Card> cards;
  // Non-empty: the node takes no placement from this deployment, and this
  // says why (its cards are registered by another contract's node agent).
  std::string excluded;
  // Non-empty: why its cards (cordoned meanwhile) take nothing new now: the
  // node's agent cannot hand them out (its device plugin not registered).
  std::string unavailable;
  // The node's kubelet minor version (1.x), 0 when unknown.
  int kubelet_minor = 0;

  bool operator==(const NodeSpec&) const = default;
};

// What one container asks for on each of its cards.
struct ContainerRequest {
  std::string name;
  bool init = false;         // a (non-sidecar) init container: runs alone, before the app containers
  int cards = 0;             // number of distinct cards, >= 1
  int64_t memory_mib = 0;    // per card, absolute; or
  int memory_percent = 0;    // per card, percent of that card's memory (0..100)
  int cores = 0;             // per card, milli of compute (0..1000); 1000 = exclusive card
  bool alone = false;        // each of its cards must hold no other share (HAMi: 100 % cores)
  bool percent_rounds_down = false;  // a percentage of a card's memory rounds down (HAMi), else up
  // Its share must go on a card that enforces it (Card::enforces_shares):
  // the contract sets it for a share of a card's compute (cores < a whole
  // card) unless the pod or the cluster accepts an unenforced share.
  bool needs_enforcement = false;

  // Memory this container needs on a card of the given size.
  int64_t memory_on(int64_t card_memory_mib) const {
    return memory_mib + (card_memory_mib * memory_percent + (percent_rounds_down ? 0 : 99)) / 100;
  }
  bool operator==(const ContainerRequest&) const = default;
};

// A pod's placement request: node-level CPU/memory (for the policies that
// weigh them, and the replay's feasibility), its GPU containers and constraints.
struct PodRequest {
  std::string uid;
  std::string namespace_name;
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::vector<ContainerRequest> containers;   // only containers that ask for GPUs
  std::vector<std::string> allowed_models;    // empty: any model
  std::vector<std::string> excluded_models;   // never these models
  // How a model list entry matches a card's model: the whole name, or
  // (HAMi's use-gputype) any part of it, ignoring case.
  enum class ModelMatch { kExact, kContainsIgnoringCase };
  ModelMatch model_match = ModelMatch::kExact;
  std::vector<std::string> uuid_allow;        // empty: any card
  std::vector<std::string> uuid_exclude;
  bool numa_single = false;                   // all cards of a container on one NUMA node
  // An init container names a share resource the node does not have (the
  // contract's memory or compute, known only to the extender): kubelets
  // before 1.31 refuse such a pod at admission (kubernetes#124255).
  bool init_names_unknown_resources = false;
  // How the pod would accept an unenforced share (the contract's words, for
  // a refusal's reason: "annotation fracpack.io/isolation: none"); set
  // with ContainerRequest::needs_enforcement.
  std::string unenforced_opt_in;

  bool wants_gpu() const { return !containers.empty(); }
  std::string key() const { return namespace_name + "/" + name; }
};

// One card's share given to one container.
struct CardShare {
  int index = 0;
  std::string uuid;
  int64_t memory_mib = 0;
  int cores = 0;  // milli
  bool operator==(const CardShare&) const = default;
};

struct ContainerAllocation {
  std::string name;
  bool init = false;
  std::vector<CardShare> cards;
  bool operator==(const ContainerAllocation&) const = default;
};

// The placement of one pod: the record written to the pod's annotation.
struct Allocation {
  std::string node;
  std::vector<ContainerAllocation> containers;
  bool operator==(const Allocation&) const = default;
};

// What a pod holds on one card. App containers run together, init containers
// one at a time before them, so the pod's hold is, per dimension, the max of
// (sum over app containers, each init container): Kubernetes' effective-request
// rule applied card by card. `shares` counts container shares the same way
// (what a card's sharer limit counts).
struct CardCharge {
  int index = 0;
  int64_t memory_mib = 0;
  int cores = 0;
  int shares = 0;
  bool operator==(const CardCharge&) const = default;
};

// Charges of an allocation, sorted by card index.
std::vector<CardCharge> charges_of(const Allocation& allocation);
// The card indices an allocation holds, sorted and distinct, as "0,3".
std::string card_indices_text(const Allocation& allocation);

}  // namespace fracpack::scheduling
