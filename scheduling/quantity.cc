#include "scheduling/quantity.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <vector>

namespace fracpack {
namespace {

using u128 = uint128_t;

// A minimal arbitrary-precision unsigned integer: just enough to evaluate
// digits * 10^e10 * 2^e2 exactly before rounding to nanos.
class BigUint {
 public:
  bool is_zero() const { return limbs_.empty(); }

  void mul_add(uint32_t mul, uint32_t add) {
    uint64_t carry = add;
    for (auto& limb : limbs_) {
      const uint64_t v = uint64_t{limb} * mul + carry;
      limb = static_cast<uint32_t>(v);
      carry = v >> 32;
    }
    if (carry != 0) limbs_.push_back(static_cast<uint32_t>(carry));
  }

  // Divides by d, returns whether the remainder was non-zero.
  bool div_small(uint32_t d) {
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      const uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / d);
      rem = cur % d;
    }
    trim();
    return rem != 0;
  }

  void shift_left(unsigned bits) {
    if (is_zero() || bits == 0) return;
    const unsigned words = bits / 32, rest = bits % 32;
    limbs_.insert(limbs_.begin(), words, 0u);
    if (rest != 0) {
      uint32_t carry = 0;
      for (size_t i = words; i < limbs_.size(); ++i) {
        const uint32_t v = limbs_[i];
        limbs_[i] = (v << rest) | carry;
        carry = v >> (32 - rest);
      }
      if (carry != 0) limbs_.push_back(carry);
    }
  }

  size_t bit_length() const {
    if (limbs_.empty()) return 0;
    return (limbs_.size() - 1) * 32 + (32 - static_cast<size_t>(__builtin_clz(limbs_.back())));
  }

  u128 to_u128() const {
    u128 v = 0;
    for (size_t i = limbs_.size(); i-- > 0;) v = (v << 32) | limbs_[i];
    return v;
  }

