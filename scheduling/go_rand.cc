#include "scheduling/go_rand.h"

#include <charconv>
#include <cstring>

namespace fracpack {
namespace {

constexpr int32_t kInt32Max = 2147483647;

// seed rng x[n+1] = 48271 * x[n] mod (2**31 - 1), Schrage's method as in Go.
int32_t seedrand(int32_t x) {
  constexpr int32_t A = 48271, Q = 44488, R = 3399;
  const int32_t hi = x / Q;
  const int32_t lo = x % Q;
  x = A * lo - R * hi;
  if (x < 0) x += kInt32Max;
  return x;
}

}  // namespace

Result<std::vector<int64_t>> parse_go_rng_cooked(const std::string& text) {
  const std::string marker = "rngCooked [rngLen]int64 = [...]int64{";
  const size_t start = text.find(marker);
  if (start == std::string::npos) return Error{"no rngCooked table in the Go source text"};
  std::vector<int64_t> out;
  const char* p = text.data() + start + marker.size();
  const char* end = text.data() + text.size();
  while (p < end && *p != '}') {
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
      int64_t v = 0;
      auto [next, ec] = std::from_chars(p, end, v);
      if (ec != std::errc()) return Error{"malformed number in the rngCooked table"};
      out.push_back(v);
      p = next;
    } else if (*p == '/' && p + 1 < end && p[1] == '/') {
      while (p < end && *p != '\n') ++p;
    } else {
      ++p;
    }
  }
  if (out.size() != GoRand::kLen) {
    return Error{"the rngCooked table has " + std::to_string(out.size()) + " values, expected 607"};
  }
  return out;
}

GoRand::GoRand(int64_t seed, const std::vector<int64_t>& cooked) {
  seed = seed % kInt32Max;
  if (seed < 0) seed += kInt32Max;
  if (seed == 0) seed = 89482311;
  auto x = static_cast<int32_t>(seed);
  for (int i = -20; i < kLen; ++i) {
    x = seedrand(x);
    if (i >= 0) {
      int64_t u = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(x)) << 40);
      x = seedrand(x);
      u ^= static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(x)) << 20);
      x = seedrand(x);
      u ^= static_cast<int64_t>(x);
      u ^= cooked[static_cast<size_t>(i)];
      vec_[static_cast<size_t>(i)] = u;
    }
  }
}

GoRand::GoRand(int64_t seed) : exact_(false), splitmix_(static_cast<uint64_t>(seed) ^ 0x6A09E667F3BCC909ull) {}

uint64_t GoRand::next() {
  if (!exact_) {
    uint64_t z = (splitmix_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  if (--tap_ < 0) tap_ += kLen;
  if (--feed_ < 0) feed_ += kLen;
  // Two's-complement wrap-around, as Go's int64 addition.
  const uint64_t x = static_cast<uint64_t>(vec_[static_cast<size_t>(feed_)]) +
                     static_cast<uint64_t>(vec_[static_cast<size_t>(tap_)]);
  vec_[static_cast<size_t>(feed_)] = static_cast<int64_t>(x);
  return x;
}

int64_t GoRand::Int63() { return static_cast<int64_t>(next() & 0x7FFFFFFFFFFFFFFFull); }

int32_t GoRand::Int31n(int32_t n) {
  if ((n & (n - 1)) == 0) return Int31() & (n - 1);
  const auto max = static_cast<int32_t>(static_cast<uint32_t>(kInt32Max) - (2147483648u % static_cast<uint32_t>(n)));
  int32_t v = Int31();
  while (v > max) v = Int31();
  return v % n;
}

int64_t GoRand::Int63n(int64_t n) {
  if ((n & (n - 1)) == 0) return Int63() & (n - 1);
  const auto max = static_cast<int64_t>((1ull << 63) - 1 - ((1ull << 63) % static_cast<uint64_t>(n)));
  int64_t v = Int63();
  while (v > max) v = Int63();
  return v % n;
}

int GoRand::Intn(int n) { return static_cast<int>(Int31n(static_cast<int32_t>(n))); }

double GoRand::Float64() {
  for (;;) {
    const double f = static_cast<double>(Int63()) / 9223372036854775808.0;
    if (f != 1.0) return f;
  }
}

std::vector<int> GoRand::Perm(int n) {
  std::vector<int> m(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int j = Intn(i + 1);
    m[static_cast<size_t>(i)] = m[static_cast<size_t>(j)];
    m[static_cast<size_t>(j)] = i;
  }
  return m;
}

int32_t GoRand::int31n_lemire(int32_t n) {
  uint32_t v = Uint32();
  uint64_t prod = uint64_t{v} * static_cast<uint64_t>(n);
  auto low = static_cast<uint32_t>(prod);
  if (low < static_cast<uint32_t>(n)) {
    const uint32_t thresh = static_cast<uint32_t>(-n) % static_cast<uint32_t>(n);
    while (low < thresh) {
      v = Uint32();
      prod = uint64_t{v} * static_cast<uint64_t>(n);
      low = static_cast<uint32_t>(prod);
    }
  }
  return static_cast<int32_t>(prod >> 32);
}

}  // namespace fracpack
