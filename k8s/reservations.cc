#include "k8s/reservations.h"

#include <algorithm>
#include <unordered_set>

#include "common/text.h"
#include "k8s/contract/contract.h"
#include "scheduling/evaluator.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::PodFacts;

namespace {
constexpr auto kTombstoneLife = std::chrono::minutes(10);

// A bind's choice (Reservations::CardChoice) on the ledger as it is.
Result<Allocation> choose_cards(const scheduling::Ledger& ledger, const Reservations::CardChoice& c) {
  const scheduling::NodeState* n = ledger.node(c.node);
  if (n == nullptr || !n->present()) return Error{"node " + c.node + " is not known to fracpack"};
  scheduling::Verdict v = c.evaluator.evaluate_one(c.request, *n);
  if (!v.fits) return Error{"pod " + c.who + " no longer fits node " + c.node + ": " + v.reason};
  if (c.reason != nullptr) *c.reason = "the policy's best cards on the node (score " + std::to_string(v.score) + ")";
  return scheduling::materialize(c.request, *n, v.picks);
}
}  // namespace

Result<Allocation> Reservations::reserve(const PodFacts& pod, const Chooser& choose, scheduling::Clock::time_point now) {
  auto w = store_.write_ledger();
  Result<Allocation> chosen = choose(w.ledger);
  if (!chosen) return chosen;
  if (Status s = w.ledger.assume(pod, *chosen, now + ttl_); !s.ok()) return Error{s.message()};
  return chosen;
}

Result<Reservations::Reserved> Reservations::reserve(const PodFacts& pod, const CardChoice& choice, scheduling::Clock::time_point now) {
  auto w = store_.write_ledger();
  Reserved out;
  out.namespace_quota = w.ledger.quota(scheduling::namespace_of_key(pod.key)) != nullptr;
  if (const scheduling::PodRecord* r = w.ledger.pod(pod.uid); r != nullptr && r->node == choice.node) {
    out.allocation = r->allocation;
    out.retried = true;
    return out;
  }
  Result<Allocation> chosen = choose_cards(w.ledger, choice);
  if (!chosen) return chosen.error();
  if (Status s = w.ledger.assume(pod, *chosen, now + ttl_); !s.ok()) return Error{s.message()};
  out.allocation = std::move(*chosen);
  return out;
}

Status Reservations::reserve(const PodFacts& pod, const Allocation& chosen, scheduling::Clock::time_point now) {
  auto w = store_.write_ledger();
  return w.ledger.assume(pod, chosen, now + ttl_);
}

Result<Reservations::Rechecked> Reservations::recheck(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid,
                                                      const Chooser& choose, const std::vector<Pod>& in_namespace) {
  auto w = store_.write_ledger();
  return recheck_locked(w.ledger, node, fresh, uid, choose, in_namespace);
}

Result<Reservations::Rechecked> Reservations::recheck(const std::string& node, const std::vector<Pod>& fresh, const std::string& uid,
                                                      const CardChoice& choice, const std::vector<Pod>& in_namespace) {
  auto w = store_.write_ledger();
  return recheck_locked(w.ledger, node, fresh, uid, [&](const scheduling::Ledger& ledger) { return choose_cards(ledger, choice); },
                        in_namespace);
}

