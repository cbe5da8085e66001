#include "node/devices_and_pods.h"

#include <utility>

#include <algorithm>
#include <limits>

#include "k8s/contract/fracpack.h"
#include "scheduling/fit.h"

namespace fracpack::node {

void DevicesAndPods::set_devices(std::vector<GpuDevice> devices) {
  std::lock_guard lock(mu_);
  devices_ = std::move(devices);
  ++devices_version_;
  changed_.notify_all();
}

bool DevicesAndPods::mark_unhealthy(const std::string& uuid, const std::string& problem) {
  std::lock_guard lock(mu_);
  bool changed = false;
  for (GpuDevice& d : devices_) {
    // A card's event concerns its MIG instances too.
    if ((d.uuid == uuid || d.parent_uuid == uuid) && d.healthy) {
      d.healthy = false;
      d.problem = problem;
      changed = true;
    }
  }
  if (changed) {
    ++devices_version_;
    changed_.notify_all();
  }
  return changed;
}

bool DevicesAndPods::set_limiter_problem(const std::string& uuid, const std::string& problem) {
  std::lock_guard lock(mu_);
  bool changed = false;
  for (GpuDevice& d : devices_) {
    if (d.uuid != uuid || d.isolation_problem == problem) continue;
    d.isolation_problem = problem;
    changed = true;
  }
  if (changed) {
    ++devices_version_;
    changed_.notify_all();
  }
  return changed;
}

void DevicesAndPods::set_registered(bool registered) {
  std::lock_guard lock(mu_);
  if (registered_ == registered) return;
  registered_ = registered;
  ++devices_version_;
  changed_.notify_all();
}

bool DevicesAndPods::registered() const {
  std::lock_guard lock(mu_);
  return registered_;
}

std::vector<GpuDevice> DevicesAndPods::devices() const {
  std::lock_guard lock(mu_);
  return devices_;
}

uint64_t DevicesAndPods::devices_version() const {
  std::lock_guard lock(mu_);
  return devices_version_;
}

uint64_t DevicesAndPods::wait_devices(uint64_t seen, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, deadline, [&] { return stopped_ || devices_version_ != seen; });
  return devices_version_;
}

void DevicesAndPods::set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live, std::vector<std::string> finished) {
  std::lock_guard lock(mu_);
  for (const std::string& uid : finished) matcher_.verdict(uid);
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, std::chrono::steady_clock::time_point> seen;
  for (const WaitingPod& p : pods) {
    auto it = first_seen_.find(p.uid);
    seen.emplace(p.uid, it == first_seen_.end() ? now : it->second);
  }
  first_seen_ = std::move(seen);
  matcher_.set_pods(std::move(pods), std::move(live));
  ++pods_version_;
  persist_locked();  // holdings of pods that are gone
  changed_.notify_all();
}

void DevicesAndPods::set_pod_check(CheckPod check) {
  std::lock_guard lock(mu_);
  check_ = std::move(check);
}

void DevicesAndPods::set_waiting_lister(ListWaiting list) {
  std::lock_guard lock(mu_);
  list_waiting_ = std::move(list);
}

void DevicesAndPods::wait_for_candidate(std::unique_lock<std::mutex>& lock, int devices, std::chrono::steady_clock::time_point deadline) const {
  // While no pod's record matches (a bind the watch has not shown yet),
  // every pod event may bring it; ambiguity is final (no event settles it).
  while (!matcher_.peek(devices) && !stopped_ && std::chrono::steady_clock::now() < deadline && matcher_.lacks_candidate(devices)) {
    const uint64_t seen = pods_version_;
    changed_.wait_until(lock, deadline, [&] { return stopped_ || pods_version_ != seen; });
  }
}

