#include "common/json/stream.h"

#include <bit>
#include <cstdint>

#if defined(__AVX2__) && defined(__PCLMUL__)
#include <immintrin.h>
#define FRACPACK_JSON_STREAM_SIMD 1
#endif

namespace fracpack {
namespace {

constexpr size_t npos = std::string_view::npos;

#ifdef FRACPACK_JSON_STREAM_SIMD
// One 64-byte block as bit masks, bit i for byte i.
struct BlockMasks {
  uint64_t quote;
  uint64_t backslash;
  uint64_t open;   // '{' or '['
  uint64_t close;  // '}' or ']'
};

inline uint64_t mask64(__m256i lo, __m256i hi) {
  return uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(lo))} |
         (uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(hi))} << 32);
}

inline BlockMasks classify(const char* p) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  // '[' | 0x20 == '{' and ']' | 0x20 == '}', and no other byte maps there.
  const __m256i case_bit = _mm256_set1_epi8(0x20);
  const __m256i lo_folded = _mm256_or_si256(lo, case_bit);
  const __m256i hi_folded = _mm256_or_si256(hi, case_bit);
  auto equal = [](__m256i a, __m256i b, char c) {
    const __m256i v = _mm256_set1_epi8(c);
    return mask64(_mm256_cmpeq_epi8(a, v), _mm256_cmpeq_epi8(b, v));
  };
  return {equal(lo, hi, '"'), equal(lo, hi, '\\'), equal(lo_folded, hi_folded, '{'), equal(lo_folded, hi_folded, '}')};
}

// Bit i set when an odd number of bits at or below i are set: with quote
// bits, the bytes inside strings (opening quote included, closing excluded).
inline uint64_t prefix_xor(uint64_t bits) {
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(bits)), _mm_set1_epi8(static_cast<char>(0xFF)), 0);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(r));
}

// The bytes escaped by a backslash (simdjson's branchless method): in a run
// of backslashes every second one escapes the next byte, which the carry of
// an addition finds for every run at once. `carry` is 1 when the previous
// block ended with an unpaired backslash.
inline uint64_t escaped_bytes(uint64_t backslash, uint64_t& carry) {
  backslash &= ~carry;
  const uint64_t follows_escape = backslash << 1 | carry;
  constexpr uint64_t kEvenBits = 0x5555555555555555ULL;
  const uint64_t odd_sequence_starts = backslash & ~kEvenBits & ~follows_escape;
  uint64_t sequences_starting_on_even_bits = 0;
  carry = __builtin_add_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits) ? 1 : 0;
  const uint64_t invert_mask = sequences_starting_on_even_bits << 1;
  return (kEvenBits ^ invert_mask) & follows_escape;
}
#endif

}  // namespace

bool JsonScanner::step(char c) {
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return true;
  }
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      break;
    case '}':
    case ']':
      if (--depth_ < 0) return false;
      break;
    default:
      break;
  }
  return true;
}

size_t JsonScanner::skip_to_depth_scalar(std::string_view s, int target) {
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    if (in_string_) {
      if (escape_) {
        escape_ = false;
        ++i;
        continue;
      }
      while (i < n && p[i] != '"' && p[i] != '\\') ++i;
      if (i == n) break;
      if (p[i] == '\\') {
        escape_ = true;
      } else {
        in_string_ = false;
      }
      ++i;
      continue;
    }
    const char c = p[i++];
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == target) return i;
    }
  }
  return n;
}

