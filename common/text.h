// Text helpers every layer reads values with: trimmed lists, positional
// fields, whole decimal integers, quoted values for messages. Standard
// library only.
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace fracpack {

// `text` without leading and trailing blanks (space, tab, CR, LF).
std::string trim(std::string_view text);
// The non-empty, trimmed parts of `text` split at `sep` ("A|B", "0, 2").
std::vector<std::string> split_list(std::string_view text, char sep);
// `items` with `sep` between them ("a,b,c").
std::string join(const std::vector<std::string>& items, std::string_view sep);
// Every part of `text` split at `sep`, empty ones kept, untrimmed (the
// positional fields of a record: "uuid,10,32768,,").
std::vector<std::string_view> split_fields(std::string_view text, char sep);
// A whole decimal integer and nothing else (no space, no sign but '-').
template <class Int>
bool parse_decimal(std::string_view text, Int& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}
// "value" in double quotes, for messages.
std::string in_quotes(std::string_view text);

// A namespaced object's key, "namespace/name" (a pod's key, a ConfigMap's
// reference), split at its first '/': the one place that does it. `valid`
// is false when there is no '/' (then `name` is the whole key and
// `namespace_name` empty), when either part is empty, or when the name has
// a '/' of its own (no Kubernetes name has one).
struct ObjectKey {
  std::string_view namespace_name;
  std::string_view name;
  bool valid = false;
};
ObjectKey split_object_key(std::string_view key);

}  // namespace fracpack
