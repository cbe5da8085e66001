#include "common/text.h"

namespace fracpack {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty() || &item != &items.front()) out += sep;
    out += item;
  }
  return out;
}

std::vector<std::string> split_list(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t at = s.find(sep, start);
    const size_t end = at == std::string_view::npos ? s.size() : at;
    std::string part = trim(s.substr(start, end - start));
    if (!part.empty()) out.push_back(std::move(part));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

std::vector<std::string_view> split_fields(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

ObjectKey split_object_key(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {{}, key, false};
  ObjectKey k{key.substr(0, slash), key.substr(slash + 1), false};
  k.valid = !k.namespace_name.empty() && !k.name.empty() && k.name.find('/') == std::string_view::npos;
  return k;
}

}  // namespace fracpack
