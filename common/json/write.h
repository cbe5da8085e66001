// Writing JSON by hand where the output is small, hot or both (allocation
// records, extender replies, Binding bodies, log lines, the ledger report):
// appends to a std::string, no document model. Reading JSON is k8s/json.h.
#pragma once

#include <string>
#include <string_view>

namespace fracpack {

// Appends `s` as a JSON string literal (quoted, escaped) to `out`.
void append_json_string(std::string& out, std::string_view s);

// The same, with at most `max_bytes` of `s` (never cut inside a UTF-8
// sequence) and "..." after a cut: for text that may quote a client's input
// (reasons, errors), so a reply never grows with it.
void append_json_string_cut(std::string& out, std::string_view s, size_t max_bytes);

// `"key":"value"` and `"key":number` (integers without a decimal point),
// preceded by a comma unless `comma` is false.
void append_json_field(std::string& out, const char* key, std::string_view value, bool comma = true);
void append_json_number(std::string& out, const char* key, double value, bool comma = true);

}  // namespace fracpack
