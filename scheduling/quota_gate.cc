#include "scheduling/quota_gate.h"

namespace fracpack::scheduling {

QuotaGate::QuotaGate(const Ledger& ledger, std::string_view namespace_name, const PodRequest& pod, std::string_view except_uid)
    : ledger_(ledger), namespace_(namespace_name), pod_(pod), except_uid_(except_uid) {
  if (!pod.wants_gpu()) return;  // a pod without cards asks nothing of the quota
  limits_ = ledger.quota(namespace_);
  if (limits_ == nullptr) return;
  depends_on_card_ = quota_depends_on_card(*limits_, pod);
  if (!depends_on_card_) {
    everywhere_ = ledger.quota_admits(namespace_, quota_use(pod), except_uid_);
    return;
  }
  std::tie(smallest_, largest_) = ledger.card_memory_bounds();
  if (ledger.quota_admits(namespace_, quota_use(pod, largest_), except_uid_).ok()) return;
  // Refused even on the smallest card: on every node (the message names
  // what the smallest would count).
  everywhere_ = ledger.quota_admits(namespace_, quota_use(pod, smallest_), except_uid_);
  per_node_ = everywhere_.ok();
}

bool QuotaGate::counts_on(const NodeState& node) const {
  if (!depends_on_card_) return false;
  if (per_node_) return true;
  for (const auto& card : node.cards()) {
    if (card.memory_mib < smallest_ || card.memory_mib > largest_) return true;
  }
  return false;
}

Status QuotaGate::admits(const NodeState& node, const Picks& picks, const QuotaUse& freed) const {
  if (limits_ == nullptr) return Status::Ok();
  if (freed.zero() && !counts_on(node)) return everywhere_;
  QuotaUse asked = quota_use(materialize(pod_, node, picks));
  asked -= freed;
  return ledger_.quota_admits(namespace_, asked, except_uid_);
}

}  // namespace fracpack::scheduling
