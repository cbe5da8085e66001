// Whether a pod's namespace GPU quota (scheduling/quota.h) admits it on a
// node: the one rule the replay's Scheduler, the extender's filter and its
// preempt all ask, so that what preempt evicts for, filter passes and bind
// reserves.
//
// A pod's use is counted from the cards it would be given on that node
// (quota_use of the materialized allocation), less what its namespace's own
// pods being evicted give back. Most pods' use does not depend on the card,
// and most namespaces are far from their limits: the gate then judges the
// pod once, before any node (everywhere()), and admits() answers without
// counting. Only a share sized by the card (a percent of its memory) under a
// memory limit, and a use between what the ledger's smallest and largest
// cards would make it, is counted node by node; so is a node whose cards
// lie outside those bounds (a node the ledger does not hold, projected from
// its Node object), and any node where victims give quota back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "scheduling/quota.h"

namespace fracpack::scheduling {

class QuotaGate {
 public:
  // `except_uid`: the pod itself, when the ledger may hold it already (a pod
  // judged again while its reservation is held is not counted twice). The
  // ledger, the pod and both strings must outlive the gate, and the ledger
  // stay unchanged while it is used.
  QuotaGate(const Ledger& ledger, std::string_view namespace_name, const PodRequest& pod, std::string_view except_uid = {});

  // Ok, or why the quota refuses the pod on every node the ledger holds (no
  // victims freeing its namespace's quota): then no node need be judged.
  const Status& everywhere() const { return everywhere_; }
  // Whether some of the ledger's nodes must be judged on their own cards
  // (answers kept without the quota, the extender's kept replies, cannot
  // stand for the gate then).
  bool per_node() const { return per_node_; }

  // Whether `picks` on `node` keep the namespace within its quota, once
  // `freed` (what victims of the pod's own namespace hold) is given back.
  // The error names the object, the key, used, asked and hard.
  Status admits(const NodeState& node, const Picks& picks, const QuotaUse& freed = {}) const;

 private:
  bool counts_on(const NodeState& node) const;

  const Ledger& ledger_;
  std::string_view namespace_;
  const PodRequest& pod_;
  std::string_view except_uid_;
  const std::vector<QuotaLimit>* limits_ = nullptr;
  bool depends_on_card_ = false;
  int64_t smallest_ = 0;
  int64_t largest_ = 0;
  Status everywhere_ = Status::Ok();
  bool per_node_ = false;
};

}  // namespace fracpack::scheduling