Result<Assignment> DevicesAndPods::allocate(int devices, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  // The pods listed for this Allocate count only for it (mu_ is held
  // whenever this runs: `lock` outlives it).
  struct ForgetUnseen {
    AllocationMatcher& matcher;
    ~ForgetUnseen() { matcher.forget_unseen(); }
  } forget_unseen{matcher_};
  CallEnd call_end{last_call_};  // declared after `lock`: runs with mu_ held
  merge_stale_locked();
  if (no_pod_could_be_asked(lock, devices)) {
    // The matcher's refusal (no pod waits), without ending the admission
    // kubelet may be in the middle of: this call is not part of it.
    return matcher_.peek(devices);
  }
  for (;;) {
    // The last refusal was ambiguity: which of its pods kubelet failed
    // decides this answer.
    if (matcher_.awaits_verdict(devices)) settle_undecided(lock, devices, std::min(deadline, std::chrono::steady_clock::now() + kUndecidedWait));
    // Only a settled answer is served or refused: a refusal ends the pod
    // kubelet was in the middle of, so waiting must not.
    wait_for_candidate(lock, devices, deadline);
    auto found = matcher_.peek(devices);
    // Asks the API server about a pod (the lock released meanwhile),
    // retrying an unknown answer until the deadline.
    auto confirm = [&](const Assignment& a) {
      CheckPod check = check_;
      PodCheck checked;
      do {
        lock.unlock();
        checked = check(a);
        lock.lock();
        if (!checked.settled && std::chrono::steady_clock::now() < deadline && !stopped_) {
          changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)),
                              [&] { return stopped_; });
        }
      } while (!checked.settled && std::chrono::steady_clock::now() < deadline && !stopped_);
      return checked;
    };
    if (!found && check_) {
      // The turn is a pod whose record cannot serve: refused, unless the
      // watch is behind and that pod is gone (deleted, finished, rejected by
      // kubelet before its Allocate) — then the turn is the next pod's.
      if (auto turn = matcher_.unservable_turn(devices)) {
        const PodCheck alive = confirm(Assignment{turn->first, turn->second, "", {}, {}});
        if (alive.settled && !alive.status.ok()) {
          matcher_.exclude(turn->first);
          continue;
        }
      }
    }
    if (found && check_) {
      // The watch may be behind the API server (a pod deleted, finished,
      // rejected by kubelet, its record changed): ask before answering.
      const uint64_t seen = pods_version_;
      const PodCheck checked = confirm(*found);
      if (!checked.settled) {
        // kubelet fails the pod on this refusal: it is never a candidate
        // again (while the API server is down its Failed status cannot
        // reach the watch, and the next pod's Allocate would be matched to
        // it).
        Error refused{"cannot confirm pod " + found->pod_key + " with the API server: " + checked.status.message()};
        matcher_.exclude(found->pod_uid, refused.message);
        persist_locked();
        return refused;
      }
      if (!checked.status.ok()) {
        matcher_.exclude(found->pod_uid);
        continue;  // passed over: match again
      }
      if (pods_version_ != seen) {
        auto again = matcher_.peek(devices);
        if (!again || again->pod_uid != found->pod_uid || again->container != found->container) continue;
      }
    }
    if (found && list_waiting_ && matcher_.begins_pod(*found)) {
      // kubelet may be admitting a pod bound here that the watch has not
      // shown yet: the API server's list now holds every pod kubelet knows.
      ListWaiting list = list_waiting_;
      const uint64_t seen = pods_version_;
      Result<std::vector<WaitingPod>> listed = Error{"not listed"};
      for (;;) {
        lock.unlock();
        listed = list();
        lock.lock();
        if (listed || stopped_ || std::chrono::steady_clock::now() >= deadline) break;
        changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)), [&] { return stopped_; });
      }
      if (!listed) {
        // kubelet fails the pod it admits, which may be one the watch does
        // not show: `found` is not excluded for it (the next pod would get
        // its cards), but the next Allocate first asks whether it failed.
        matcher_.add_undecided({{found->pod_uid, found->pod_key}});
        persist_locked();
        return Error{"cannot list the pods bound to this node with the API server (to tell which pod kubelet is admitting): " +
                     listed.message()};
      }
      matcher_.add_unseen(*listed);
      // The watch moved while the list was read: match again (the list is
      // read again for whichever pod is then found).
      if (pods_version_ != seen && std::chrono::steady_clock::now() < deadline && !stopped_) continue;
      auto again = matcher_.peek(devices);
      // Ambiguous now: refused below (matcher_.allocate answers the same).
      if (again && (again->pod_uid != found->pod_uid || again->container != found->container)) continue;
      if (!again) found = again;
    }
    if (found) {
      if (Status fits = within_capacity(*found); !fits.ok()) {
        matcher_.exclude(found->pod_uid, fits.message());  // kubelet fails the pod, as above
        persist_locked();
        return Error{fits.message()};
      }
    }
    auto a = matcher_.allocate(devices);
    persist_locked();
    return a;
  }
}

