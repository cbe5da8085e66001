// GPU quota per namespace: what a placement counts against a namespace's
// quota, and whether a namespace's limits admit one more placement. Pure:
// the limits come from the adapters (k8s/quota.h reads them from
// ResourceQuota objects), the usage from the ledger (Ledger::namespace_use).
//
// Kubernetes cannot say "at most 160 GiB of GPU memory" itself: its quota
// counts each container's request once, and a share given as a percent of
// a card's memory has no size until a card is chosen. Only the component
// that chooses the cards knows the true usage, so the usage is counted from
// the cards chosen:
//   cards        one per card a container holds
//   memory MiB   the MiB of each card held (a percent share counts the MiB
//                of the card it was given; a whole card its memory)
//   cores        milli of a card per card held (a whole card is 1000); the
//                quota keys say percent (a whole card is 100)
// and a pod counts, per dimension, the max of (its app containers summed,
// each init container): Kubernetes' effective-request rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduling/model.h"

namespace fracpack::scheduling {

struct QuotaUse {
  int64_t cards = 0;
  int64_t memory_mib = 0;
  int64_t cores_milli = 0;
  QuotaUse& operator+=(const QuotaUse& o) {
    cards += o.cards;
    memory_mib += o.memory_mib;
    cores_milli += o.cores_milli;
    return *this;
  }
  QuotaUse& operator-=(const QuotaUse& o) {
    cards -= o.cards;
    memory_mib -= o.memory_mib;
    cores_milli -= o.cores_milli;
    return *this;
  }
  bool zero() const { return cards == 0 && memory_mib == 0 && cores_milli == 0; }
  bool operator==(const QuotaUse&) const = default;
};

// What a placement counts against its namespace's quota.
QuotaUse quota_use(const Allocation& allocation);

enum class QuotaResource { kCards, kMemoryMib, kCoresPercent };

// One limit of one quota object ("spec.hard" key).
struct QuotaLimit {
  std::string object;  // the ResourceQuota's name
  std::string key;     // as written in spec.hard
  QuotaResource resource = QuotaResource::kCards;
  int64_t hard = 0;    // cards, MiB or percent
  // Non-empty: the value could not be read (why). The key then refuses
  // every new placement in the namespace (fail closed) until fixed.
  std::string malformed;
  bool operator==(const QuotaLimit&) const = default;
};

// The used amount of one limit's resource, in the limit's unit (cores:
// percent, rounded up).
int64_t quota_amount(const QuotaUse& use, QuotaResource resource);

// Whether `limits` (one namespace's) admit `asked` beside `used`; the error
// names the object, the key, used, asked and hard (no '%': kube-scheduler
// prints reasons as a format).
Status quota_admits(const std::string& namespace_name, const std::vector<QuotaLimit>& limits, const QuotaUse& used,
                    const QuotaUse& asked);

// Whether any limit's use of this pod depends on the card chosen (a memory
// limit and a share sized by the card's memory): the check must then use
// the cards actually chosen on each node.
bool quota_depends_on_card(const std::vector<QuotaLimit>& limits, const PodRequest& pod);
// The pod's use when it does not depend on the card (see above; memory
// counts only the absolute part then).
QuotaUse quota_use(const PodRequest& pod);
// The pod's use were each of its cards of `card_mib` (a share sized by the
// card counts that card's MiB): with the smallest and largest cards a node
// or the cluster has, the bounds of its use there.
QuotaUse quota_use(const PodRequest& pod, int64_t card_mib);

}  // namespace fracpack::scheduling
