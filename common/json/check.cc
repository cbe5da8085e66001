#include "common/json/check.h"

#include "common/json/stream.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace fracpack {
namespace {

static_assert(std::endian::native == std::endian::little, "the eight-byte string scan reads the lowest address first");
constexpr std::string_view kTooDeep = "more than 1023 nested arrays and objects (simdjson's limit)";
constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;

// High bit set in each byte of `x` that ends a plain run inside a string:
// '"', '\\' or a control character. Exact for the lowest flagged byte
// (a borrow only runs upwards from a byte that is flagged itself), which
// is the only one read.
inline uint64_t string_stops(uint64_t x) {
  auto zero_byte = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t control = (x - 0x20 * kOnes) & ~x & kHigh;
  return control | zero_byte(x ^ ('"' * kOnes)) | zero_byte(x ^ ('\\' * kOnes));
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Levels of the nesting stack: an object or an array, or (when watching)
// the watched outer object, the watched array, an object element of it,
// and the object at an element's field_outer.
constexpr char kObject = '{', kArray = '[', kWatchedObject = 'O', kWatchedArray = 'A', kElement = 'E', kFieldParent = 'F';
inline bool is_object(char level) { return level != kArray && level != kWatchedArray; }

class Checker {
 public:
  Checker(std::string_view text, std::string_view where, WatchedArray* watch)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), where_(where), watch_(watch) {}

  Status run() {
    skip_space();
    while (true) {
      // A value starts here.
      if (p_ == end_) return fail("expected a value");
      const int pending = pending_;  // what the key before this value matched
      pending_ = 0;
      bool element = !stack_.empty() && stack_.back() == kWatchedArray;
      if (element && watch_->elements.size() == watch_->max_elements) {
        stop_watching();
        element = false;
      }
      if (element) watch_->elements.push_back(WatchedElement{offset()});
      if (pending == 3 && *p_ != '{' && *p_ != 'n') watch_->elements.back().parent_not_object = true;
      if (pending == 4 && *p_ != '"') {
        if (*p_ == 'n') {
          watch_->elements.back().field = WatchedElement::Field::kNull;
        } else {
          watch_->elements.back().field_not_string = true;
        }
      }
      switch (*p_) {
        case '{':
          ++p_;
          skip_space();
          if (p_ != end_ && *p_ == '}') {
            ++p_;
            break;
          }
          if (stack_.size() + 1 >= kMaxJsonDepth) return fail(kTooDeep);
          stack_.push_back(pending == 1 ? kWatchedObject : element ? kElement : pending == 3 ? kFieldParent : kObject);
          if (!key()) return error_;
          continue;
        case '[':
          if (pending == 2) {
            ++watch_->seen;
            watch_->begin = offset();
            watch_->elements.clear();
          }
          ++p_;
          skip_space();
          if (p_ != end_ && *p_ == ']') {
            ++p_;
            if (pending == 2) watch_->end = offset();
            break;
          }
          if (stack_.size() + 1 >= kMaxJsonDepth) return fail(kTooDeep);
          stack_.push_back(pending == 2 ? kWatchedArray : kArray);
          continue;
        case '"':
          if (pending == 4) {
            WatchedElement& e = watch_->elements.back();
            e.field = WatchedElement::Field::kString;
            e.field_begin = offset();
            if (!string()) return error_;
            e.field_end = offset();
            e.field_escaped = escaped_;
            break;
          }
          if (!string()) return error_;
          break;
        case 't':
          if (!literal("true")) return error_;
          break;
        case 'f':
          if (!literal("false")) return error_;
          break;
        case 'n':
          if (!literal("null")) return error_;
          break;
        default:
          if (!number()) return error_;
          break;
      }
      // After a value: a separator, the end of its container(s), or the end.
      while (true) {
        if (!stack_.empty() && stack_.back() == kWatchedArray) watch_->elements.back().end = offset();
        skip_space();
        if (stack_.empty()) {
          if (p_ != end_) return fail("trailing content after the value");
          return Status::Ok();
        }
        const bool in_object = is_object(stack_.back());
        if (p_ == end_) return fail(in_object ? "expected ',' or '}'" : "expected ',' or ']'");
        const char c = *p_;
        if (c == ',') {
          ++p_;
          skip_space();
          if (in_object && !key()) return error_;
          break;  // the next value
        }
        if ((c == '}' && in_object) || (c == ']' && !in_object)) {
          ++p_;
          if (stack_.back() == kWatchedArray) watch_->end = offset();
          stack_.pop_back();
          continue;
        }
        return fail(in_object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
  }

 private:
  void skip_space() {
    while (p_ != end_ && json_space(*p_)) ++p_;
  }

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }

  // Past max_elements: the rest is only checked (what was recorded stays,
  // flagged too_many), so a hostile body's records stay bounded.
  void stop_watching() {
    watch_->too_many = true;
    for (char& level : stack_) level = is_object(level) ? kObject : kArray;
    watch_ = nullptr;
    pending_ = 0;
  }

  // A member's key and its colon, leaving p_ at the value (spaces skipped).
  // Notes whether the key leads to the watched array (spelled exactly).
  bool key() {
    if (p_ == end_ || *p_ != '"') return fail_bool("expected a string key");
    const char* open = p_;
    if (!string()) return false;
    if (watch_ != nullptr) {
      const std::string_view k(open + 1, static_cast<size_t>(p_ - open - 2));
      if (stack_.size() == 1 && k == watch_->outer) pending_ = 1;
      if (stack_.size() == 2 && stack_.back() == kWatchedObject && k == watch_->inner) pending_ = 2;
      if (stack_.back() == kElement && k == watch_->field_outer) pending_ = 3;
      if (stack_.back() == kFieldParent && k == watch_->field_inner) pending_ = 4;
      if (escaped_) {
        // A key spelled with escapes may be one of these: the caller reads
        // such a part the slow way.
        if (stack_.size() == 1 || stack_.back() == kWatchedObject) watch_->ambiguous = true;
        if (stack_.back() == kElement || stack_.back() == kFieldParent) watch_->elements.back().ambiguous = true;
      }
    }
    skip_space();
    if (p_ == end_ || *p_ != ':') return fail_bool("expected ':'");
    ++p_;
    skip_space();
    return true;
  }

  // p_ at the opening quote; leaves it past the closing one.
  bool string() {
    ++p_;
    escaped_ = false;
    while (true) {
#if defined(__AVX2__)
      // 32 bytes at a time (fracpack's x86-64 builds target x86-64-v3).
      const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\'), control = _mm256_set1_epi8(0x1f);
      while (end_ - p_ >= 32) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p_));
        const __m256i stops = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x, quote), _mm256_cmpeq_epi8(x, backslash)),
                                              _mm256_cmpeq_epi8(_mm256_min_epu8(x, control), x));  // x <= 0x1f
        const uint32_t mask = static_cast<uint32_t>(_mm256_movemask_epi8(stops));
        if (mask == 0) {
          p_ += 32;
          continue;
        }
        p_ += __builtin_ctz(mask);
        goto stop;
      }
