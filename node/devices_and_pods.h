// What the node agent knows, shared by its threads: the devices discovery
// and health watching found, and the pods waiting on this node with their
// allocation records (AllocationMatcher). The device plugin reads it; the
// NVML and pod-watch threads write it. Every change wakes the waiters
// (ListAndWatch streams; an Allocate waiting for its pod to be seen).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "node/agent_state.h"
#include "node/allocation_matcher.h"
#include "node/nvml.h"

namespace fracpack::node {

class DevicesAndPods {
 public:
  // Devices (from discover()); their health as discovered.
  void set_devices(std::vector<GpuDevice> devices);
  // A health event: the device turns unhealthy (sticky until the next
  // discovery, as NVIDIA's plugin does). Returns whether anything changed.
  bool mark_unhealthy(const std::string& uuid, const std::string& problem);
  std::vector<GpuDevice> devices() const;
  // The limiter of card `uuid` (MPS: its control daemon; HAMi-core: its
  // library) cannot serve ("": it can again): the card takes nothing new
  // meanwhile (kubelet and the extender see it unusable). Returns whether
  // anything changed.
  bool set_limiter_problem(const std::string& uuid, const std::string& problem);
  // Whether kubelet has the device plugin registered (the published cards
  // say so: the extender places nothing on them while it has not). A change
  // counts as a device change (the publisher and ListAndWatch wake).
  void set_registered(bool registered);
  // How many containers a card serves at once: the device IDs the plugin
  // lists per card, published as the card's maxSharers (0: no limit).
  void set_card_slots(int slots);
  bool registered() const;
  // The device list's version: it grows with every change.
  uint64_t devices_version() const;
  // Waits until the version differs from `seen`, `deadline` passes or
  // stop() is called; returns the current version.
  uint64_t wait_devices(uint64_t seen, std::chrono::steady_clock::time_point deadline) const;

  // The pods waiting on the node, and the other live pods there (pod_watch.h).
  // `finished`: pods the watch saw go from waiting to failed at admission
  // (records.h failed_at_allocate: kubelet's verdict on a refusal,
  // AllocationMatcher::verdict), seen
  // before any deletion that follows (a controller replacing a failed pod
  // at once would otherwise leave the refusal without its verdict).
  void set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live = {}, std::vector<std::string> finished = {});
  // Serves kubelet's Allocate of `devices` IDs: while no record matches,
  // waits for the pod watch (a bind the agent has not seen yet) until
  // `deadline`, then refuses with the matcher's reason. The pod found is
  // confirmed with the API server first (set_pod_check): one gone,
  // finished, being deleted or changed since the watch saw it is passed
  // over. And the agent's own account must allow it: refused when its
  // cards would go past their capacity beside what the other live pods
  // hold (an exclusive card held by another pod, over 100 % compute, over
  // the card's memory).
  Result<Assignment> allocate(int devices, std::chrono::steady_clock::time_point deadline);
  // The answer for an allocate()d container could not be built: kubelet
  // fails its pod (AllocationMatcher::refuse_served).
  void refuse_served(const std::string& uid, const std::string& refusal);
  // Confirms with the API server that the pod an Allocate is for still
  // waits as the watch showed it: ok; an error that settles it (gone,
  // finished, being deleted, changed: `settled`) or a failed read (tried
  // again until the deadline). Called without the state's lock.
  struct PodCheck {
    Status status;
    bool settled = true;  // false: the read failed, the answer is unknown
    bool failed = false;  // kubelet failed it at admission (records.h failed_at_allocate): its verdict on a refusal
  };
  // Confirms with the API server that the pod still waits here with this
  // container's cards; an Assignment without a container asks only whether
  // the pod still waits here (a pod whose record cannot serve).
  using CheckPod = std::function<PodCheck(const Assignment&)>;
  void set_pod_check(CheckPod check);
  // The pods the API server lists as waiting on this node (what kubelet
  // may know): read when an Allocate begins a pod, so that one kubelet
  // knows and the watch does not yet can make the answer ambiguous
  // (AllocationMatcher::add_unseen). An error is a failed read, tried
  // again until the deadline, then a refusal. Called without the lock.
  using ListWaiting = std::function<Result<std::vector<WaitingPod>>()>;
  void set_waiting_lister(ListWaiting list);
  // What allocate would answer (GetPreferredAllocation), waiting for the
  // pod watch and kubelet's verdicts the same way.
  Result<Assignment> peek(int devices, std::chrono::steady_clock::time_point deadline);
  size_t waiting_pods() const;
  // kubelet restarted (the device plugin saw its socket recreated).
  void kubelet_restarted();
  // How long a pod may wait unasked before kubelet is taken to have missed
  // it (5 s; merge_stale_locked).
  void set_stale_wait(std::chrono::milliseconds wait);
  // kubelet may relist (PodWatch::watch_interrupted): the pods waiting, and
  // those arriving up to `arrival`, have no known order among themselves.
  void merge_arrivals_upto(uint64_t arrival);

