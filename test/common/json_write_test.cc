#include "common/json_write.h"

#include <gtest/gtest.h>

#include "common/error_body.h"

namespace fracpack {
namespace {

TEST(JsonWrite, EscapesWhatJsonRequires) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\n\t") + std::string(1, '\x01') + "é");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\t\\u0001é\"");
}

TEST(JsonWrite, FieldsAndNumbers) {
  std::string out = "{";
  append_json_field(out, "k", "v", false);
  append_json_number(out, "n", 3);
  append_json_number(out, "x", 0.5);
  out += "}";
  EXPECT_EQ(out, R"({"k":"v","n":3,"x":0.5})");
}

TEST(ErrorBody, IsTheExtenderErrorShape) { EXPECT_EQ(error_body("no \"pod\""), R"({"Error":"no \"pod\""})"); }

}  // namespace
}  // namespace fracpack
