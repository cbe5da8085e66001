// Pods kube-scheduler sent with filter or prioritize, remembered for a bind
// that arrives before the pod informer has seen the pod (kube-scheduler
// binds right after it filters). Most recent first; the least recently used
// goes past `capacity`.
#pragma once

#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "k8s/objects.h"

namespace fracpack::server {

class RecentPods {
 public:
  explicit RecentPods(size_t capacity) : capacity_(capacity) {}
  void remember(const k8s::Pod& pod);
  std::optional<k8s::Pod> recall(const std::string& uid) const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<k8s::Pod> recent_;  // most recent first
  std::unordered_map<std::string, std::list<k8s::Pod>::iterator> by_uid_;
};

}  // namespace fracpack::server
