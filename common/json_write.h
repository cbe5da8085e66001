// Writing JSON by hand where the output is small, hot or both (allocation
// records, extender replies, Binding bodies, log lines, the ledger report):
// appends to a std::string, no document model. Reading JSON is k8s/json.h.
#pragma once

#include <string>
#include <string_view>

namespace fracpack {

// Appends `s` as a JSON string literal (quoted, escaped) to `out`.
void append_json_string(std::string& out, std::string_view s);

// `s` cut to at most `max_bytes`, never inside a UTF-8 sequence; `cut` says
// whether anything was dropped.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes, bool* cut = nullptr);

// `"key":"value"` and `"key":number` (integers without a decimal point),
// preceded by a comma unless `comma` is false.
void append_json_field(std::string& out, const char* key, std::string_view value, bool comma = true);
void append_json_number(std::string& out, const char* key, double value, bool comma = true);

}  // namespace fracpack
