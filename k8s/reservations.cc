#include "k8s/reservations.h"

#include <algorithm>
#include <unordered_set>

#include "k8s/cluster_state.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::PodFacts;

namespace {
constexpr auto kTombstoneLife = std::chrono::minutes(10);
}  // namespace

Result<Allocation> Reservations::reserve(const PodFacts& pod, const Chooser& choose, scheduling::Clock::time_point now) {
  std::unique_lock lock(store_.mu_);
  auto chosen = choose(store_.builder_.ledger());
  if (!chosen) return chosen;
  if (Status s = store_.builder_.ledger().assume(pod, *chosen, now + ttl_); !s.ok()) return Error{s.message()};
  return chosen;
}

Result<Reservations::Rechecked> Reservations::recheck(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid,
                                                      const Chooser& choose, const std::vector<Pod>& in_namespace) {
  std::unique_lock lock(store_.mu_);
  scheduling::Ledger& ledger = store_.builder_.ledger();
  // What the API server has bound that the ledger does not hold as bound:
  // unknown pods, and pods held only by a reservation (this replica's bind
  // whose Binding landed — or lost to another writer's, whose record is the
  // one that counts). On the node, for its cards; in the namespace, on any
  // node, for its quota.
  std::vector<const Pod*> missing;
  const Pod* mine_bound = nullptr;  // this very pod, already bound here
  size_t unknown = 0;               // of `missing`: pods the ledger held nothing for, or other cards
  std::unordered_set<std::string_view> seen;
  auto consider = [&](const Pod& p) {
    if (p.meta.uid.empty() || p.node_name.empty() || p.terminal() || !seen.insert(p.meta.uid).second) return;
    const scheduling::PodRecord* r = ledger.pod(p.meta.uid);
    if (r != nullptr && r->node == p.node_name && r->phase == scheduling::PodPhase::kConfirmed) return;
    if (store_.deleted_.contains(p.meta.uid)) return;  // the read predates a deletion the watch applied
    if (p.meta.uid == uid) {
      if (p.node_name == node) mine_bound = &p;
      return;
    }
    missing.push_back(&p);
    const scheduling::NodeState* there = ledger.node(p.node_name);
    const RecordedAllocation rec = store_.contract_->recorded_allocation(p, there != nullptr ? &there->spec() : nullptr);
    if (r == nullptr || r->node != p.node_name || rec.kind != RecordedAllocation::Kind::kAllocation ||
        scheduling::charges_of(rec.allocation) != r->charges) {
      ++unknown;
    }
  };
  for (const Pod& p : fresh) {
    if (p.node_name == node) consider(p);
  }
  for (const Pod& p : in_namespace) consider(p);
  auto apply_missing = [&] {
    for (const Pod* p : missing) store_.apply_pod_locked(*p);
    store_.counters_.fence_caught_up += unknown;
  };
  const scheduling::PodRecord* mine = ledger.pod(uid);
  if (mine == nullptr || mine->node != node) return Error{"its reservation on node " + node + " was released meanwhile"};
  if (mine_bound != nullptr) {
    // Bound here already (an earlier attempt's Binding landed, or another
    // replica bound it): the API server's record is what it holds.
    const Allocation reserved = mine->allocation;
    apply_missing();
    store_.apply_pod_locked(*mine_bound);
    const scheduling::PodRecord* now = ledger.pod(uid);
    if (now == nullptr) return Error{"pod is bound to " + node + " but its record could not be read"};
    return Rechecked{now->allocation, missing.size(), now->allocation != reserved};
  }
  if (mine->phase == scheduling::PodPhase::kConfirmed) return Rechecked{mine->allocation, 0, false};
  // Nothing new, and no card it holds over capacity: it stands as it is.
  const scheduling::NodeState* here = ledger.node(node);
  auto holds_overcommitted = [&] {
    for (const auto& c : mine->charges) {
      const int pos = here != nullptr ? here->position_of(c.index) : -1;
      if (pos < 0 || here->use()[static_cast<size_t>(pos)].cores > scheduling::kCardMilli || here->free_memory(static_cast<size_t>(pos)) < 0) {
        return true;
      }
    }
    return false;
  };
  // Nor its namespace past its GPU quota (what other binds' fences or the
  // watch applied since is counted, as confirm() records bound pods).
  const std::string ns(scheduling::namespace_of_key(mine->key));
  auto namespace_over_quota = [&] { return !ledger.quota_admits(ns, mine->quota, uid).ok(); };
  if (missing.empty() && !holds_overcommitted() && !namespace_over_quota()) return Rechecked{mine->allocation, 0, false};
  // Judge the reservation beside the pods the watch has not delivered, and
  // beside what other binds' fences applied since it was made (confirm()
  // records a bound pod even where it over-commits a reservation): lift it,
  // apply them, then put it back where it still fits.
  const scheduling::PodRecord saved = *mine;
  const PodFacts facts{saved.uid, saved.key, saved.cpu_milli, saved.memory_bytes};
  ledger.forget(uid);
  apply_missing();
  const scheduling::NodeState* state = ledger.node(node);
  if (state != nullptr && scheduling::allocation_fits(*state, saved.allocation).ok() &&
      ledger.assume(facts, saved.allocation, saved.deadline).ok()) {
    return Rechecked{saved.allocation, missing.size(), false};
  }
  auto chosen = choose(ledger);
  if (chosen) {
    if (Status st = ledger.assume(facts, *chosen, saved.deadline); !st.ok()) chosen = Error{st.message()};
  }
  if (!chosen) {
    accepted_at_.erase(uid);
    // Its namespace's quota refuses it (other writers' pods counted now, or
    // the quota lowered or unreadable since it reserved), or the node's cards.
    if (Status q = ledger.quota_admits(ns, saved.quota); !q.ok()) {
      const bool others = std::any_of(missing.begin(), missing.end(), [&](const Pod* p) { return p->meta.namespace_name == ns; });
      return Error{"namespace " + ns +
                   (others ? " holds pods bound by another scheduler that fracpack's watch had not delivered yet: " : " is at its GPU quota: ") +
                   q.message()};
    }
    return Error{"node " + node + " holds pods bound by another scheduler that fracpack's watch had not delivered yet: " + chosen.message()};
  }
  return Rechecked{std::move(*chosen), missing.size(), true};
}

