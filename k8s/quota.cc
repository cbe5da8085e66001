#include "k8s/quota.h"

#include <limits>

#include "scheduling/quantity.h"

namespace fracpack::k8s {

namespace {

// A whole, non-negative number of the key's unit, scaled by `unit`; the
// error says why not.
Result<int64_t> hard_value(const std::string& text, int64_t unit) {
  auto q = Quantity::parse(text);
  if (!q) return Error{q.message()};
  if (q->negative()) return Error{"\"" + text + "\" is negative"};
  if (!q->is_integer()) return Error{"\"" + text + "\" is not a whole number"};
  // A binary suffix ("80Gi") counts bytes where the key counts MiB, cards
  // or percent: "80Gi" read as 85899345920 MiB is no limit at all. Decimal
  // forms are the API server's own: it stores a plain 10000000 as "10M"
  // (found on kube-apiserver v1.20.2), so they are read as the number they are.
  if (text.find('i') != std::string::npos) {
    return Error{"\"" + text + "\" has a binary suffix, which counts bytes: write MiB, cards or percent as a plain number"};
  }
  auto v = q->value();
  if (!v || *v > std::numeric_limits<int64_t>::max() / unit) return Error{"\"" + text + "\" is too large"};
  return *v * unit;
}

}  // namespace

std::vector<scheduling::QuotaLimit> quota_limits(const ResourceQuota& quota, const std::vector<QuotaKey>& keys) {
  std::vector<scheduling::QuotaLimit> out;
  for (const auto& [name, value] : quota.hard) {
    for (const QuotaKey& k : keys) {
      if (name != k.key) continue;
      scheduling::QuotaLimit l;
      l.object = quota.meta.name;
      l.key = name;
      l.resource = k.resource;
      if (quota.scoped) {
        // Scopes select pods (priority class, terminating, best effort)
        // fracpack does not judge: failing closed beats limiting the wrong pods.
        l.malformed = "a scoped ResourceQuota (spec.scopes or spec.scopeSelector): fracpack enforces only unscoped ones";
      } else if (auto v = hard_value(value, k.resource == scheduling::QuotaResource::kMemoryMib ? k.unit_mib : 1)) {
        l.hard = *v;
      } else {
        l.malformed = v.message();
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

std::vector<scheduling::QuotaLimit> QuotaBook::apply(const ResourceQuota& quota, scheduling::Ledger& ledger) {
  const std::string id = quota.meta.namespace_name + "/" + quota.meta.name;
  std::vector<scheduling::QuotaLimit> limits = quota_limits(quota, keys_);
  auto it = objects_.find(id);
  if (it != objects_.end() && it->second.limits == limits) {
    it->second.object = quota;
    return {};
  }
  std::vector<scheduling::QuotaLimit> malformed;
  for (const auto& l : limits) {
    if (!l.malformed.empty()) malformed.push_back(l);
  }
  if (limits.empty()) {
    if (it != objects_.end()) objects_.erase(it);
  } else {
    objects_[id] = Entry{quota.meta.namespace_name, quota.meta.name, std::move(limits), quota};
  }
  publish(quota.meta.namespace_name, ledger);
  return malformed;
}

void QuotaBook::remove(const std::string& namespace_name, const std::string& name, scheduling::Ledger& ledger) {
  if (objects_.erase(namespace_name + "/" + name) != 0) publish(namespace_name, ledger);
}

void QuotaBook::publish(const std::string& namespace_name, scheduling::Ledger& ledger) const {
  std::vector<scheduling::QuotaLimit> all;
  for (auto it = objects_.lower_bound(namespace_name + "/"); it != objects_.end() && it->second.namespace_name == namespace_name; ++it) {
    all.insert(all.end(), it->second.limits.begin(), it->second.limits.end());
  }
  ledger.set_quota(namespace_name, std::move(all));
}

}  // namespace fracpack::k8s