void DevicesAndPods::settle_undecided(std::unique_lock<std::mutex>& lock, int devices, std::chrono::steady_clock::time_point until) {
  while (matcher_.awaits_verdict(devices) && !stopped_) {
    const auto members = matcher_.undecided();
    if (check_) {
      CheckPod check = check_;
      for (const auto& [uid, key] : members) {
        if (std::chrono::steady_clock::now() >= until || stopped_) break;  // each read may take the client's timeout
        if (!matcher_.is_undecided(uid)) continue;  // settled meanwhile (the watch)
        lock.unlock();
        const PodCheck c = check(Assignment{uid, key, "", {}, {}});
        lock.lock();
        if (!c.settled || c.status.ok()) continue;  // unknown, or still waiting
        if (c.failed) {
          matcher_.verdict(uid);  // kubelet's verdict
        } else {
          matcher_.exclude(uid);  // deleted or re-created: no verdict
          matcher_.drop_undecided(uid);
        }
      }
    } else {
      // No API server to ask: a pod the watch shows leaving is taken for
      // the verdict.
      for (const auto& [uid, key] : members) {
        if (!matcher_.waits(uid)) matcher_.verdict(uid);
      }
    }
    // Not known in time (kubelet asking again for the pod it is still
    // admitting, or its status late): the pods stay undecided, and the
    // matcher refuses the one it would choose.
    if (!matcher_.awaits_verdict(devices) || std::chrono::steady_clock::now() >= until) return;
    const uint64_t seen = pods_version_;
    changed_.wait_until(lock, std::min(until, std::chrono::steady_clock::now() + kUndecidedPoll),
                        [&] { return stopped_ || pods_version_ != seen; });
  }
}

void DevicesAndPods::refuse_served(const std::string& uid, const std::string& refusal) {
  std::lock_guard lock(mu_);
  matcher_.refuse_served(uid, refusal);
  persist_locked();
}

void DevicesAndPods::set_card_slots(int slots) {
  std::lock_guard lock(mu_);
  card_slots_ = slots;
}

Status DevicesAndPods::within_capacity(const Assignment& a) const {
  const std::map<int, scheduling::CardCharge> others = matcher_.held_by_others(a.pod_uid);
  for (const scheduling::CardShare& share : a.cards) {
    auto o = others.find(share.index);
    if (o == others.end()) continue;  // guarding against other pods: a card no other holds is the extender's choice
    auto d = std::find_if(devices_.begin(), devices_.end(), [&](const GpuDevice& x) { return x.index == share.index; });
    const std::string card = "card " + std::to_string(share.index) + (d == devices_.end() ? "" : " (" + d->uuid + ")");
    // The extender's own rule (scheduling::share_within_capacity), on the
    // card as the agent publishes it: its memory (unknown for a card the
    // agent does not have: only compute and sharers are judged then) and
    // its device IDs as maxSharers.
    scheduling::Card published;
    published.memory_mib = d == devices_.end() ? std::numeric_limits<int64_t>::max() / 2 : d->memory_mib;
    published.max_sharers = card_slots_;
    scheduling::ContainerRequest asks;
    asks.memory_mib = share.memory_mib;
    asks.cores = share.cores;
    asks.alone = a.alone;
    const scheduling::CardUse held{o->second.memory_mib, o->second.cores, o->second.shares};
    if (!scheduling::share_within_capacity(asks, published, held)) {
      // The other pods may be other teams': the message names none.
      return Error{"pod " + a.pod_key + " container " + a.container + ": " + card +
                   " is already held by other pods on this node (" + k8s::cores_text(held.cores) + "% compute, " +
                   std::to_string(held.memory_mib) + " MiB), in " + std::to_string(held.sharers) + " container share(s)" +
                   (card_slots_ > 0 ? " of at most " + std::to_string(card_slots_) : std::string()) +
                   "; this container's record asks " + k8s::cores_text(asks.cores) + "% and " + std::to_string(asks.memory_mib) +
                   " MiB" + (asks.alone ? ", alone on the card" : "") + ": refused rather than put two pods past the card"};
    }
  }
  return Status::Ok();
}

