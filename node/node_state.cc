#include "node/node_state.h"

namespace fracpack::node {

void NodeState::set_devices(std::vector<GpuDevice> devices) {
  std::lock_guard lock(mu_);
  devices_ = std::move(devices);
  ++devices_version_;
  changed_.notify_all();
}

bool NodeState::mark_unhealthy(const std::string& uuid, const std::string& problem) {
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

std::vector<GpuDevice> NodeState::devices() const {
  std::lock_guard lock(mu_);
  return devices_;
}

uint64_t NodeState::devices_version() const {
  std::lock_guard lock(mu_);
  return devices_version_;
}

uint64_t NodeState::wait_devices(uint64_t seen, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, deadline, [&] { return stopped_ || devices_version_ != seen; });
  return devices_version_;
}

void NodeState::set_pods(std::vector<WaitingPod> pods) {
  std::lock_guard lock(mu_);
  matcher_.set_pods(std::move(pods));
  ++pods_version_;
  changed_.notify_all();
}

void NodeState::wait_for_candidate(std::unique_lock<std::mutex>& lock, int devices, std::chrono::steady_clock::time_point deadline) const {
  // While no pod's record matches (a bind the watch has not shown yet),
  // every pod event may bring it; ambiguity is final (no event settles it).
  while (!matcher_.peek(devices) && !stopped_ && std::chrono::steady_clock::now() < deadline && matcher_.lacks_candidate(devices)) {
    const uint64_t seen = pods_version_;
    changed_.wait_until(lock, deadline, [&] { return stopped_ || pods_version_ != seen; });
  }
}

Result<Assignment> NodeState::allocate(int devices, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  // Only a settled answer is served or refused: a refusal ends the pod
  // kubelet was in the middle of, so waiting must not.
  wait_for_candidate(lock, devices, deadline);
  auto a = matcher_.allocate(devices);
  if (persist_ && (matcher_.served() != persisted_served_ || matcher_.last_uid() != persisted_last_)) {
    persisted_served_ = matcher_.served();
    persisted_last_ = matcher_.last_uid();
    persist_(persisted_served_, persisted_last_);
  }
  return a;
}

Result<Assignment> NodeState::peek(int devices, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  wait_for_candidate(lock, devices, deadline);
  return matcher_.peek(devices);
}

void NodeState::kubelet_restarted() {
  std::lock_guard lock(mu_);
  matcher_.merge_arrivals();
}

size_t NodeState::waiting_pods() const {
  std::lock_guard lock(mu_);
  return matcher_.pods();
}

void NodeState::set_persist(Persist persist) {
  std::lock_guard lock(mu_);
  persist_ = std::move(persist);
}

void NodeState::restore(std::map<std::string, int> served, std::string last_uid) {
  std::lock_guard lock(mu_);
  persisted_served_ = served;
  persisted_last_ = last_uid;
  matcher_.restore(std::move(served), std::move(last_uid));
}

void NodeState::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

bool NodeState::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

}  // namespace fracpack::node
