// Which container is kubelet admitting? kubelet's Allocate carries device
// IDs only (../shared/reference/node-side.md §B1.3, §B2): the agent finds the container from
// the allocation records the extender wrote at bind (fracpack.io/allocation)
// on the pods bound to its node, and answers with exactly the cards the
// record names, or refuses.
//
// What is known for certain: kubelet admits one pod at a time and, within a
// pod, allocates its containers in order (init containers, then app
// containers; only those asking the device resource), one Allocate each.
// So once a pod's first container is identified, the pod's next Allocate
// calls are its next containers (a refusal of ours ends the pod's
// admission). The first container is identified by the number of devices
// kubelet asks for, among the pods still waiting, and then by the order
// kubelet admits pods in: the order their binds reach it. kubelet's pod
// source and the agent's pod watch are the same query (spec.nodeName=<node>)
// on the same ordered stream, and kubelet takes each added pod as one
// update, so the pod the agent saw bound first is the one kubelet admits
// first (`arrival`). Pods the agent first saw in one list (its start, a
// relist) have no known order among themselves:
//
//   one candidate                 it.
//   several, one seen first       it, unless another is older on other
//                                 cards (kubelet takes pods that reach it
//                                 together, after its own relist or
//                                 restart, oldest first): refused.
//   several seen together,        the oldest: equivalent pods (the same
//     all equivalent              remaining containers on the same cards
//                                 with the same shares) get the same cards,
//                                 so the choice cannot differ from the
//                                 extender's.
//   several seen together,        refused, naming them: handing one pod
//     not equivalent              another's cards would put the ledger and
//                                 the cards out of step for good: when one
//                                 leaves, the wrong card is freed. kubelet
//                                 reports the refusal on the pod.
//   the first is a pod whose      refused at once, naming it (its record is
//     record cannot serve         missing, forged, another's): it is
//                                 kubelet's turn, and it is passed over
//                                 from then on (kubelet fails it). Waiting
//                                 for a pod that can be served would hand
//                                 that pod's cards to it.
//   none                          refused: no record names this container
//                                 (the caller waits for its pod watch first).
//
// What this cannot see: a pod kubelet rejects before its devices are
// allocated (an eviction or sysctl admission handler runs first) stays a
// candidate until its status says Failed; the next pod's Allocate in that
// window would be matched to it. Those handlers reject pods the scheduler
// should not have bound (node pressure); the window is one status update.
// And kubelet's own relist (its watch expired) hands it the pods bound
// meanwhile at once, sorted by creation time, ties in no set order: pods
// created in the same second, bound during that relist, on different
// cards, are taken in the agent's arrival order, which kubelet may not
// follow.
//
// Pure and deterministic: the agent feeds it the pods and serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::node {

// What a container's spec sets itself that a limiter cares about: it may
// not lift its own limit (k8s/limiter_guard.h; checked at Allocate).
struct SpecSettings {
  std::vector<std::string> env;          // env[].name
  std::vector<std::string> env_from;     // envFrom[].prefix
  std::vector<std::string> mount_paths;  // volumeMounts[].mountPath
  bool operator==(const SpecSettings&) const = default;
};

// A container that asks kubelet for the agent's devices.
struct GpuContainer {
  std::string name;
  bool init = false;
  int devices = 0;  // resources.limits[<resource>]: how many IDs kubelet allocates
  SpecSettings spec;
  // Each of its cards must hold no other share (the contract's request:
  // HAMi's 100 % cores), as the extender placed it.
  bool alone = false;
};

// A pod bound to this node that has not started yet.
struct WaitingPod {
  std::string uid;
  std::string key;                 // namespace/name
  std::string creation_timestamp;  // RFC 3339: kubelet sorts pods that arrive together by it
  // When the agent first saw the pod bound to its node (a sequence number;
  // pods first seen in one list share theirs).
  uint64_t arrival = 0;
  std::vector<GpuContainer> containers;  // in kubelet's Allocate order
  // The record's cards per container (same order), or why the record
  // cannot serve (missing, malformed, another node, a container missing,
  // not signed by fracpack's extender, another scheduler's pod).
  Result<std::vector<std::vector<scheduling::CardShare>>> cards = Error{"no allocation record"};
  // What the whole record holds per card (scheduling::charges_of): what
  // the pod holds once kubelet admits it. Empty when `cards` is an error.
  std::vector<scheduling::CardCharge> holding;
};