size_t JsonScanner::skip_to_depth(std::string_view s, int target) {
  size_t i = 0;
#ifdef FRACPACK_JSON_STREAM_SIMD
  const size_t n = s.size();
  if (n >= 64) {
    uint64_t in_string = in_string_ ? ~uint64_t{0} : 0;  // all ones while inside a string
    uint64_t carry = in_string_ && escape_ ? 1 : 0;
    int depth = depth_;
    for (; i + 64 <= n; i += 64) {
      const BlockMasks m = classify(s.data() + i);
      const uint64_t quotes = m.quote & ~escaped_bytes(m.backslash, carry);
      const uint64_t inside = prefix_xor(quotes) ^ in_string;
      in_string = static_cast<uint64_t>(static_cast<int64_t>(inside) >> 63);
      const uint64_t open = m.open & ~inside;
      const uint64_t close = m.close & ~inside;
      const int closes = std::popcount(close);
      if (depth - closes > target) {  // cannot reach the target in this block
        depth += std::popcount(open) - closes;
        continue;
      }
      for (uint64_t b = open | close; b != 0; b &= b - 1) {
        const uint64_t bit = b & (~b + 1);
        if ((open & bit) != 0) {
          ++depth;
        } else if (--depth == target) {
          // A structural bracket is outside any string.
          depth_ = depth;
          in_string_ = false;
          escape_ = false;
          return i + static_cast<size_t>(std::countr_zero(bit)) + 1;
        }
      }
    }
    depth_ = depth;
    in_string_ = in_string != 0;
    escape_ = in_string_ && carry != 0;
  }
#endif
  return i + skip_to_depth_scalar(s.substr(i), target);
}

Status ObjectSplitter::feed(std::string_view data, const std::function<Status(std::string_view)>& on_object) {
  // Where the object being read began in `data` (0 if in an earlier feed:
  // its bytes so far are in partial_).
  size_t start = scanner_.depth() > 0 ? 0 : npos;
  size_t i = 0;
  while (i < data.size()) {
    if (scanner_.depth() > 0) {
      i += scanner_.skip_to_depth(data.substr(i), 0);
      if (scanner_.depth() > 0) break;  // continues in the next feed
      if (!partial_.empty()) {
        partial_.append(data.data() + start, i - start);
        const std::string object = std::move(partial_);
        partial_.clear();
        if (Status s = on_object(object); !s.ok()) return s;
      } else {
        if (Status s = on_object(data.substr(start, i - start)); !s.ok()) return s;
      }
      start = npos;
      continue;
    }
    const char c = data[i];
    if (json_space(c)) {
      ++i;
      continue;
    }
    if (c != '{') return Error{std::string("watch stream: expected '{' between events, got '") + c + "'"};
    start = i;
    scanner_.step(c);
    ++i;
  }
  if (scanner_.depth() > 0) {
    // An object continues in the next feed: keep its bytes.
    partial_.append(data.data() + start, data.size() - start);
    if (partial_.size() > kMaxObject) return Error{"watch stream: an event exceeds 64 MiB"};
  }
  return Status::Ok();
}

