// libFuzzer: the extender request bodies kube-scheduler sends (filter and
// prioritize ExtenderArgs, ExtenderBindingArgs, ExtenderPreemptionArgs).
// The first byte picks the verb. Any input must give a value or an error,
// never a crash, a sanitizer report or a read past the body.
#include <cstdint>
#include <string>

#include "k8s/contract/fracpack.h"
#include "k8s/extender_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fracpack::k8s::Selection selection = fracpack::k8s::ContractNames{}.selection();
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      if (auto a = fracpack::k8s::parse_extender_args(body, selection)) {
        if (a->pod) (void)fracpack::k8s::FracpackContract{}.pod_request(*a->pod);
      }
      break;
    case 1:
      (void)fracpack::k8s::parse_binding_args(body);
      break;
    default:
      (void)fracpack::k8s::parse_preemption_args(body, selection);
      break;
  }
  return 0;
}
