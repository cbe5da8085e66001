#include "scheduling/decision_cache.h"

#include <algorithm>
#include <charconv>

namespace fracpack::scheduling {

namespace {

void append_number(std::string& k, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  k.append(buf, r.ptr);
}

void append_list(std::string& k, char tag, const std::vector<std::string>& list) {
  k += '|';
  k += tag;
  for (const auto& s : list) {
    k += s;
    k += ';';
  }
}

}  // namespace

// Built once per request (and per replayed pod): appended in place, no
// temporaries.
std::string demand_key(const PodRequest& pod) {
  std::string k;
  k.reserve(32 + 24 * pod.containers.size());
  append_number(k, pod.cpu_milli);
  k += '/';
  append_number(k, pod.memory_bytes);
  for (const ContainerRequest& c : pod.containers) {
    k += '|';
    k += c.init ? 'i' : 'a';
    append_number(k, c.cards);
    k += 'x';
    append_number(k, c.cores);
    k += ',';
    append_number(k, c.memory_mib);
    k += ',';
    append_number(k, c.memory_percent);
    if (c.alone) k += 'A';
    if (c.percent_rounds_down) k += 'D';
    if (c.needs_enforcement) k += 'E';
  }
  append_list(k, pod.model_match == PodRequest::ModelMatch::kExact ? 'm' : 'M', pod.allowed_models);
  append_list(k, '-', pod.excluded_models);
  append_list(k, 'u', pod.uuid_allow);
  append_list(k, 'x', pod.uuid_exclude);
  if (pod.numa_single) k += "|numa";
  if (pod.init_names_unknown_resources) k += "|initx";
  return k;
}

DecisionCache::DecisionCache(size_t max_demands) : max_demands_(std::max<size_t>(max_demands, 1)) {}

std::vector<DecisionCache::Entry>& DecisionCache::entries(const PodRequest& pod, size_t slots) {
  std::string key = demand_key(pod);
  auto it = demands_.find(key);
  if (it == demands_.end()) {
    if (demands_.size() >= max_demands_) {
      demands_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(key);
    it = demands_.emplace(std::move(key), Demand{}).first;
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  if (it->second.entries.size() < slots) it->second.entries.resize(slots);
  return it->second.entries;
}

}  // namespace fracpack::scheduling
