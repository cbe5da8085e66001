// What the node agent reads and writes in the API server: the node's
// fracpack.io/gpu-devices annotation from its discovered devices (the
// fracpack contract's, k8s/contract/fracpack.h), and each waiting pod's
// containers and recorded cards, read through the contract (k8s/contract/
// contract.h) exactly as the extender reads them: the contract's request
// says which containers ask for cards and how many, its record reader says
// what the Binding wrote. The one rule of the node's own: kubelet calls
// Allocate only for the containers that name the contract's device
// resource (kubelet_allocates).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "k8s/record_signature.h"
#include "k8s/scheduler_names.h"
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
  // The contract the pods were placed under (null: fracpack's, default names).
  std::shared_ptr<const k8s::Contract> contract;
  // Pods of other schedulers are never served (k8s::placed_by_fracpack).
  std::vector<std::string> scheduler_names = k8s::default_scheduler_names();
  // Whose records are served: signed by fracpack's extender
  // (k8s/record_signature.h; no verifier: as written).
  k8s::RecordTrust trust;
};

// A pod bound to `node` as the matcher sees it: the containers kubelet
// allocates (its Allocate order: init containers, sidecars among them, then
// app containers) and, per container, the cards its record names. A pod the
// contract cannot read, a pod of another scheduler, and a record that is
// missing, unreadable, not signed by fracpack's extender, for another node,
// or that does not give a container as many cards as it asks devices, leave
// the pod unusable with the reason (it is then never served).
WaitingPod waiting_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node);

// What a live pod that no longer waits holds by its record, when the record
// is one fracpack signed for this node (else nothing known).
LivePod live_pod(const k8s::Pod& pod, const RecordRules& rules, const std::string& node);

// Whether kubelet calls Allocate for the container: it names the device
// resource in its limits with a count other than 0 (a count that does not
// parse counts: waiting_pod then says why it cannot be served). Stricter
// than the contract's "asks for cards": a container naming only a share
// (memory, compute) is charged a card by the extender, but kubelet hands it
// no device, so the agent never serves it.
bool kubelet_allocates(const k8s::Container& container, const std::string& device_resource);
// Whether kubelet will call Allocate for any of the pod's containers.
bool asks_devices(const k8s::Pod& pod, const std::string& device_resource);
// The contract `rules` name (fracpack's by default).
const k8s::Contract& contract_of(const RecordRules& rules);

// Whether the pod still waits for kubelet's Allocate: bound to the node,
// not finished, not being deleted, not running.
bool may_wait(const k8s::Pod& pod);
// Whether kubelet failed the pod at admission for an Allocate answer
// (phase Failed, reason UnexpectedAdmissionError, as kubelet 1.20 sets
// them): its verdict on a refusal of the agent's. A pod failed otherwise
// (another admission handler: node pressure, sysctls) is dead too, but
// says nothing of which pod a refusal hit.
bool failed_at_allocate(const k8s::Pod& pod);

}  // namespace fracpack::node
