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

void AllocationMatcher::restore(std::map<std::string, int> served, std::string last_uid, std::map<std::string, Holding> holdings) {
  served_ = std::move(served);
  last_uid_ = std::move(last_uid);
  holdings_ = std::move(holdings);
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

std::vector<const WaitingPod*> AllocationMatcher::first_candidates(int devices) const {
  std::vector<const WaitingPod*> candidates;
  for (const WaitingPod& p : pods_) {
    if (next_of(p) != 0 || p.containers.empty() || p.containers[0].devices != devices || excluded_.contains(p.uid)) continue;
    candidates.push_back(&p);
  }
  return candidates;
}

bool AllocationMatcher::lacks_candidate(int devices) const { return first_candidates(devices).empty(); }

Result<std::pair<const WaitingPod*, size_t>> AllocationMatcher::find(int devices, std::string* refused_uid) const {
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
  if (earliest.size() == 1 && !earliest.front()->cards) {
    if (refused_uid != nullptr) *refused_uid = earliest.front()->uid;
    // kubelet shows this on the pod it admits, which may be another's (the
    // earliest may have been rejected before its Allocate): no name.
    return Error{"kubelet is admitting the pod bound to this node first among those waiting for " + asked +
                 ", and its allocation record cannot serve: " + earliest.front()->cards.message()};
  }
  for (const WaitingPod* c : earliest) {
    if (!equivalent(*earliest.front(), 0, *c, 0)) return ambiguous(earliest.size(), " were seen bound together and");
  }
  // kubelet takes pods that reach it together (its own relist) oldest
  // first: a later-bound pod that is older, on other cards, could be the
  // one it admits.
  const WaitingPod* chosen = earliest.front();
  for (const WaitingPod* c : candidates) {
    if (c->creation_timestamp < chosen->creation_timestamp && !equivalent(*chosen, 0, *c, 0)) {
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
  auto found = find(devices, &refused);
  if (!found) {
    last_uid_.clear();  // kubelet fails the pod: its admission is over
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