Result<Reservations::Rechecked> Reservations::recheck_locked(scheduling::Ledger& ledger, const std::string& node, const std::vector<Pod>& fresh,
                                                             const std::string& uid, const Chooser& choose, const std::vector<Pod>& in_namespace) {
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
    if (store_.deleted_lately(p.meta.uid)) return;  // the read predates a deletion the watch applied
    if (p.meta.uid == uid) {
      if (p.node_name == node) mine_bound = &p;
      return;
    }
    missing.push_back(&p);
    const scheduling::NodeState* there = ledger.node(p.node_name);
    const RecordedAllocation rec = contract_.recorded_allocation(p, there != nullptr ? &there->spec() : nullptr);
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
    for (const Pod* p : missing) store_.apply_bound_pod(*p);
    counters_.fence_caught_up += unknown;
  };
  const scheduling::PodRecord* mine = ledger.pod(uid);
  if (mine == nullptr || mine->node != node) return Error{"its reservation on node " + node + " was released meanwhile"};
  if (mine_bound != nullptr) {
    // Bound here already (an earlier attempt's Binding landed, or another
    // replica bound it): the API server's record is what it holds.
    const Allocation reserved = mine->allocation;
    apply_missing();
    store_.apply_bound_pod(*mine_bound);
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
      if (pos < 0 || here->overcommitted(static_cast<size_t>(pos))) {
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

bool Reservations::release_locked(scheduling::Ledger& ledger, const std::string& uid) {
  accepted_at_.erase(uid);
  return ledger.forget(uid);
}

bool Reservations::settle(const std::string& uid, Settlement how, std::chrono::steady_clock::time_point when) {
  auto w = store_.write_ledger();
  return settle_locked(w.ledger, uid, how, when);
}

bool Reservations::settle_locked(scheduling::Ledger& ledger, const std::string& uid, Settlement how,
                                 std::chrono::steady_clock::time_point when) {
  const scheduling::PodRecord* r = ledger.pod(uid);
  const bool assumed = r != nullptr && r->phase == scheduling::PodPhase::kAssumed;
  switch (how) {
    case Settlement::kBindingAccepted:
      // A consistent list started later that lacks the pod proves it gone.
      if (assumed) accepted_at_[uid] = when;
      return assumed;
    case Settlement::kNotBound:
      return release_locked(ledger, uid);
    case Settlement::kPodGone: {
      const bool released = release_locked(ledger, uid);
      if (released) ++counters_.reconciled_assumptions;
      gone_[uid] = Tombstone{scheduling::Clock::now(), 0};
      return released;
    }
    case Settlement::kBoundElsewhere: {
      const bool released = release_locked(ledger, uid);
      if (released) ++counters_.reconciled_assumptions;
      return released;
    }
    case Settlement::kUnboundPastTtl: {
      if (!assumed) return false;
      store_.report_problem("pod " + r->key, "assumed reservation on " + r->node + " expired: the pod is not bound");
      const bool released = release_locked(ledger, uid);
      if (released) ++counters_.expired_assumptions;
      return released;
    }
  }
  return false;
}

Reservations::Exit Reservations::bind_finished(const std::string& uid, const BindResult& result) {
  if (result.bound) return settle(uid, Settlement::kBindingAccepted) ? Exit::kAccepted : Exit::kNone;
  if (result.pod_gone) return settle(uid, Settlement::kPodGone) ? Exit::kReleased : Exit::kNone;
  // Releasing after an unknown outcome could free cards the pod holds: it
  // stays assumed until the informer confirms it, a read settles it
  // (bind_settled), or the reconciler proves it unbound.
  if (result.outcome_unknown) return Exit::kKept;
  return settle(uid, Settlement::kNotBound) ? Exit::kReleased : Exit::kNone;
}

Reservations::Exit Reservations::bind_settled(const std::string& uid, Presence presence) {
  switch (presence) {
    case Presence::kThere:
      return settle(uid, Settlement::kBindingAccepted) ? Exit::kAccepted : Exit::kNone;
    case Presence::kGone:
      return settle(uid, Settlement::kPodGone) ? Exit::kReleased : Exit::kNone;
    case Presence::kNotThere:
      // Unless kube-scheduler's retry is binding it right now (it reuses
      // this reservation and settles it itself).
      if (bind_in_flight(uid)) return Exit::kKept;
      return settle(uid, Settlement::kNotBound) ? Exit::kReleased : Exit::kNone;
    case Presence::kUnknown:
      return Exit::kKept;
  }
  return Exit::kNone;
}

Reservations::Exit Reservations::pod_read(const Stale& s, const Pod* pod) {
  auto released = [&](Settlement how) { return settle(s.uid, how) ? Exit::kReleased : Exit::kNone; };
  if (pod == nullptr || pod->meta.uid != s.uid || pod->terminal()) return released(Settlement::kPodGone);
  if (!pod->node_name.empty() && pod->node_name != s.node) return released(Settlement::kBoundElsewhere);
  // Past its TTL and provably not bound: the Binding never took effect.
  // (Bound here but not yet confirmed: kept — releasing it would let
  // another pod take its cards while the watch lags.)
  if (pod->node_name.empty() && s.past_ttl) return released(Settlement::kUnboundPastTtl);
  return Exit::kKept;
}

void Reservations::bind_started(const std::string& uid, const std::string& node, bool holds_node) {
  std::lock_guard lock(in_flight_mu_);
  if (holds_node) ++binding_to_[node];
  binding_uids_.insert(uid);
}

void Reservations::bind_ended(const std::string& uid, const std::string& node, bool holds_node) {
  std::lock_guard lock(in_flight_mu_);
  if (holds_node) {
    if (auto it = binding_to_.find(node); it != binding_to_.end() && --it->second == 0) binding_to_.erase(it);
  }
  if (auto it = binding_uids_.find(uid); it != binding_uids_.end()) binding_uids_.erase(it);
}

bool Reservations::bind_in_flight(const std::string& uid) const {
  std::lock_guard lock(in_flight_mu_);
  return binding_uids_.contains(uid);
}

std::vector<bool> Reservations::binding_to(const std::vector<std::string_view>& nodes) const {
  std::lock_guard lock(in_flight_mu_);
  std::vector<bool> out;
  if (binding_to_.empty()) return out;
  out.reserve(nodes.size());
  for (std::string_view n : nodes) out.push_back(binding_to_.find(n) != binding_to_.end());
  return out;
}

bool Reservations::any_binding() const {
  std::lock_guard lock(in_flight_mu_);
  return !binding_to_.empty();
}

std::vector<Reservations::Stale> Reservations::stale(scheduling::Clock::time_point now, std::chrono::milliseconds min_age) const {
  std::vector<Stale> out;
  auto reading = store_.read_ledger();
  const scheduling::Ledger& ledger = reading.ledger;
  for (const auto& uid : ledger.assumed_pods()) {
    const scheduling::PodRecord* r = ledger.pod(uid);
    if (r == nullptr || r->deadline - ttl_ + min_age > now) continue;
    const ObjectKey key = split_object_key(r->key);
    out.push_back(Stale{uid, std::string(key.namespace_name), std::string(key.name), r->node, now >= r->deadline});
  }
  return out;
}

size_t Reservations::release_expired(scheduling::Clock::time_point now) {
  auto w = store_.write_ledger();
  const auto gone = w.ledger.expire(now);
  counters_.expired_assumptions += gone.size();
  for (const auto& r : gone) accepted_at_.erase(r.uid);
  for (const auto& r : gone) store_.report_problem("pod " + r.key, "assumed reservation on " + r.node + " expired without confirmation");
  // Tombstones outlive any event still in flight long before this.
  for (auto it = gone_.begin(); it != gone_.end();) {
    it = now - it->second.at > kTombstoneLife ? gone_.erase(it) : std::next(it);
  }
  return gone.size();
}

bool Reservations::tombstoned(StoreLockHeld, const std::string& uid, uint64_t listing) {
  auto t = gone_.find(uid);
  if (t == gone_.end()) return false;
  t->second.listed = listing;
  return true;
}

void Reservations::pod_list_ended(StoreLockHeld, scheduling::Ledger& ledger, uint64_t generation, bool consistent, std::chrono::steady_clock::time_point started,
                                         const std::function<bool(const std::string&)>& listed) {
  // A list without a tombstoned pod is past its deletion: the watch that
  // follows cannot bring older events about it.
  for (auto it = gone_.begin(); it != gone_.end();) {
    it = it->second.listed != generation ? gone_.erase(it) : std::next(it);
  }
  if (!consistent) return;
  // A quorum read started after a Binding was accepted shows the pod if it
  // still exists: a reserved pod bound before it and absent is gone.
  for (const auto& uid : ledger.assumed_pods()) {
    auto b = accepted_at_.find(uid);
    if (b != accepted_at_.end() && b->second < started && !listed(uid)) {
      ledger.forget(uid);
      accepted_at_.erase(b);
      ++counters_.reconciled_assumptions;
    }
  }
}

}  // namespace fracpack::k8s
