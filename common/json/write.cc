#include "common/json/write.h"

#include <cstring>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace fracpack {

namespace {

// The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629:
// no overlongs, no surrogates, nothing past U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

void append_json_string_cut(std::string& out, std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return append_json_string(out, s);
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // s[n] continues a sequence: cut before it
  std::string kept(s.substr(0, n));
  kept += "...";
  append_json_string(out, kept);
}

namespace {

uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether any of the eight bytes is a control character, '"', '\\' or not
// ASCII (SWAR: a byte b < n sets its high bit in (x - n) & ~x when b < 0x80).
bool needs_look(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto zero_byte = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t control = (x - 0x20 * kOnes) & ~x & kHigh;
  return ((x & kHigh) | control | zero_byte(x ^ ('"' * kOnes)) | zero_byte(x ^ ('\\' * kOnes))) != 0;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  // Runs of characters that need no escape are appended whole; bytes that
  // are not UTF-8 become U+FFFD, so the output is always valid JSON.
  static constexpr auto kEscape = [] {
    std::array<bool, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<size_t>(c)] = true;
    for (int c = 0x80; c < 0x100; ++c) t[static_cast<size_t>(c)] = true;
    t['"'] = true;
    t['\\'] = true;
    return t;
  }();
  out.push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    // Eight bytes at a time while none needs a look (names and reasons
    // are mostly plain ASCII: a filter reply is hundreds of KiB of them).
    while (i + 8 <= s.size() && !needs_look(load8(s.data() + i))) i += 8;
    if (i >= s.size()) break;
    const auto ch = static_cast<unsigned char>(s[i]);
    if (!kEscape[ch]) continue;
    if (ch >= 0x80) {
      if (const size_t n = utf8_sequence(s, i); n > 0) {
        i += n - 1;  // well-formed: part of the run
        continue;
      }
      out.append(s.data() + run, i - run);
      run = i + 1;
      out += "\\ufffd";
      continue;
    }
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