bool Reservations::release_locked(const std::string& uid) {
  accepted_at_.erase(uid);
  return store_.builder_.ledger().forget(uid);
}

bool Reservations::settle(const std::string& uid, Settlement how, std::chrono::steady_clock::time_point when) {
  std::unique_lock lock(store_.mu_);
  const scheduling::PodRecord* r = store_.builder_.ledger().pod(uid);
  const bool assumed = r != nullptr && r->phase == scheduling::PodPhase::kAssumed;
  switch (how) {
    case Settlement::kBindingAccepted:
      // A consistent list started later that lacks the pod proves it gone.
      if (assumed) accepted_at_[uid] = when;
      return assumed;
    case Settlement::kNotBound:
      return release_locked(uid);
    case Settlement::kPodGone: {
      const bool released = release_locked(uid);
      if (released) ++store_.counters_.reconciled_assumptions;
      gone_[uid] = Tombstone{scheduling::Clock::now(), 0};
      return released;
    }
    case Settlement::kBoundElsewhere: {
      const bool released = release_locked(uid);
      if (released) ++store_.counters_.reconciled_assumptions;
      return released;
    }
    case Settlement::kUnboundPastTtl: {
      if (!assumed) return false;
      store_.problem_locked("pod " + r->key, "assumed reservation on " + r->node + " expired: the pod is not bound");
      const bool released = release_locked(uid);
      if (released) ++store_.counters_.expired_assumptions;
      return released;
    }
  }
  return false;
}

std::vector<Reservations::Stale> Reservations::stale(scheduling::Clock::time_point now, std::chrono::milliseconds min_age) const {
  std::shared_lock lock(store_.mu_);
  const scheduling::Ledger& ledger = store_.builder_.ledger();
  std::vector<Stale> out;
  for (const auto& uid : ledger.assumed_pods()) {
    const scheduling::PodRecord* r = ledger.pod(uid);
    if (r == nullptr || r->deadline - ttl_ + min_age > now) continue;
    const size_t slash = r->key.find('/');
    out.push_back(Stale{uid, r->key.substr(0, slash), slash == std::string::npos ? r->key : r->key.substr(slash + 1), r->node,
                        now >= r->deadline});
  }
  return out;
}

size_t Reservations::release_expired(scheduling::Clock::time_point now) {
  std::unique_lock lock(store_.mu_);
  const auto gone = store_.builder_.ledger().expire(now);
  store_.counters_.expired_assumptions += gone.size();
  for (const auto& r : gone) accepted_at_.erase(r.uid);
  for (const auto& r : gone) store_.problem_locked("pod " + r.key, "assumed reservation on " + r.node + " expired without confirmation");
  // Tombstones outlive any event still in flight long before this.
  for (auto it = gone_.begin(); it != gone_.end();) {
    it = now - it->second.at > kTombstoneLife ? gone_.erase(it) : std::next(it);
  }
  return gone.size();
}

bool Reservations::tombstoned_locked(const std::string& uid, uint64_t listing) {
  auto t = gone_.find(uid);
  if (t == gone_.end()) return false;
  t->second.listed = listing;
  return true;
}

void Reservations::pod_list_ended_locked(uint64_t generation, bool consistent, std::chrono::steady_clock::time_point started,
                                         const std::function<bool(const std::string&)>& listed) {
  // A list without a tombstoned pod is past its deletion: the watch that
  // follows cannot bring older events about it.
  for (auto it = gone_.begin(); it != gone_.end();) {
    it = it->second.listed != generation ? gone_.erase(it) : std::next(it);
  }
  if (!consistent) return;
  // A quorum read started after a Binding was accepted shows the pod if it
  // still exists: a reserved pod bound before it and absent is gone.
  scheduling::Ledger& ledger = store_.builder_.ledger();
  for (const auto& uid : ledger.assumed_pods()) {
    auto b = accepted_at_.find(uid);
    if (b != accepted_at_.end() && b->second < started && !listed(uid)) {
      ledger.forget(uid);
      accepted_at_.erase(b);
      ++store_.counters_.reconciled_assumptions;
    }
  }
}

}  // namespace fracpack::k8s
