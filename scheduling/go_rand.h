// A port of Go's pre-1.20 math/rand (the seeded lagged-Fibonacci source and
// the Rand methods the FGD simulator calls), so the replay draws the same
// arrival order, tuning samples and node permutation as the paper's runs
// (../shared/reference/replay-spec.md §3.3). The seeding table (rngCooked, 607 values, BSD-licensed)
// is read from Go's source at run time rather than copied here: Debian ships
// it in golang-1.19-src. Without it, a portable source gives a statistically
// equivalent but different stream.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace fracpack {

inline constexpr const char* kDefaultGoRngSource = "/usr/share/go-1.19/src/math/rand/rng.go";

// The rngCooked table parsed from the text of Go's rng.go.
Result<std::vector<int64_t>> parse_go_rng_cooked(const std::string& rng_go_text);

class GoRand {
 public:
  static constexpr int kLen = 607;
  static constexpr int kTap = 273;

  // Go's rngSource seeded as rand.Seed(seed) does, with the given cooked table.
  GoRand(int64_t seed, const std::vector<int64_t>& cooked);
  // A portable source (SplitMix64) with the same method semantics; not Go's stream.
  explicit GoRand(int64_t seed);

  bool exact() const { return exact_; }

  int64_t Int63();
  uint32_t Uint32() { return static_cast<uint32_t>(Int63() >> 31); }
  int32_t Int31() { return static_cast<int32_t>(Int63() >> 32); }
  int32_t Int31n(int32_t n);
  int64_t Int63n(int64_t n);
  int Intn(int n);
  double Float64();
  std::vector<int> Perm(int n);
  // Calls swap(i, j) as Go's Shuffle does.
  template <class Swap>
  void Shuffle(int n, Swap swap) {
    for (int i = n - 1; i > 0; --i) swap(i, static_cast<int>(int31n_lemire(i + 1)));
  }

 private:
  int32_t int31n_lemire(int32_t n);
  uint64_t next();

  bool exact_ = true;
  int tap_ = 0;
  int feed_ = kLen - kTap;
  std::array<int64_t, kLen> vec_{};
  uint64_t splitmix_ = 0;
};

}  // namespace fracpack