// What a pod on the node holds per card, for the agent's own account.
struct Holding {
  std::string key;  // namespace/name, for the agent's log
  std::vector<scheduling::CardCharge> charges;
  bool operator==(const Holding&) const = default;
};

// A pod bound to the node that no longer waits (running, or being
// deleted): it holds what the agent served it, or else what its record
// says when fracpack signed it (`charges` empty: nothing known).
struct LivePod {
  std::string key;
  std::optional<std::vector<scheduling::CardCharge>> charges;
};

struct Assignment {
  std::string pod_uid;
  std::string pod_key;
  std::string container;
  std::vector<scheduling::CardShare> cards;
  SpecSettings spec;  // the container's own settings
  bool alone = false;  // GpuContainer::alone
};

class AllocationMatcher {
 public:
  // The pods waiting on the node and the other live pods there (the agent's
  // pod watch): pods in neither are gone, and what they held is forgotten.
  void set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live = {});
  // The container kubelet allocates `devices` IDs to, marked as served.
  Result<Assignment> allocate(int devices);
  // What allocate would answer, without serving it (GetPreferredAllocation).
  Result<Assignment> peek(int devices) const;

  // Whether an allocate(devices) refusal is for want of a candidate (a
  // later pod event may bring it) rather than ambiguity.
  bool lacks_candidate(int devices) const;

  // When allocate(devices) would refuse because the pod whose turn it is
  // has a record that cannot serve: that pod's UID and key (the caller
  // confirms it still waits, and excludes it otherwise).
  std::optional<std::pair<std::string, std::string>> unservable_turn(int devices) const;

  // kubelet restarted: it sees every pod bound so far at once, so their
  // arrival order no longer says which it admits first.
  void merge_arrivals();

  // The API server showed this pod gone, finished, being deleted or
  // changed since the watch saw it, or the agent refused its Allocate (so
  // kubelet fails it): it is no candidate, and is not continued, while it
  // waits. `refusal`: what the agent refused it with, answered again when
  // kubelet asks again while no other pod waits.
  void exclude(const std::string& uid, const std::string& refusal = "");
  // allocate() served this pod's container, but the agent could not build
  // its answer (its limiter refused it, a card turned unusable meanwhile):
  // kubelet fails the pod, so the serve is taken back and the pod excluded
  // with `refusal` — otherwise the next pod's Allocate would continue this
  // one (its next container's cards).
  void refuse_served(const std::string& uid, const std::string& refusal);

  // The agent's account: per card, what the live pods other than `uid`
  // hold — those it served (holdings()) and those running with a record
  // fracpack signed.
  std::map<int, scheduling::CardCharge> held_by_others(const std::string& uid) const;
  // The pods served at least one container, with what their record holds.
  const std::map<std::string, Holding>& holdings() const { return holdings_; }

  // Containers served per pod UID (the agent persists it across restarts).
  const std::map<std::string, int>& served() const { return served_; }
  void restore(std::map<std::string, int> served, std::string last_uid, std::map<std::string, Holding> holdings = {});
  const std::string& last_uid() const { return last_uid_; }
  size_t pods() const { return pods_.size(); }

 private:
  // The pod and its next container index for `devices`.
  // `refused_uid`: set when the refusal is the turn of a pod whose record
  // cannot serve.
  Result<std::pair<const WaitingPod*, size_t>> find(int devices, std::string* refused_uid) const;
  // The pods waiting to begin admission with a container asking `devices`,
  // their records usable or not.
  std::vector<const WaitingPod*> first_candidates(int devices) const;
  size_t next_of(const WaitingPod& p) const;

  std::vector<WaitingPod> pods_;
  std::map<std::string, LivePod> live_;     // live pods that no longer wait
  std::map<std::string, Holding> holdings_; // pods served, by uid, until they are gone
  std::set<std::string> excluded_;          // exclude()d, while they wait
  std::map<std::string, std::string> refusals_;  // uid -> the refusal it had, while it waits
  std::map<std::string, int> served_;  // uid -> containers allocated
  std::string last_uid_;               // the pod kubelet allocated to last
  uint64_t merged_upto_ = 0;           // arrivals up to this one count as one (merge_arrivals)
};

// Whether a's containers from index `from_a` on and b's from `from_b` on ask
// the same devices on the same cards with the same shares.
bool equivalent(const WaitingPod& a, size_t from_a, const WaitingPod& b, size_t from_b);

}  // namespace fracpack::node
