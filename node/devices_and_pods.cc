#include "node/devices_and_pods.h"

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

void DevicesAndPods::set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live) {
  std::lock_guard lock(mu_);
  matcher_.set_pods(std::move(pods), std::move(live));
  ++pods_version_;
  persist_locked();  // holdings of pods that are gone
  changed_.notify_all();
}

void DevicesAndPods::set_pod_check(CheckPod check) {
  std::lock_guard lock(mu_);
  check_ = std::move(check);
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
  for (;;) {
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
  AgentState now{matcher_.served(), matcher_.last_uid(), matcher_.holdings()};
  if (now == persisted_) return;
  persisted_ = std::move(now);
  persist_(persisted_);
}

Result<Assignment> DevicesAndPods::peek(int devices, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  wait_for_candidate(lock, devices, deadline);
  return matcher_.peek(devices);
}

void DevicesAndPods::kubelet_restarted() {
  std::lock_guard lock(mu_);
  matcher_.merge_arrivals();
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
  matcher_.restore(std::move(state.served), std::move(state.last_uid), std::move(state.holdings));
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
