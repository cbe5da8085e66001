// HostPriorityList (k8s.io/kube-scheduler/extender/v1), the prioritize
// reply: a bare array of {"Host", "Score"}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack::k8s {

struct HostPriority {
  std::string_view host;  // a view (into the request, or the caller's names)
  int64_t score = 0;
};
std::string format_host_priorities(const std::vector<HostPriority>& list);
// One HostPriority as format_host_priorities writes it. Scores 0..10 (all
// an extender gives) take two characters, `"Score": 9` and `"Score":10`, so
// a kept reply can write a changed score over in place: returns where they
// are in `out`.
size_t append_host_priority(std::string& out, std::string_view host, int64_t score);
void write_score(char* at, int64_t score);  // 0..10, at the position append_host_priority returned

}  // namespace fracpack::k8s