Status ListSplitter::feed(std::string_view data, const std::function<Status(std::string_view)>& on_item) {
  // Where the item or metadata value being kept began in `data` (0 if in an
  // earlier feed: its bytes so far are in buffer_); npos when none is kept.
  size_t mark = item_open_ || (value_kind_ == 1 && value_started_) ? 0 : npos;
  auto kept = [&](size_t end) -> std::string_view {
    if (buffer_.empty()) return data.substr(mark, end - mark);
    buffer_.append(data.data() + mark, end - mark);
    return buffer_;
  };
  size_t i = 0;
  while (i < data.size()) {
    if (item_open_ || (value_started_ && (value_kind_ == 1 || value_kind_ == 3) && scanner_.depth() > 1)) {
      // Inside an item (depth 3 and more) or a nested top-level value: jump
      // to its closing bracket.
      const int target = item_open_ ? 2 : 1;
      i += scanner_.skip_to_depth(data.substr(i), target);
      if (scanner_.depth() > target) break;  // continues in the next feed
      if (item_open_) {
        item_open_ = false;
        if (Status st = on_item(kept(i)); !st.ok()) return st;
      } else if (value_kind_ == 1) {
        metadata_ = std::string(kept(i));
        value_kind_ = 3;  // captured
      }
      buffer_.clear();
      mark = npos;
      continue;
    }
    const char c = data[i];
    if (done_) {
      if (!json_space(c)) return Error{"list: trailing content after the body"};
      ++i;
      continue;
    }
    if (!started_) {
      if (json_space(c)) {
        ++i;
        continue;
      }
      if (c != '{') return Error{"list: the body is not a JSON object"};
      started_ = true;
      expect_key_ = true;
      scanner_.step(c);
      ++i;
      continue;
    }
    const int before = scanner_.depth();
    const bool was_string = scanner_.in_string();
    if (!scanner_.step(c)) return Error{"list: unbalanced brackets"};
    ++i;
    const int after = scanner_.depth();
    if (reading_key_) {
      if (!scanner_.in_string()) {
        reading_key_ = false;  // the closing quote
      } else {
        key_.push_back(c);
        if (key_.size() > 256) return Error{"list: a top-level key is too long"};
      }
      continue;
    }
    if (before == 1 && !was_string) {
      // Between top-level members, or the first byte of a value.
      if (c == '"' && expect_key_) {
        reading_key_ = true;
        key_.clear();
        continue;
      }
      if (c == ':') {
        expect_key_ = false;
        value_kind_ = key_ == "metadata" ? 1 : (key_ == "items" ? 2 : 3);
        value_started_ = false;
        continue;
      }
      if (c == ',') {
        expect_key_ = true;
        value_kind_ = 0;
        continue;
      }
      if (c == '}' && after == 0) {
        done_ = true;
        continue;
      }
      if (json_space(c) || value_started_) continue;
      value_started_ = true;
      if (value_kind_ == 1) {
        if (c == '{') {
          mark = i - 1;
          buffer_.clear();
        } else {
          value_kind_ = 3;  // "metadata": null, nothing to keep
        }
      } else if (value_kind_ == 2 && c != '[') {
        value_kind_ = 3;  // "items": null
      }
      continue;
    }
    if (value_kind_ == 2 && before == 2 && !was_string) {
      // Between the elements of "items".
      if (json_space(c) || c == ',') continue;
      if (c == ']' && after == 1) {
        value_kind_ = 3;
        continue;
      }
      if (c != '{') return Error{"list: an item is not an object"};
      item_open_ = true;
      mark = i - 1;
      buffer_.clear();
    }
  }
  // Keep the bytes of an item or value that continues in the next feed.
  if (mark != npos && (item_open_ || (value_kind_ == 1 && value_started_))) {
    buffer_.append(data.data() + mark, data.size() - mark);
    const size_t limit = item_open_ ? kMaxItem : kMaxMetadata;
    if (buffer_.size() > limit) return Error{item_open_ ? "list: an item exceeds 64 MiB" : "list: metadata exceeds 1 MiB"};
  }
  return Status::Ok();
}

Status ListSplitter::finish() const {
  if (!started_) return Error{"list: empty body"};
  if (!done_) return Error{"list: the body ended early"};
  return Status::Ok();
}

size_t string_end(std::string_view t, size_t i, bool& escaped) {
  escaped = false;
  for (++i; i < t.size() && t[i] != '"'; ++i) {
    if (t[i] == '\\') {
      escaped = true;
      ++i;
    }
  }
  return i < t.size() ? i + 1 : std::string_view::npos;
}

size_t value_end(std::string_view t, size_t i) {
  if (i >= t.size()) return std::string_view::npos;
  const char c = t[i];
  if (c == '{' || c == '[') {
    JsonScanner scanner;
    scanner.step(c);
    const size_t end = i + 1 + scanner.skip_to_depth(t.substr(i + 1), 0);
    return scanner.depth() == 0 ? end : std::string_view::npos;
  }
  bool escaped = false;
  if (c == '"') return string_end(t, i, escaped);
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !json_space(t[i])) ++i;
  return i;
}

bool unescape_json_string(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= in.size()) return false;
    switch (in[i]) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        auto hex4 = [&](size_t at, uint32_t& v) {
          if (at + 4 > in.size()) return false;
          v = 0;
          for (size_t k = at; k < at + 4; ++k) {
            const char h = in[k];
            v <<= 4;
            if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
            else return false;
          }
          return true;
        };
        uint32_t cp = 0;
        if (!hex4(i + 1, cp)) return false;
        i += 4;
        // UTF-16 as JSON spells it, as check_json_text reads it: a
        // surrogate only in a high-low pair (a lone half is no character,
        // and its bytes would not be UTF-8).
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo = 0;
          if (i + 2 >= in.size() || in[i + 1] != '\\' || in[i + 2] != 'u' || !hex4(i + 3, lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
        if (cp < 0x80) {
          out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
          out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
          out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
          out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
          out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
          out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
          out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

}  // namespace fracpack
