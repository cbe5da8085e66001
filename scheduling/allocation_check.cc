#include "scheduling/allocation_check.h"

#include <algorithm>

namespace fracpack::scheduling {

Status allocation_within_request(const PodRequest& pod, const Allocation& allocation, const NodeSpec* node) {
  for (const ContainerAllocation& ca : allocation.containers) {
    const std::string who = "container " + ca.name;
    auto c = std::find_if(pod.containers.begin(), pod.containers.end(), [&](const ContainerRequest& r) { return r.name == ca.name; });
    if (c == pod.containers.end()) return Error{who + " asks for no GPU"};
    if (c->init != ca.init) return Error{who + (ca.init ? " is not an init container" : " is an init container")};
    if (static_cast<int>(ca.cards.size()) > c->cards) {
      return Error{who + " holds " + std::to_string(ca.cards.size()) + " cards but asks for " + std::to_string(c->cards)};
    }
    for (const CardShare& s : ca.cards) {
      const std::string card = who + ", card " + std::to_string(s.index);
      if (s.cores > c->cores) {
        return Error{card + ": " + std::to_string(s.cores / 10) + "% compute, more than the " + std::to_string(c->cores / 10) + "% asked"};
      }
      int64_t asked = c->memory_mib;
      if (c->memory_percent > 0) {
        const Card* found = nullptr;
        if (node != nullptr) {
          for (const Card& k : node->cards) {
            if (k.index == s.index) found = &k;
          }
        }
        if (found == nullptr) continue;  // its size is not known: the percentage cannot be checked
        asked = c->memory_on(found->memory_mib);
      }
      if (s.memory_mib > asked) {
        return Error{card + ": " + std::to_string(s.memory_mib) + " MiB, more than the " + std::to_string(asked) + " MiB asked"};
      }
    }
  }
  return Status::Ok();
}

}  // namespace fracpack::scheduling
