// Which container is kubelet admitting? kubelet's Allocate carries device
// IDs only (node-side.md §B1.3, §B2): the agent finds the container from
// the allocation records the extender wrote at bind (fracpack.io/allocation)
// on the pods bound to its node, and answers with exactly the cards the
// record names, or refuses.
//
// What is known for certain: kubelet admits one pod at a time and, within a
// pod, allocates its containers in order (init containers, then app
// containers; only those asking the device resource), one Allocate each.
// So once a pod's first container is identified, the pod's next Allocate
// calls are its next containers (unless its admission failed on something
// else in between: kubelet then fails that pod, and the matcher would take
// the next pod's first container for the failed pod's next; a refusal of
// ours ends the pod's admission here too). The first container is identified by the
// number of devices kubelet asks for among the pods still waiting:
//
//   one candidate                 it.
//   several, all equivalent       the oldest: equivalent pods (the same
//                                 remaining containers on the same cards
//                                 with the same shares) get the same cards,
//                                 so the choice cannot differ from the
//                                 extender's.
//   several, not equivalent       refused, naming them: handing one pod
//                                 another's cards would put the ledger and
//                                 the cards out of step for good: when one
//                                 leaves, the wrong card is freed. kubelet
//                                 reports the refusal on the pod.
//   none                          refused: no record names this container
//                                 (the caller waits for its pod watch first).
//
// Pure and deterministic: the agent feeds it the pods and serialises calls.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/model.h"
#include "scheduling/result.h"

namespace fracpack::node {

// A container that asks kubelet for the agent's devices.
struct GpuContainer {
  std::string name;
  bool init = false;
  int devices = 0;  // resources.limits[<resource>]: how many IDs kubelet allocates
};

// A pod bound to this node that has not started yet.
struct WaitingPod {
  std::string uid;
  std::string key;                 // namespace/name
  std::string creation_timestamp;  // RFC 3339: kubelet admits older pods first
  std::vector<GpuContainer> containers;  // in kubelet's Allocate order
  // The record's cards per container (same order), or why the record
  // cannot serve (missing, malformed, another node, a container missing).
  Result<std::vector<std::vector<scheduling::CardShare>>> cards = Error{"no allocation record"};
};

struct Assignment {
  std::string pod_uid;
  std::string pod_key;
  std::string container;
  std::vector<scheduling::CardShare> cards;
};

class AllocationMatcher {
 public:
  // The pods waiting on the node (the agent's pod watch); pods gone from the
  // list are forgotten.
  void set_pods(std::vector<WaitingPod> pods);
  // The container kubelet allocates `devices` IDs to, marked as served.
  Result<Assignment> allocate(int devices);
  // What allocate would answer, without serving it (GetPreferredAllocation).
  Result<Assignment> peek(int devices) const;

  // Whether an allocate(devices) refusal is for want of a candidate (a
  // later pod event may bring it) rather than ambiguity.
  bool lacks_candidate(int devices) const;

  // Containers served per pod UID (the agent persists it across restarts).
  const std::map<std::string, int>& served() const { return served_; }
  void restore(std::map<std::string, int> served, std::string last_uid);
  const std::string& last_uid() const { return last_uid_; }

 private:
  // The pod and its next container index for `devices`.
  Result<std::pair<const WaitingPod*, size_t>> find(int devices) const;
  std::vector<const WaitingPod*> first_candidates(int devices, std::vector<std::string>* unusable) const;
  size_t next_of(const WaitingPod& p) const;

  std::vector<WaitingPod> pods_;
  std::map<std::string, int> served_;  // uid -> containers allocated
  std::string last_uid_;               // the pod kubelet allocated to last
};

// Whether a's containers from index `from_a` on and b's from `from_b` on ask
// the same devices on the same cards with the same shares.
bool equivalent(const WaitingPod& a, size_t from_a, const WaitingPod& b, size_t from_b);

}  // namespace fracpack::node
