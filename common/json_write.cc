#include "common/json_write.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace fracpack {

void append_json_string(std::string& out, std::string_view s) {
  // Runs of characters that need no escape are appended whole.
  static constexpr auto kEscape = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<size_t>(c)] = true;
    t['"'] = true;
    t['\\'] = true;
    return t;
  }();
  out.push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (!kEscape[ch]) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        static const char* hex = "0123456789abcdef";
        out += "\\u00";
        out.push_back(hex[ch >> 4]);
        out.push_back(hex[ch & 15]);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void append_json_field(std::string& out, const char* key, std::string_view value, bool comma) {
  if (comma) out.push_back(',');
  out.push_back('"');
  out += key;
  out += "\":";
  append_json_string(out, value);
}

void append_json_number(std::string& out, const char* key, double value, bool comma) {
  if (comma) out.push_back(',');
  out.push_back('"');
  out += key;
  out += "\":";
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    out += std::to_string(static_cast<int64_t>(value));
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", std::isfinite(value) ? value : 0.0);
    out += buf;
  }
}

}  // namespace fracpack
