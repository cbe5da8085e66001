#include "scheduling/quantity.h"

#include <gtest/gtest.h>

#include <random>

namespace fracpack::quantity_test {
namespace {

int64_t value(std::string_view s) {
  auto q = Quantity::parse(s);
  EXPECT_TRUE(q.ok()) << s << ": " << (q.ok() ? "" : q.message());
  if (!q.ok()) return -999;
  auto v = q->value();
  EXPECT_TRUE(v.ok()) << s;
  return v.ok() ? *v : -999;
}

int64_t milli(std::string_view s) {
  auto q = Quantity::parse(s);
  EXPECT_TRUE(q.ok()) << s << ": " << (q.ok() ? "" : q.message());
  if (!q.ok()) return -999;
  auto v = q->milli_value();
  EXPECT_TRUE(v.ok()) << s;
  return v.ok() ? *v : -999;
}

// ../shared/reference/kubernetes-protocol.md §8.6 test vectors: valid quantities.
TEST(Quantity, ReferenceValidVectors) {
  EXPECT_EQ(value("1"), 1);
  EXPECT_EQ(value("+2"), 2);
  EXPECT_EQ(value("2k"), 2000);
  EXPECT_EQ(value("2Ki"), 2048);
  EXPECT_EQ(value("1e3"), 1000);
  EXPECT_EQ(value("1E3"), 1000);
  EXPECT_EQ(value("3000m"), 3);
  EXPECT_EQ(value("1000000000n"), 1);
  EXPECT_EQ(milli(".5"), 500);
  EXPECT_EQ(value("5."), 5);
}

// §8.5: the canonical forms the API server sends back parse to the same values.
TEST(Quantity, CanonicalTable) {
  EXPECT_EQ(milli("500m"), 500);
  EXPECT_EQ(milli("1500m"), 1500);
  EXPECT_EQ(milli("1.5"), 1500);
  EXPECT_EQ(value("1k"), 1000);
  EXPECT_EQ(value("1Ki"), 1024);
  EXPECT_EQ(value("16Gi"), 17179869184);
  EXPECT_EQ(value("1.5Gi"), 1610612736);
  EXPECT_EQ(value("1536Mi"), 1610612736);
  EXPECT_EQ(value("1e3"), 1000);
  EXPECT_EQ(milli("100u"), 1);   // 0.0001 rounds up to 1m
  EXPECT_EQ(milli("0.1m"), 1);
}

TEST(Quantity, SuffixesAndExponents) {
  EXPECT_EQ(value("1M"), 1000000);
  EXPECT_EQ(value("1Mi"), 1048576);
  EXPECT_EQ(value("1G"), 1000000000);
  EXPECT_EQ(value("1T"), 1000000000000);
  EXPECT_EQ(value("1P"), 1000000000000000);
  EXPECT_EQ(value("1E"), 1000000000000000000);  // E alone is exa
  EXPECT_EQ(value("2Ti"), int64_t{2} << 40);
  EXPECT_EQ(value("1Pi"), int64_t{1} << 50);
  EXPECT_EQ(value("1Ei"), int64_t{1} << 60);
  EXPECT_EQ(value("1e+3"), 1000);
  EXPECT_EQ(milli("1e-3"), 1);
  EXPECT_EQ(value("12E-1"), 2);  // 1.2 rounds up
  EXPECT_EQ(value("0"), 0);
  EXPECT_EQ(value("000"), 0);
  EXPECT_EQ(value("0.000"), 0);
  EXPECT_EQ(value("007"), 7);
}

// Integers take a fast path; "d.0" with the same suffix takes the general
// one. They must agree everywhere, including the rounding to milli units and
// the range errors.
TEST(Quantity, FastPathAgreesWithTheGeneralOne) {
  std::mt19937_64 rng(17);
  const char* const suffixes[] = {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3", "e9", "E12"};
  for (int trial = 0; trial < 20000; ++trial) {
    const int digits = 1 + static_cast<int>(rng() % 14);
    std::string d;
    for (int i = 0; i < digits; ++i) d.push_back(static_cast<char>('0' + rng() % 10));
    const std::string suffix = suffixes[rng() % std::size(suffixes)];
    const auto fast = Quantity::parse(d + suffix);
    const auto general = Quantity::parse(d + ".0" + suffix);
    ASSERT_EQ(fast.ok(), general.ok()) << d << suffix;
    if (!fast.ok()) continue;
    const auto fm = fast->milli_value(), gm = general->milli_value();
    ASSERT_EQ(fm.ok(), gm.ok()) << d << suffix;
    if (fm.ok()) {
      ASSERT_EQ(*fm, *gm) << d << suffix;
    }
    const auto fv = fast->value(), gv = general->value();
    ASSERT_EQ(fv.ok(), gv.ok()) << d << suffix;
    if (fv.ok()) {
      ASSERT_EQ(*fv, *gv) << d << suffix;
    }
    ASSERT_EQ(fast->is_integer(), general->is_integer()) << d << suffix;
    ASSERT_EQ(fast->is_zero(), general->is_zero()) << d << suffix;
  }
}

TEST(Quantity, RoundsUpAwayFromZero) {
  EXPECT_EQ(value("0.1"), 1);
  EXPECT_EQ(value("1.0000000001"), 2);  // nano round-up keeps it above 1
  EXPECT_EQ(milli("0.5n"), 1);
  EXPECT_EQ(milli("1e-100"), 1);        // tiny positive values round up to one nano
  auto q = Quantity::parse("-1.5");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->negative());
  EXPECT_EQ(*q->value(), -2);
  EXPECT_EQ(*q->milli_value(), -1500);
}

TEST(Quantity, IntegerRuleForExtendedResources) {
  // §8.2: valid 3, 3000m, 3Ki; invalid 0.5, 1500m, 1001m.
  EXPECT_EQ(*parse_extended_resource("3"), 3);
  EXPECT_EQ(*parse_extended_resource("3000m"), 3);
  EXPECT_EQ(*parse_extended_resource("3Ki"), 3072);
  EXPECT_EQ(*parse_extended_resource("1k"), 1000);
  for (const char* bad : {"0.5", "1500m", "1001m"}) {
    auto r = parse_extended_resource(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find("must be an integer"), std::string::npos) << r.message();
  }
  auto neg = parse_extended_resource("-1");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.message().find("greater than or equal to 0"), std::string::npos);
}

// §8.6: rejected as quantities.
TEST(Quantity, ReferenceInvalidVectors) {
  for (const char* bad : {"", "1K", "1e", "1.5.5", "1 ", " 1", "1Mb", "abc", "1mi", "1ki", "1KB", "1Gi5", "1e1.5",
                          "0x10", "1,5", "--1", "1e3e"}) {
    auto q = Quantity::parse(bad);
    EXPECT_FALSE(q.ok()) << "\"" << bad << "\" should be rejected";
    if (!q.ok()) {
      EXPECT_NE(q.message().find("not a valid quantity"), std::string::npos) << q.message();
    }
  }
}

TEST(Quantity, ErrorMessagesQuoteTheInput) {
  auto q = Quantity::parse("8Gx");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("\"8Gx\""), std::string::npos) << q.message();
  auto s = Quantity::parse("1ki");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("case-sensitive"), std::string::npos) << s.message();
}

