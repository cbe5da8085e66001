#include "server/recent_pods.h"

namespace fracpack::server {

void RecentPods::remember(const k8s::Pod& pod) {
  if (pod.meta.uid.empty()) return;
  std::lock_guard lock(mu_);
  if (auto it = by_uid_.find(pod.meta.uid); it != by_uid_.end()) {
    // filter and prioritize send the same pod: copy it only if it changed.
    if (it->second->meta.resource_version != pod.meta.resource_version || pod.meta.resource_version.empty()) *it->second = pod;
    recent_.splice(recent_.begin(), recent_, it->second);
    return;
  }
  recent_.push_front(pod);
  by_uid_[pod.meta.uid] = recent_.begin();
  if (recent_.size() > capacity_) {
    by_uid_.erase(recent_.back().meta.uid);
    recent_.pop_back();
  }
}

std::optional<k8s::Pod> RecentPods::recall(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return std::nullopt;
  return *it->second;
}

}  // namespace fracpack::server
