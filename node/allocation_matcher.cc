#include "node/allocation_matcher.h"

#include <algorithm>
#include <tuple>

namespace fracpack::node {

namespace {

bool same_shares(const std::vector<scheduling::CardShare>& a, const std::vector<scheduling::CardShare>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].index != b[i].index || a[i].memory_mib != b[i].memory_mib || a[i].cores != b[i].cores) return false;
  }
  return true;
}

}  // namespace

bool equivalent(const WaitingPod& a, size_t from_a, const WaitingPod& b, size_t from_b) {
  if (!a.cards || !b.cards) return false;
  if (a.containers.size() - from_a != b.containers.size() - from_b) return false;
  for (size_t i = 0; from_a + i < a.containers.size(); ++i) {
    const GpuContainer& x = a.containers[from_a + i];
    const GpuContainer& y = b.containers[from_b + i];
    if (x.devices != y.devices || x.init != y.init) return false;
    if (!same_shares((*a.cards)[from_a + i], (*b.cards)[from_b + i])) return false;
  }
  return true;
}

void AllocationMatcher::set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live) {
  // A pod excluded stays so while it waits (the watch drops it once the
  // API server's word reaches it).
  std::set<std::string> still;
  std::map<std::string, std::string> still_refused;
  for (const WaitingPod& p : pods) {
    if (excluded_.contains(p.uid)) still.insert(p.uid);
    if (auto r = refusals_.find(p.uid); r != refusals_.end()) still_refused.insert(*r);
  }
  excluded_ = std::move(still);
  refusals_ = std::move(still_refused);
  auto left = [&](const std::string& uid) {
    const bool waits = std::any_of(pods.begin(), pods.end(), [&](const WaitingPod& p) { return p.uid == uid; });
    if (!waits && !live.contains(uid)) departed_.push_back(uid);
  };
  for (const WaitingPod& was : pods_) left(was.uid);
  for (const auto& entry : live_) left(entry.first);

  if (departed_.size() > kDepartedKept) departed_.erase(departed_.begin(), departed_.end() - kDepartedKept);
  unseen_.clear();
  pods_ = std::move(pods);
  live_ = std::move(live);
  for (auto it = holdings_.begin(); it != holdings_.end();) {
    const bool waiting = std::any_of(pods_.begin(), pods_.end(), [&](const WaitingPod& p) { return p.uid == it->first; });
    it = waiting || live_.contains(it->first) ? std::next(it) : holdings_.erase(it);
  }
  // kubelet's order among candidates: older first, then by name.
  std::sort(pods_.begin(), pods_.end(), [](const WaitingPod& a, const WaitingPod& b) {
    return std::tie(a.creation_timestamp, a.key) < std::tie(b.creation_timestamp, b.key);
  });
  std::map<std::string, int> kept;
  for (const WaitingPod& p : pods_) {
    if (auto it = served_.find(p.uid); it != served_.end()) kept.insert(*it);
  }
  served_ = std::move(kept);
}

void AllocationMatcher::restore(std::map<std::string, int> served, std::string last_uid, std::map<std::string, Holding> holdings,
                                std::vector<std::pair<std::string, std::string>> undecided, size_t verdicts_owed,
                                const std::vector<std::string>& excluded) {
  excluded_.insert(excluded.begin(), excluded.end());
  served_ = std::move(served);
  last_uid_ = std::move(last_uid);
  holdings_ = std::move(holdings);
  undecided_ = std::move(undecided);
  verdicts_owed_ = std::max<size_t>(verdicts_owed, 1);
  bound_verdicts_owed();
}

void AllocationMatcher::exclude(const std::string& uid, const std::string& refusal) {
  excluded_.insert(uid);
  if (!refusal.empty()) refusals_[uid] = refusal;
  if (last_uid_ == uid) last_uid_.clear();
}

void AllocationMatcher::refuse_served(const std::string& uid, const std::string& refusal) {
  if (auto it = served_.find(uid); it != served_.end() && --it->second <= 0) {
    served_.erase(it);
    holdings_.erase(uid);  // nothing of it runs
  }
  exclude(uid, refusal);
}