TEST(Quantity, RangeLimits) {
  EXPECT_EQ(value("9223372036854775807"), INT64_MAX);
  auto q = Quantity::parse("9223372036854775808");
  ASSERT_TRUE(q.ok());  // a valid quantity, but not an int64
  EXPECT_FALSE(q->value().ok());
  EXPECT_FALSE(Quantity::parse("1e400").ok());
  EXPECT_FALSE(Quantity::parse(std::string(300, '1')).ok());
  EXPECT_FALSE(parse_memory_bytes("8Ei").ok());  // 2^63: out of int64
  EXPECT_EQ(*parse_memory_bytes("7Ei"), int64_t{7} << 60);
}

TEST(Quantity, CpuAndMemory) {
  EXPECT_EQ(*parse_cpu_milli("2"), 2000);
  EXPECT_EQ(*parse_cpu_milli("250m"), 250);
  EXPECT_EQ(*parse_cpu_milli("0.1"), 100);
  EXPECT_EQ(*parse_cpu_milli("1.0001"), 1001);  // rounds up
  EXPECT_EQ(*parse_memory_bytes("16Gi"), int64_t{16} << 30);
  EXPECT_EQ(*parse_memory_bytes("1m"), 1);      // 0.001 bytes rounds up: the classic mistake stays visible
  EXPECT_FALSE(parse_cpu_milli("-1").ok());
}

}  // namespace
}  // namespace fracpack::quantity_test
