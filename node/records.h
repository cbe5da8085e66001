// What the node agent reads and writes in the API server, in the fracpack
// contract's terms (k8s/contract/fracpack.h): the node's
// fracpack.io/gpu-devices annotation from its discovered devices, and each
// waiting pod's containers and recorded cards from fracpack.io/allocation.
#pragma once

#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "k8s/record_signature.h"
#include "k8s/objects.h"
#include "node/allocation_matcher.h"
#include "node/nvml.h"

namespace fracpack::node {

// fracpack.io/gpu-devices for `devices`, each card shared by at most
// `slots` containers (its device IDs); `registered` false marks every card
// "registered":false (kubelet cannot hand them out yet: the extender
// offers none of them).
std::string devices_annotation(const std::vector<GpuDevice>& devices, int slots, bool registered = true);

// How the agent reads a pod's record.
struct RecordRules {
  std::string resource = "fracpack.io/gpu";  // the card resource kubelet allocates
  k8s::ContractNames names;
  // Pods of other schedulers are never served (empty: any, for tests).
  std::vector<std::string> scheduler_names = {"fracpack"};
  // Whose records are served: signed by fracpack's extender
  // (k8s/record_signature.h; no verifier: as written).
  k8s::RecordTrust trust;
};

// A pod bound to `node` as the matcher sees it: the containers that ask
// `resource` (kubelet's Allocate order: init containers, then app
// containers) and, per container, the cards its record names. A pod of
// another scheduler, and a record that is missing, unreadable, not signed
// by fracpack's extender, for another node, or that does not give a
// container as many cards as it asks devices, leave the pod unusable with
// the reason (it is then never served).
WaitingPod waiting_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node);

// What a live pod that no longer waits holds by its record, when the record
// is one fracpack signed for this node (else nothing known).
LivePod live_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node);

// Whether kubelet will call Allocate for any of the pod's containers: one
// names `resource` with a count other than 0 (a count that does not parse
// counts: waiting_pod then says why it cannot be served).
bool asks_devices(const k8s::Pod& pod, const std::string& resource);

// Whether the pod still waits for kubelet's Allocate: bound to the node,
// not finished, not being deleted, not running.
bool may_wait(const k8s::Pod& pod);

}  // namespace fracpack::node