std::map<int, scheduling::CardCharge> AllocationMatcher::held_by_others(const std::string& uid) const {
  std::map<int, scheduling::CardCharge> out;
  auto add = [&out](const std::vector<scheduling::CardCharge>& charges) {
    for (const scheduling::CardCharge& c : charges) {
      scheduling::CardCharge& sum = out[c.index];
      sum.index = c.index;
      sum.memory_mib += c.memory_mib;
      sum.cores += c.cores;
      sum.shares += c.shares;
    }
  };
  for (const auto& [other, h] : holdings_) {
    if (other != uid) add(h.charges);
  }
  for (const auto& [other, p] : live_) {
    if (other != uid && p.charges && !holdings_.contains(other)) add(*p.charges);
  }
  return out;
}

size_t AllocationMatcher::next_of(const WaitingPod& p) const {
  auto it = served_.find(p.uid);
  return it == served_.end() ? 0 : static_cast<size_t>(it->second);
}

std::vector<const WaitingPod*> AllocationMatcher::first_candidates(int devices) const { return first_candidates_in(pods_, devices); }

std::vector<const WaitingPod*> AllocationMatcher::first_candidates_in(const std::vector<WaitingPod>& pods, int devices) const {
  std::vector<const WaitingPod*> candidates;
  for (const WaitingPod& p : pods) {
    if (next_of(p) != 0 || p.containers.empty() || p.containers[0].devices != devices || excluded_.contains(p.uid)) continue;
    candidates.push_back(&p);
  }
  return candidates;
}

bool AllocationMatcher::lacks_candidate(int devices) const { return first_candidates(devices).empty(); }

