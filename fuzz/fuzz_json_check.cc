// libFuzzer: check_json_text, which validates request bodies too large for
// simdjson's DOM parser, must accept exactly what that parser accepts
// (smaller bodies are validated by it), on any bytes: so whether a body is
// JSON never depends on its size. Two documented exceptions: UTF-8 (left
// to simdjson's stage 1, which checks it in both paths) is skipped, and
// numbers past simdjson's range (a grammar check does not weigh
// magnitudes) are told apart by parsing again with every digit run made
// small.
#include <simdjson.h>

#include <cstdint>
#include <string>

#include "common/json/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static simdjson::dom::parser parser;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool checked = fracpack::check_json_text(text, "").ok();
  if (!simdjson::validate_utf8(text.data(), text.size())) return 0;
  auto error = parser.parse(text).error();
  if (error == simdjson::NUMBER_ERROR) {
    // "123456789012345678901234567890" and "1e400" become "1" and "1e1"
    // (outside strings, where a \uXXXX escape has digits); a leading zero
    // stays one ("01" is no number either way).
    std::string small;
    bool in_string = false;
    for (size_t i = 0; i < text.size();) {
      const char c = text[i];
      if (in_string || c < '0' || c > '9') {
        if (c == '"') in_string = !in_string;
        small += c;
        ++i;
        if (in_string && c == '\\' && i < text.size()) small += text[i++];
        continue;
      }
      size_t j = i;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
      small += c == '0' && j - i > 1 ? "01" : (c == '0' ? "0" : "1");
      i = j;
    }
    error = parser.parse(small).error();
  }
  if (checked != (error == simdjson::SUCCESS)) __builtin_trap();
  return 0;
}
