// Internal to the contracts' sources (fracpack.cc, hami.cc, gpushare.cc):
// what every contract's codec starts from, namely the rules they share and
// the placement model's types by their short names. Never include it from
// a header.
#pragma once

#include "k8s/contract/card_list.h"
#include "k8s/contract/kubernetes_rules.h"
#include "scheduling/model.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::Card;
using scheduling::CardShare;
using scheduling::ContainerAllocation;
using scheduling::ContainerRequest;
using scheduling::NodeSpec;
using scheduling::PodRequest;

}  // namespace fracpack::k8s
