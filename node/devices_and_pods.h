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
  void set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live = {});
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
  };
  // Confirms with the API server that the pod still waits here with this
  // container's cards; an Assignment without a container asks only whether
  // the pod still waits here (a pod whose record cannot serve).
  using CheckPod = std::function<PodCheck(const Assignment&)>;
  void set_pod_check(CheckPod check);
  // What allocate would answer (GetPreferredAllocation), waiting for the
  // pod watch the same way.
  Result<Assignment> peek(int devices, std::chrono::steady_clock::time_point deadline) const;
  size_t waiting_pods() const;
  // kubelet restarted (the device plugin saw its socket recreated).
  void kubelet_restarted();

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
  bool stopped_ = false;
};

}  // namespace fracpack::node
