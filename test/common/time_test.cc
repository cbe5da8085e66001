#include "common/time.h"

#include <gtest/gtest.h>

namespace fracpack::time_test {
namespace {

TEST(Time, ParsesRfc3339WithFractionsAndOffsets) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T10:00:00Z"), 1714557600.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00+02:00"), 1714557600.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T10:00:00.5Z"), 1714557600.5);
  EXPECT_FALSE(parse_rfc3339("2024-05-01 10:00:00"));
  EXPECT_FALSE(parse_rfc3339("2024-13-01T10:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2024-05-01T10:00:00"));
}

TEST(Time, FormatsUtcWholeSeconds) {
  EXPECT_EQ(format_rfc3339(1714557600), "2024-05-01T10:00:00Z");
  EXPECT_EQ(format_rfc3339(951782400), "2000-02-29T00:00:00Z");
  EXPECT_EQ(format_rfc3339(std::chrono::system_clock::time_point(std::chrono::milliseconds(1714557600999))), "2024-05-01T10:00:00Z");
}

}  // namespace
}  // namespace fracpack::time_test
