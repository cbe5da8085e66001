#include "scheduling/go_rand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "test/support/testlib.h"

namespace fracpack::go_rand_test {
namespace {

std::shared_ptr<std::vector<int64_t>> cooked_table() {
  auto text = testing::read_file(kDefaultGoRngSource);
  if (!text) return nullptr;
  auto t = parse_go_rng_cooked(*text);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.message());
  return t.ok() ? std::make_shared<std::vector<int64_t>>(*t) : nullptr;
}

// Go's well-known first outputs for rand.Seed(1): rand.Int63() and the
// "81 87 47 59 81 18 25 40 56 0" of rand.Intn(100).
TEST(GoRand, MatchesGoForSeedOne) {
  auto table = cooked_table();
  if (!table) GTEST_SKIP() << "golang-1.19-src is not installed (" << kDefaultGoRngSource << ")";
  GoRand a(1, *table);
  EXPECT_TRUE(a.exact());
  EXPECT_EQ(a.Int63(), 5577006791947779410);
  EXPECT_EQ(a.Int63(), 8674665223082153551);
  GoRand b(1, *table);
  std::vector<int> got;
  for (int i = 0; i < 10; ++i) got.push_back(b.Intn(100));
  EXPECT_EQ(got, (std::vector<int>{81, 87, 47, 59, 81, 18, 25, 40, 56, 0}));
}

TEST(GoRand, ParsesTableStrictly) {
  EXPECT_FALSE(parse_go_rng_cooked("package rand").ok());
  EXPECT_FALSE(parse_go_rng_cooked("rngCooked [rngLen]int64 = [...]int64{1, 2, 3}").ok());
}

TEST(GoRand, PermAndShuffleArePermutations) {
  for (bool exact : {false, true}) {
    auto table = cooked_table();
    if (exact && !table) continue;
    GoRand r = exact ? GoRand(42, *table) : GoRand(42);
    std::vector<int> p = r.Perm(1213);
    std::vector<int> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> iota(1213);
    std::iota(iota.begin(), iota.end(), 0);
    EXPECT_EQ(sorted, iota);
    std::vector<int> v = iota;
    r.Shuffle(static_cast<int>(v.size()), [&](int i, int j) { std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(j)]); });
    std::sort(v.begin(), v.end());
    EXPECT_EQ(v, iota);
  }
}

TEST(GoRand, BoundedDrawsStayInRange) {
  GoRand r(7);
  for (int n : {1, 2, 3, 7, 100, 1 << 20, 1000003}) {
    for (int i = 0; i < 1000; ++i) {
      const int v = r.Intn(n);
      ASSERT_GE(v, 0);
      ASSERT_LT(v, n);
    }
  }
  for (int i = 0; i < 1000; ++i) {
    const double f = r.Float64();
    ASSERT_GE(f, 0.0);
    ASSERT_LT(f, 1.0);
  }
}

}  // namespace
}  // namespace fracpack::go_rand_test