Result<std::pair<const WaitingPod*, size_t>> AllocationMatcher::find(int devices, std::string* refused_uid,
                                                                     std::vector<const WaitingPod*>* undecided, bool* suspect) const {
  // The pod kubelet is in the middle of: its next container, when it asks
  // this many devices (else its admission ended and another pod begins).
  for (const WaitingPod& p : pods_) {
    if (p.uid != last_uid_ || !p.cards || excluded_.contains(p.uid)) continue;
    const size_t next = next_of(p);
    if (next > 0 && next < p.containers.size() && p.containers[next].devices == devices) return std::make_pair(&p, next);
  }
  // Pods whose admission has not begun, asking this many devices first —
  // those whose record cannot serve too: kubelet admits them in their turn
  // like any other, and the Allocate of their turn is theirs. (Found on a
  // real kubelet, issue 31: a tenant's pod with a forged record, bound
  // just before a fracpack pod, was answered with the fracpack pod's
  // cards once that pod's bind reached the agent; the fracpack pod was
  // then refused.)
  std::vector<const WaitingPod*> candidates = first_candidates(devices);
  const std::string asked = std::to_string(devices) + (devices == 1 ? " device" : " devices");
  if (candidates.empty()) {
    // kubelet may ask again for a pod the agent refused a moment ago (seen
    // on kubelet 1.20: a second Allocate 2 ms after the first, and the pod
    // failed with the second answer): the same refusal, not a vaguer one.
    for (const WaitingPod& p : pods_) {
      auto r = refusals_.find(p.uid);
      const size_t next = next_of(p);
      if (r != refusals_.end() && next < p.containers.size() && p.containers[next].devices == devices) return Error{r->second};
    }
    return Error{"no pod bound to this node waits for a container asking " + asked};
  }
  // kubelet admits pods in the order their binds reach it: the earliest
  // seen bound here goes first. Pods seen first in one list (or before
  // kubelet restarted) came in an unknown order; among them only
  // equivalent ones can be told apart (the oldest, as kubelet sorts a
  // batch by creation time).
  auto arrival = [this](const WaitingPod* p) { return std::max(p->arrival, merged_upto_); };
  uint64_t first = arrival(candidates.front());
  for (const WaitingPod* c : candidates) first = std::min(first, arrival(c));
  std::vector<const WaitingPod*> earliest;
  for (const WaitingPod* c : candidates) {
    if (arrival(c) == first) earliest.push_back(c);
  }
  // kubelet shows the refusal on the pod it admits, whoever's it is: the
  // message counts the pods and names none (they may be other teams').
  auto ambiguous = [&asked](size_t pods, const std::string& how) -> Error {
    return Error{"cannot tell which pod kubelet is admitting: " + std::to_string(pods) + " pods" + how + " each wait for a container asking " +
                 asked + " on different cards"};
  };
  // A pod kubelet may have failed on an earlier refusal (its verdict not
  // in yet) is never served: were it dead, the pod kubelet admits is
  // another. kubelet fails this one too, which may be any of them.
  if (std::any_of(earliest.begin(), earliest.end(), [this](const WaitingPod* p) { return is_undecided(p->uid); })) {
    if (suspect != nullptr) *suspect = true;
    if (undecided != nullptr) {
      *undecided = candidates;
      for (const WaitingPod* u : first_candidates_in(unseen_, devices)) undecided->push_back(u);
    }
    return Error{"cannot tell which pod kubelet is admitting: the pod next in turn for a container asking " + asked +
                 " may be one kubelet failed on an earlier refusal (its status has not reached the API server)"};
  }
  if (earliest.size() == 1 && !earliest.front()->cards) {
    if (refused_uid != nullptr) *refused_uid = earliest.front()->uid;
    // kubelet shows this on the pod it admits, which may be another's (the
    // earliest may have been rejected before its Allocate): no name.
    return Error{"kubelet is admitting the pod bound to this node first among those waiting for " + asked +
                 ", and its allocation record cannot serve: " + earliest.front()->cards.message()};
  }
  for (const WaitingPod* c : earliest) {
    if (equivalent(*earliest.front(), 0, *c, 0)) continue;
    if (undecided != nullptr) *undecided = earliest;
    return ambiguous(earliest.size(), " were seen bound together and");
  }
  // kubelet takes pods that reach it together (its own relist) oldest
  // first: a later-bound pod that is older, on other cards, could be the
  // one it admits.
  // Pods the API server lists that the watch has not shown yet were bound
  // after all of these: the same rule, and ties too in a batch (below).
  const WaitingPod* chosen = earliest.front();
  std::vector<const WaitingPod*> later = candidates;
  const size_t shown = later.size();
  for (const WaitingPod* u : first_candidates_in(unseen_, devices)) later.push_back(u);
  // A pod the watch has not shown, created in the same second, may come
  // first too when kubelet may be taking `chosen` in a relist's batch
  // (its arrival merged: kubelet's ties have no set order). Otherwise the
  // binds reach kubelet one by one, in the watch's order, and that pod's
  // came after `chosen`'s. (Found by the project's CI, Real.A: four pods
  // created in one second, the first one's Allocate refused because the
  // list already showed the second bound and the watch did not.)
  const bool in_batch = chosen->arrival <= merged_upto_;
  auto may_precede = [&](size_t i) {
    const WaitingPod* c = later[i];
    return c != chosen && (c->creation_timestamp < chosen->creation_timestamp ||
                           (in_batch && i >= shown && c->creation_timestamp == chosen->creation_timestamp));
  };
  for (size_t i = 0; i < later.size(); ++i) {
    if (may_precede(i) && !equivalent(*chosen, 0, *later[i], 0)) {
      // kubelet admits `chosen` (the binds reached it one by one) or the
      // oldest of a batch: one that may precede `chosen`.
      if (undecided != nullptr) {
        undecided->assign(1, chosen);
        for (size_t j = 0; j < later.size(); ++j) {
          if (may_precede(j)) undecided->push_back(later[j]);
        }
      }
      return ambiguous(2, " (bound in the other order than created)");
    }
  }
  return std::make_pair(chosen, size_t{0});
}

std::optional<std::pair<std::string, std::string>> AllocationMatcher::unservable_turn(int devices) const {
  std::string uid;
  if (find(devices, &uid) || uid.empty()) return std::nullopt;
  for (const WaitingPod& p : pods_) {
    if (p.uid == uid) return std::make_pair(p.uid, p.key);
  }
  return std::nullopt;
}

