#include "k8s/contract/contract.h"

#include "scheduling/fit.h"

namespace fracpack::k8s {

Result<int> Contract::cards_of_devices(int64_t devices) const {
  // One device ID per card, up to the most a pod's record holds.
  if (devices < 1 || devices > static_cast<int64_t>(scheduling::Picks::kMax)) {
    return Error{std::to_string(devices) + " is not a device count 1.." + std::to_string(scheduling::Picks::kMax)};
  }
  return static_cast<int>(devices);
}

}  // namespace fracpack::k8s
