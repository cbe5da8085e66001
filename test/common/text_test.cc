// common/text.h: the text helpers every layer reads values with.
#include "common/text.h"

#include <gtest/gtest.h>

namespace fracpack::testing::common_text_test {
namespace {

TEST(Join, PutsTheSeparatorBetweenEveryTwoItemsEmptyOnesToo) {
  EXPECT_EQ(join({}, ","), "");
  EXPECT_EQ(join({"a"}, ","), "a");
  EXPECT_EQ(join({"GPU-0", "GPU-1", "GPU-2"}, ","), "GPU-0,GPU-1,GPU-2");
  EXPECT_EQ(join({"", "b"}, ","), ",b");
  EXPECT_EQ(join({"a", ""}, ", "), "a, ");
}

TEST(SplitObjectKey, SplitsAtTheFirstSlashAndSaysWhenAPartIsMissing) {
  ObjectKey k = split_object_key("team-a/train-0");
  EXPECT_TRUE(k.valid);
  EXPECT_EQ(k.namespace_name, "team-a");
  EXPECT_EQ(k.name, "train-0");
  k = split_object_key("ns/name/with/slashes");  // split at the first; no Kubernetes name has a '/'
  EXPECT_FALSE(k.valid);
  EXPECT_EQ(k.namespace_name, "ns");
  EXPECT_EQ(k.name, "name/with/slashes");
  k = split_object_key("no-slash");
  EXPECT_FALSE(k.valid);
  EXPECT_EQ(k.namespace_name, "");
  EXPECT_EQ(k.name, "no-slash");
  EXPECT_FALSE(split_object_key("/name").valid);
  EXPECT_FALSE(split_object_key("ns/").valid);
  EXPECT_FALSE(split_object_key("").valid);
}

TEST(Text, SplitListTrimsAndDropsEmptyParts) {
  EXPECT_EQ(split_list("0, 2 ,,3", ','), (std::vector<std::string>{"0", "2", "3"}));
  EXPECT_EQ(split_list("A|B", '|'), (std::vector<std::string>{"A", "B"}));
  EXPECT_TRUE(split_list("", ',').empty());
  EXPECT_TRUE(split_list(" , ,", ',').empty());
  EXPECT_EQ(split_list("\tone\n", ','), (std::vector<std::string>{"one"}));
  EXPECT_EQ(trim(" \t\r\n x y \n"), "x y");
  EXPECT_EQ(trim("   "), "");
}

TEST(Text, SplitFieldsKeepsEveryPart) {
  EXPECT_EQ(split_fields("uuid,10,32768,,", ','), (std::vector<std::string_view>{"uuid", "10", "32768", "", ""}));
  EXPECT_EQ(split_fields("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split_fields(" a ", ','), (std::vector<std::string_view>{" a "})) << "untrimmed";
}

TEST(Text, ParseDecimalTakesAWholeIntegerOnly) {
  int64_t v = 0;
  EXPECT_TRUE(parse_decimal("42", v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(parse_decimal("-7", v));
  EXPECT_EQ(v, -7);
  for (const char* bad : {"", " 1", "1 ", "+1", "1.5", "0x10", "12a"}) EXPECT_FALSE(parse_decimal(bad, v)) << bad;
  int8_t small = 0;
  EXPECT_FALSE(parse_decimal("300", small)) << "out of range";
}

}  // namespace
}  // namespace fracpack::testing::common_text_test