void DevicesAndPods::persist_locked() {
  if (!persist_) return;
  AgentState now{matcher_.served(), matcher_.last_uid(), matcher_.holdings(), matcher_.undecided(), matcher_.verdicts_owed(),
                 matcher_.excluded()};
  if (now == persisted_) return;
  persisted_ = std::move(now);
  persist_(persisted_);
}

Result<Assignment> DevicesAndPods::peek(int devices, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  CallEnd call_end{last_call_};
  merge_stale_locked();
  // kubelet asks before it allocates, for the same pod: waiting would
  // steer a stray call to the next pod's cards.
  if (no_pod_could_be_asked(lock, devices)) return matcher_.peek(devices);
  // kubelet's verdict on an earlier refusal decides the answer here too
  // (else kubelet is steered to no card's IDs, and the Allocate after is
  // served on IDs of another card than its own).
  if (matcher_.awaits_verdict(devices)) settle_undecided(lock, devices, std::min(deadline, std::chrono::steady_clock::now() + kUndecidedWait));
  wait_for_candidate(lock, devices, deadline);
  return matcher_.peek(devices);
}

bool DevicesAndPods::no_pod_could_be_asked(std::unique_lock<std::mutex>& lock, int devices) {
  auto nothing_waits = [&] { return !matcher_.peek(devices).ok() && matcher_.lacks_candidate(devices); };
  if (!list_waiting_ || !nothing_waits()) return false;
  // No pod the watch shows: kubelet may know one bound a moment ago (the
  // watch behind), and then the API server lists it. If it lists none,
  // the call is not a pod's admission (found on the real tier, Real.E,
  // 2026-11-28: kubelet 1.20 re-allocated devices for a pod deleted a
  // moment before, as its sandbox was restarted; waiting, that Allocate
  // was answered with the cards of the next pod bound, and the next pod's
  // own Allocate found nothing left).
  ListWaiting list = list_waiting_;
  lock.unlock();
  const Result<std::vector<WaitingPod>> listed = list();
  lock.lock();
  return listed && nothing_waits() && !matcher_.lists_candidate(*listed, devices);
}

void DevicesAndPods::kubelet_restarted() {
  std::lock_guard lock(mu_);
  matcher_.merge_arrivals();
}

void DevicesAndPods::merge_stale_locked() {
  // kubelet busy admitting others (a burst, a refusal's wait) is not
  // kubelet missing a pod: only a pod kubelet left unasked while it asked
  // for nothing at all, that long.
  const auto now = std::chrono::steady_clock::now();
  const auto previous_call = std::exchange(last_call_, now);
  if (now - previous_call < stale_wait_) return;
  const auto cutoff = now - stale_wait_;
  for (const auto& [uid, at] : first_seen_) {
    if (at <= cutoff && matcher_.unasked(uid)) {
      matcher_.merge_arrivals();
      return;
    }
  }
}

void DevicesAndPods::set_stale_wait(std::chrono::milliseconds wait) {
  std::lock_guard lock(mu_);
  stale_wait_ = wait;
}

void DevicesAndPods::merge_arrivals_upto(uint64_t arrival) {
  std::lock_guard lock(mu_);
  matcher_.merge_arrivals_upto(arrival);
}

size_t DevicesAndPods::waiting_pods() const {
  std::lock_guard lock(mu_);
  return matcher_.pods();
}

void DevicesAndPods::set_persist(Persist persist) {
  std::lock_guard lock(mu_);
  persist_ = std::move(persist);
}

void DevicesAndPods::restore(AgentState state) {
  std::lock_guard lock(mu_);
  persisted_ = state;
  matcher_.restore(std::move(state.served), std::move(state.last_uid), std::move(state.holdings), std::move(state.undecided),
                   state.verdicts_owed, state.refused);
}

void DevicesAndPods::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

bool DevicesAndPods::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

}  // namespace fracpack::node
