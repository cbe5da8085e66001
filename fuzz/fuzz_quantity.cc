// libFuzzer: Kubernetes quantities (../shared/reference/kubernetes-protocol.md §8.4). A parsed
// quantity converts without overflow or crash; extended-resource values are
// non-negative integers or errors.
#include <cstdint>
#include <string>

#include "scheduling/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto q = fracpack::Quantity::parse(text)) {
    (void)q->value();
    (void)q->milli_value();
    (void)q->negative();
  }
  if (auto v = fracpack::parse_extended_resource(text)) {
    if (*v < 0) __builtin_trap();
  }
  return 0;
}
