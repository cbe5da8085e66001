// libFuzzer: the annotations fracpack reads back: a pod's allocation record
// (fracpack.io/allocation) and a node's device list (fracpack.io/gpu-devices)
// and cordon list. The first byte picks which.
#include <cstdint>
#include <string>

#include "k8s/contract/fracpack.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const fracpack::k8s::ContractNames names;
  if (data[0] % 2 == 0) {
    if (auto a = fracpack::k8s::parse_allocation(text)) {
      // What parses formats and parses back to the same record.
      auto again = fracpack::k8s::parse_allocation(fracpack::k8s::format_allocation(*a));
      if (!again || fracpack::k8s::format_allocation(*again) != fracpack::k8s::format_allocation(*a)) __builtin_trap();
    }
  } else {
    fracpack::k8s::Node node;
    node.meta.name = "n";
    node.meta.annotations = {{names.devices, text}, {names.cordon, text.substr(0, text.size() / 2)}};
    (void)fracpack::k8s::FracpackContract(names).node_spec(node);
  }
  return 0;
}