  // What the matcher has served survives the agent's restart (a pod whose
  // containers were all allocated but that is not running yet must not be
  // taken for a new one): `persist` is called after every allocate, under
  // the state's lock, before kubelet gets its answer; restore() puts a
  // saved state back before the first pod list.
  using Persist = std::function<void(const AgentState& state)>;
  void set_persist(Persist persist);
  void restore(AgentState state);

  // Wakes every waiter for shutdown.
  void stop();
  bool stopped() const;

 private:
  // Until `devices` has a candidate, or none can come (ambiguity, stop,
  // `deadline`).
  void wait_for_candidate(std::unique_lock<std::mutex>& lock, int devices, std::chrono::steady_clock::time_point deadline) const;
  // While the pod the matcher would choose for `devices` may be one kubelet
  // failed on an earlier refusal (AllocationMatcher::undecided), at most
  // until `until`: asks the API server for kubelet's verdicts, or the watch
  // shows them.
  void settle_undecided(std::unique_lock<std::mutex>& lock, int devices, std::chrono::steady_clock::time_point until);
  // kubelet reports a rejected pod's status at once; its Allocate holds
  // kubelet's pod loop, so the wait is short: a status this late is one
  // that is not coming soon (kubelet asking again for the pod it still
  // admits, its status update failed), and the choice is refused.
  static constexpr std::chrono::milliseconds kUndecidedWait{2000};
  // A pod kubelet has not asked for this long after the agent saw it bound
  // (AllocationMatcher::unasked), while kubelet asked for nothing at all,
  // is one kubelet's watch has not delivered (its watch broke; the
  // agent's did not): kubelet will take it in a relist, with every pod
  // waiting then (merge_stale_locked).
  std::chrono::milliseconds stale_wait_{5000};
  // With mu_ held (released while the API server is asked): whether no pod
  // the watch shows, nor one the API server lists, could be the one a call
  // for `devices` is about — then it is no pod's admission and is answered
  // at once, not after waiting for the next pod.
  bool no_pod_could_be_asked(std::unique_lock<std::mutex>& lock, int devices);
  // With mu_ held: the matcher's arrivals merged when a waiting pod is stale.
  void merge_stale_locked();
  std::map<std::string, std::chrono::steady_clock::time_point> first_seen_;  // waiting pod uid -> when set_pods first had it
  std::chrono::steady_clock::time_point last_call_{};                       // kubelet's last Allocate or preference, begun or ended
  // Stamps last_call_ when a call ends too: a call that waited long (for a
  // pod, a verdict, the API server) is kubelet busy, not idle.
  struct CallEnd {
    std::chrono::steady_clock::time_point& at;
    ~CallEnd() { at = std::chrono::steady_clock::now(); }
  };
  static constexpr std::chrono::milliseconds kUndecidedPoll{250};

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::vector<GpuDevice> devices_;
  bool registered_ = false;
  int card_slots_ = 0;
  uint64_t devices_version_ = 0;
  uint64_t pods_version_ = 0;
  AllocationMatcher matcher_;
  // With mu_ held: the matcher's state to persist_, when it changed.
  void persist_locked();
  // Whether `a` (of pod `uid`) fits beside what the other live pods hold.
  Status within_capacity(const Assignment& a) const;

  Persist persist_;
  AgentState persisted_;  // what persist_ was last given
  CheckPod check_;
  ListWaiting list_waiting_;
  bool stopped_ = false;
};

}  // namespace fracpack::node
