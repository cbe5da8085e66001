// Pods kube-scheduler sent with filter or prioritize, remembered for a bind
// that arrives before the pod informer has seen the pod (kube-scheduler
// binds right after it filters). Most recent first; the least recently used
// goes when there are more than `capacity` pods or `max_bytes` of them. A
// pod larger than an eighth of the bytes is not kept (its bind waits for
// the informer): a client cannot make fracpack hold more than the budget,
// nor flush the others out with one pod.
#pragma once

#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "k8s/objects.h"

namespace fracpack::server {

class RecentPods {
 public:
  // At most `capacity` pods and `max_bytes` of them are kept.
  explicit RecentPods(size_t capacity = 4096, size_t max_bytes = 64 << 20, size_t judged_capacity = 65536)
      : capacity_(capacity), max_bytes_(max_bytes), judged_capacity_(judged_capacity) {}
  // True when the pod was not remembered yet (its first filter, as far as
  // the bounded memory tells): a learning policy counts each pod once.
  bool remember(const k8s::Pod& pod);
  std::optional<k8s::Pod> recall(const std::string& uid) const;
  // The pod was sent with a filter or prioritize request (kept or not: the
  // last `judged_capacity` UIDs are remembered, a few bytes each). bind
  // places only pods fracpack has judged.
  void judge(const std::string& uid);
  bool judged(const std::string& uid) const;

  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    k8s::Pod pod;
    size_t bytes = 0;
  };
  void evict_past_budget();  // mu_ held
  void judge_locked(const std::string& uid);

  const size_t capacity_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> recent_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_uid_;
  size_t bytes_ = 0;
  const size_t judged_capacity_;
  std::unordered_set<std::string> judged_;
  std::deque<std::string> judged_order_;  // oldest first
};

}  // namespace fracpack::server
