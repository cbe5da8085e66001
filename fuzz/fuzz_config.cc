// libFuzzer: the YAML configuration. Any text gives a configuration or an
// error naming where; never a crash or an exception out of parse_config.
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)fracpack::config::parse_config(text, "fuzz.yaml");
  return 0;
}
