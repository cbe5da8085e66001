// What the node agent reads and writes in the API server, in the fracpack
// contract's terms (k8s/contract/fracpack.h): the node's
// fracpack.io/gpu-devices annotation from its discovered devices, and each
// waiting pod's containers and recorded cards from fracpack.io/allocation.
#pragma once

#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "k8s/objects.h"
#include "node/allocation_matcher.h"
#include "node/nvml.h"

namespace fracpack::node {

// fracpack.io/gpu-devices for `devices`, each card shared by at most
// `slots` containers (its device IDs).
std::string devices_annotation(const std::vector<GpuDevice>& devices, int slots);

// A pod bound to `node` as the matcher sees it: the containers that ask
// `resource` (kubelet's Allocate order: init containers, then app
// containers) and, per container, the cards its record names. A record
// that is missing, unreadable, for another node, or that does not give a
// container as many cards as it asks devices, leaves the pod unusable with
// the reason (it is then never served).
WaitingPod waiting_pod(const k8s::Pod& pod, const std::string& resource, const k8s::ContractNames& names, const std::string& node);

// Whether kubelet will call Allocate for any of the pod's containers: one
// names `resource` with a count other than 0 (a count that does not parse
// counts: waiting_pod then says why it cannot be served).
bool asks_devices(const k8s::Pod& pod, const std::string& resource);

// Whether the pod still waits for kubelet's Allocate: bound to the node,
// not finished, not being deleted, not running.
bool may_wait(const k8s::Pod& pod);

}  // namespace fracpack::node