void AllocationMatcher::add_unseen(const std::vector<WaitingPod>& listed) {
  auto shown = [this](const std::string& uid) {
    return live_.contains(uid) || served_.contains(uid) || std::find(departed_.begin(), departed_.end(), uid) != departed_.end() ||
           std::any_of(pods_.begin(), pods_.end(), [&](const WaitingPod& p) { return p.uid == uid; }) ||
           std::any_of(unseen_.begin(), unseen_.end(), [&](const WaitingPod& p) { return p.uid == uid; });
  };
  for (const WaitingPod& p : listed) {
    if (!shown(p.uid)) unseen_.push_back(p);
  }
}

void AllocationMatcher::verdict(const std::string& failed_uid) {
  exclude(failed_uid);
  if (!is_undecided(failed_uid)) return;
  std::erase_if(undecided_, [&](const auto& u) { return u.first == failed_uid; });
  if (verdicts_owed_ > 0) --verdicts_owed_;
  bound_verdicts_owed();
}

void AllocationMatcher::add_undecided(const std::vector<std::pair<std::string, std::string>>& pods) {
  for (const auto& p : pods) {
    if (!is_undecided(p.first)) undecided_.push_back(p);
  }
  ++verdicts_owed_;
  bound_verdicts_owed();
}

void AllocationMatcher::drop_undecided(const std::string& uid) {
  std::erase_if(undecided_, [&](const auto& u) { return u.first == uid; });
  bound_verdicts_owed();
}

void AllocationMatcher::bound_verdicts_owed() {
  // More owed than pods left to pay (kubelet asked twice for one pod; a
  // refused pod the watch never showed; one deleted before its verdict):
  // every one left may be dead, and none is served until its own verdict.
  verdicts_owed_ = std::min(verdicts_owed_, undecided_.size());
  // Every refusal's dead pod is known: the rest live.
  if (verdicts_owed_ == 0) undecided_.clear();
}

bool AllocationMatcher::is_undecided(const std::string& uid) const {
  return std::any_of(undecided_.begin(), undecided_.end(), [&](const auto& u) { return u.first == uid; });
}

bool AllocationMatcher::awaits_verdict(int devices) const {
  bool suspect = false;
  (void)find(devices, nullptr, nullptr, &suspect);
  return suspect;
}

bool AllocationMatcher::waits(const std::string& uid) const {
  return std::any_of(pods_.begin(), pods_.end(), [&](const WaitingPod& p) { return p.uid == uid; });
}

void AllocationMatcher::merge_arrivals() {
  for (const WaitingPod& p : pods_) merged_upto_ = std::max(merged_upto_, p.arrival);
}

Result<Assignment> AllocationMatcher::peek(int devices) const {
  auto found = find(devices, nullptr);
  if (!found) return found.error();
  const auto [pod, index] = *found;
  return Assignment{pod->uid, pod->key, pod->containers[index].name, (*pod->cards)[index], pod->containers[index].spec, pod->containers[index].alone};
}

Result<Assignment> AllocationMatcher::allocate(int devices) {
  std::string refused;
  std::vector<const WaitingPod*> undecided;
  auto found = find(devices, &refused, &undecided);
  if (!found) {
    last_uid_.clear();  // kubelet fails the pod: its admission is over
    // kubelet fails one of these: until it is known which, none of them is
    // served (undecided()).
    if (!undecided.empty()) {
      std::vector<std::pair<std::string, std::string>> pods;
      for (const WaitingPod* p : undecided) pods.emplace_back(p->uid, p->key);
      add_undecided(pods);
    }
    // That pod was kubelet's: it fails it, and the next Allocate is
    // another's (until the pod's status says so, it still looks waiting).
    if (!refused.empty()) exclude(refused, found.message());
    return found.error();
  }
  const auto [pod, index] = *found;
  Result<Assignment> a = Assignment{pod->uid, pod->key, pod->containers[index].name, (*pod->cards)[index], pod->containers[index].spec, pod->containers[index].alone};
  served_[a->pod_uid] += 1;
  last_uid_ = a->pod_uid;
  for (const WaitingPod& p : pods_) {
    if (p.uid == a->pod_uid) holdings_[p.uid] = Holding{p.key, p.holding};
  }
  return a;
}

}  // namespace fracpack::node
