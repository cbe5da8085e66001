// Whether an allocation record holds no more than its pod asks: the check
// that keeps a record (written by fracpack, but readable and in principle
// editable by others) from claiming more of a card than the pod's request
// (k8s/ledger_builder.cc reads each record through it).
#pragma once

#include "common/result.h"
#include "scheduling/model.h"

namespace fracpack::scheduling {

// Whether `allocation` holds at most what `pod` asks: each of its containers
// asks for GPUs (as an init container when the record says init), has the
// cards it asks or fewer, and on each card at most the memory and
// compute it asks (a percentage of memory against that card's size, when
// `node` knows it). A record that holds more than the request is not the
// extender's: the error says which container and card.
Status allocation_within_request(const PodRequest& pod, const Allocation& allocation, const NodeSpec* node);

}  // namespace fracpack::scheduling
