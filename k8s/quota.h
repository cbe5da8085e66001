// The namespace GPU quota's adapter: reads the contract's keys
// (Contract::quota_keys) from ResourceQuota objects and keeps a ledger's
// limits (scheduling::Ledger::set_quota) in step with them. Several
// ResourceQuotas in one namespace each hold: the namespace's limits are
// all of theirs.
//
// Values are quantities in the key's unit (cards, MiB times the key's
// unit, percent of a card) and must be whole numbers: one that is not
// ("0.5", "lots") is kept as a malformed limit, which refuses every new
// placement in its namespace (fail closed) until it is fixed, and is
// reported once per change of the object.
//
// fracpack never writes a ResourceQuota's status: Kubernetes' quota
// controller owns status.used and recomputes it from its own registry,
// which knows nothing of these keys (it would erase what fracpack wrote, or
// fight it). The usage is shown by /debug/quota, `fracpack inspect quota`
// and the fracpack_quota_* metrics instead.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "k8s/contract/contract.h"
#include "k8s/objects.h"
#include "scheduling/ledger.h"
#include "scheduling/quota.h"

namespace fracpack::k8s {

// The limits `quota` sets under `keys`, in its spec.hard order; keys the
// contract does not read are left to Kubernetes.
std::vector<scheduling::QuotaLimit> quota_limits(const ResourceQuota& quota, const std::vector<QuotaKey>& keys);

class QuotaBook {
 public:
  explicit QuotaBook(std::vector<QuotaKey> keys) : keys_(std::move(keys)) {}

  bool enabled() const { return !keys_.empty(); }

  // A ResourceQuota added or changed: the namespace's limits in `ledger`
  // follow. Returns the malformed limits it newly has (none when the
  // object's limits did not change: a relist reports nothing again).
  std::vector<scheduling::QuotaLimit> apply(const ResourceQuota& quota, scheduling::Ledger& ledger);
  void remove(const std::string& namespace_name, const std::string& name, scheduling::Ledger& ledger);

  struct Entry {
    std::string namespace_name;
    std::string name;
    std::vector<scheduling::QuotaLimit> limits;  // the contract's keys only
    ResourceQuota object;                        // as applied (snapshots write it back)
  };
  // By "namespace/name".
  const std::map<std::string, Entry>& objects() const { return objects_; }

 private:
  void publish(const std::string& namespace_name, scheduling::Ledger& ledger) const;

  std::vector<QuotaKey> keys_;
  std::map<std::string, Entry> objects_;
};

}  // namespace fracpack::k8s