 private:
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;  // little-endian base 2^32
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
constexpr std::string_view kGrammarHint =
    "must be a number with an optional suffix (Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or e<exponent>), "
    "for example 8Gi, 500m, 2";

Error bad(std::string_view text, std::string_view why) {
  std::string m = "\"";
  m.append(text).append("\" is not a valid quantity: ").append(why);
  return Error{std::move(m)};
}

// Decimal (base 10) or binary (base 2) exponent of a suffix, as apimachinery's
// suffixer interprets it.
struct SuffixValue {
  int32_t exp10 = 0;
  int32_t exp2 = 0;
};

bool interpret_suffix(std::string_view s, SuffixValue& out) {
  static constexpr std::pair<std::string_view, int32_t> kDecimal[] = {
      {"", 0}, {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3}, {"M", 6}, {"G", 9}, {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int32_t> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, e] : kDecimal) {
    if (s == name) {
      out.exp10 = e;
      return true;
    }
  }
  for (const auto& [name, e] : kBinary) {
    if (s == name) {
      out.exp2 = e;
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view rest = s.substr(1);
    if (!rest.empty() && rest[0] == '+') rest.remove_prefix(1);  // strconv.ParseInt accepts '+'
    int32_t e = 0;
    const auto* end = rest.data() + rest.size();
    auto [ptr, ec] = std::from_chars(rest.data(), end, e);
    if (ec != std::errc() || ptr != end || rest.empty()) return false;
    out.exp10 = e;
    return true;
  }
  return false;
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) return bad(text, "empty string");
  if (text.size() > kMaxLength) return Error{"quantity is longer than 256 characters"};

  // Grammar, following apimachinery's parseQuantityString.
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    ++pos;
  }
  const size_t int_begin = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  std::string_view int_digits = text.substr(int_begin, pos - int_begin);
  std::string_view frac_digits;
  if (pos < text.size() && text[pos] == '.') {
    const size_t frac_begin = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    frac_digits = text.substr(frac_begin, pos - frac_begin);
  }
  const size_t suffix_begin = pos;
  while (pos < text.size() && kSuffixChars.find(text[pos]) != std::string_view::npos) ++pos;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) ++pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  if (pos != text.size()) return bad(text, kGrammarHint);
  const std::string_view suffix = text.substr(suffix_begin);

  SuffixValue sv;
  if (!interpret_suffix(suffix, sv)) {
    std::string why = "unknown suffix \"";
    why.append(suffix).append("\" (suffixes are case-sensitive: Ki Mi Gi Ti Pi Ei, n u m k M G T P E, e<n>)");
    return bad(text, why);
  }

  Quantity q;
  q.negative_ = negative;
  // Fast path for what pods carry ("4", "500m", "16Gi"): an integer of at
  // most 12 digits with a suffix between n and G or up to Ti is below
  // 10^12 * 10^18 or 10^12 * 10^9 * 2^40, well within 127 bits, and exact.
  if (frac_digits.empty() && int_digits.size() <= 12 && sv.exp10 >= -9 && sv.exp10 <= 9 && sv.exp2 >= 0 && sv.exp2 <= 40) {
    u128 v = 0;
    for (char c : int_digits) v = v * 10 + static_cast<unsigned>(c - '0');
    for (int i = 0; i < sv.exp10 + 9; ++i) v *= 10;
    q.nanos_ = v << sv.exp2;
    return q;
  }

  // Exact value: digits * 10^(exp10 - len(frac)) * 2^exp2, then rounded up to nanos.
  BigUint mag;
  for (char c : int_digits) mag.mul_add(10, static_cast<uint32_t>(c - '0'));
  for (char c : frac_digits) mag.mul_add(10, static_cast<uint32_t>(c - '0'));
  if (mag.is_zero()) return q;

  mag.shift_left(static_cast<unsigned>(sv.exp2));
  const int64_t shift10 = int64_t{sv.exp10} - static_cast<int64_t>(frac_digits.size()) + 9;
  constexpr size_t kMaxBits = 127;  // nanos must fit an unsigned 128-bit integer with room for signs
  if (shift10 >= 0) {
    for (int64_t i = 0; i < shift10; ++i) {
      mag.mul_add(10, 0);
      if (mag.bit_length() > kMaxBits) return bad(text, "value is out of range");
    }
  } else {
    bool inexact = false;
    // Beyond ~80 decimal places every representable magnitude is already below one nano.
    const int64_t steps = std::min<int64_t>(-shift10, 90);
    for (int64_t i = 0; i < steps && !mag.is_zero(); ++i) inexact |= mag.div_small(10);
    if (-shift10 > steps && !mag.is_zero()) {
      mag = BigUint{};
      inexact = true;
    }
    if (inexact) mag.mul_add(1, 1);  // round up (away from zero) to the next nano
  }
  if (mag.bit_length() > kMaxBits) return bad(text, "value is out of range");
  q.nanos_ = mag.to_u128();
  return q;
}

Result<int64_t> Quantity::scaled_up(u128 divisor) const {
  const u128 v = (nanos_ + divisor - 1) / divisor;
  if (v > static_cast<u128>(std::numeric_limits<int64_t>::max())) return Error{"value is out of range"};
  const auto s = static_cast<int64_t>(v);
  return negative_ ? -s : s;
}

Result<int64_t> Quantity::value() const { return scaled_up(1'000'000'000); }
Result<int64_t> Quantity::milli_value() const { return scaled_up(1'000'000); }

bool Quantity::is_integer() const {
  const u128 milli = (nanos_ + 999'999) / 1'000'000;
  return milli % 1000 == 0;
}

namespace {

Result<Quantity> parse_non_negative(std::string_view text) {
  auto q = Quantity::parse(text);
  if (!q) return q.error();
  if (q->negative()) return bad(text, "must be greater than or equal to 0");
  return q;
}

}  // namespace

Result<int64_t> parse_extended_resource(std::string_view text) {
  auto q = parse_non_negative(text);
  if (!q) return q.error();
  if (!q->is_integer()) return bad(text, "must be an integer");
  auto v = q->value();
  if (!v) return bad(text, v.message());
  return v;
}

Result<int64_t> parse_cpu_milli(std::string_view text) {
  auto q = parse_non_negative(text);
  if (!q) return q.error();
  auto v = q->milli_value();
  if (!v) return bad(text, v.message());
  return v;
}

Result<int64_t> parse_memory_bytes(std::string_view text) {
  auto q = parse_non_negative(text);
  if (!q) return q.error();
  auto v = q->value();
  if (!v) return bad(text, v.message());
  return v;
}

}  // namespace fracpack
