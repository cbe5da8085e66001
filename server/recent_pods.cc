#include "server/recent_pods.h"

#include "k8s/limits.h"

namespace fracpack::server {

bool RecentPods::remember(const k8s::Pod& pod) {
  if (pod.meta.uid.empty()) return false;
  const size_t bytes = k8s::approx_bytes(pod);
  std::lock_guard lock(mu_);
  judge_locked(pod.meta.uid);
  auto it = by_uid_.find(pod.meta.uid);
  if (bytes > max_bytes_ / 8) {
    // Too large to keep: an older copy goes too (it would be stale).
    if (it != by_uid_.end()) {
      bytes_ -= it->second->bytes;
      recent_.erase(it->second);
      by_uid_.erase(it);
      return false;
    }
    return true;
  }
  if (it != by_uid_.end()) {
    // filter and prioritize send the same pod: copy it only if it changed.
    Entry& e = *it->second;
    if (e.pod.meta.resource_version != pod.meta.resource_version || pod.meta.resource_version.empty()) {
      bytes_ = bytes_ - e.bytes + bytes;
      e.pod = pod;
      e.bytes = bytes;
    }
    recent_.splice(recent_.begin(), recent_, it->second);
    evict_past_budget();
    return false;
  }
  recent_.push_front(Entry{pod, bytes});
  by_uid_[pod.meta.uid] = recent_.begin();
  bytes_ += bytes;
  evict_past_budget();
  return true;
}

void RecentPods::evict_past_budget() {
  while (recent_.size() > 1 && (recent_.size() > capacity_ || bytes_ > max_bytes_)) {
    bytes_ -= recent_.back().bytes;
    by_uid_.erase(recent_.back().pod.meta.uid);
    recent_.pop_back();
  }
}

std::optional<k8s::Pod> RecentPods::recall(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return std::nullopt;
  return it->second->pod;
}

void RecentPods::judge(const std::string& uid) {
  if (uid.empty()) return;
  std::lock_guard lock(mu_);
  judge_locked(uid);
}

void RecentPods::judge_locked(const std::string& uid) {
  if (!judged_.insert(uid).second) return;
  judged_order_.push_back(uid);
  while (judged_order_.size() > judged_capacity_) {
    judged_.erase(judged_order_.front());
    judged_order_.pop_front();
  }
}

bool RecentPods::judged(const std::string& uid) const {
  std::lock_guard lock(mu_);
  return judged_.contains(uid);
}

size_t RecentPods::size() const {
  std::lock_guard lock(mu_);
  return recent_.size();
}

size_t RecentPods::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace fracpack::server