#endif
      while (end_ - p_ >= 8) {
        uint64_t x;
        std::memcpy(&x, p_, 8);
        const uint64_t stops = string_stops(x);
        if (stops == 0) {
          p_ += 8;
          continue;
        }
        p_ += __builtin_ctzll(stops) / 8;
        break;
      }
      while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
#if defined(__AVX2__)
    stop:
#endif
      if (p_ == end_) return fail_bool("unclosed string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return fail_bool("a control character in a string (it must be escaped)");
      escaped_ = true;
      ++p_;
      if (p_ == end_) return fail_bool("unclosed string");
      switch (*p_) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          ++p_;
          break;
        case 'u': {
          // UTF-16 as JSON spells it: a surrogate only in a high-low pair
          // (simdjson refuses a lone one too).
          const int unit = code_unit();
          if (unit < 0) return fail_bool("\\u needs four hexadecimal digits");
          if (unit >= 0xDC00 && unit <= 0xDFFF) return fail_bool("a lone low surrogate in a string");
          if (unit >= 0xD800 && unit <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return fail_bool("a high surrogate without its low half");
            ++p_;
            const int low = code_unit();
            if (low < 0) return fail_bool("\\u needs four hexadecimal digits");
            if (low < 0xDC00 || low > 0xDFFF) return fail_bool("a high surrogate without its low half");
          }
          break;
        }
        default:
          return fail_bool("an invalid escape in a string");
      }
    }
  }

  // p_ at the 'u' of \uXXXX: the code unit, p_ past it; -1 if not four hex digits.
  int code_unit() {
    ++p_;
    int unit = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ == end_ || !is_hex(*p_)) return -1;
      const char c = *p_;
      unit = unit * 16 + (is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return unit;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
      return fail_bool("expected a value");
    }
    p_ += word.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_ || !is_digit(*p_)) {
      p_ = start;
      return fail_bool("expected a value");
    }
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || !is_digit(*p_)) return fail_bool("a digit must follow a number's '.'");
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !is_digit(*p_)) return fail_bool("a digit must follow a number's exponent");
      while (p_ != end_ && is_digit(*p_)) ++p_;
    }
    return true;
  }

  Status fail(std::string_view what) {
    std::string m = "invalid JSON";
    if (!where_.empty()) m.append(" in ").append(where_);
    m.append(" at byte ").append(std::to_string(p_ - begin_)).append(": ").append(what);
    return Error{std::move(m)};
  }
  bool fail_bool(const char* what) {
    error_ = fail(what);
    return false;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string_view where_;
  WatchedArray* watch_;
  std::vector<char> stack_;
  // What the next value is: 1 root[outer], 2 root[outer][inner], 3 an
  // element's [field_outer], 4 its [field_outer][field_inner].
  int pending_ = 0;
  bool escaped_ = false;  // the last string had an escape
  Status error_ = Status::Ok();
};

}  // namespace

Status check_json_text(std::string_view text, std::string_view where, WatchedArray* watch) {
  return Checker(text, where, watch).run();
}

}  // namespace fracpack
