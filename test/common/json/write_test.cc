#include "common/json/write.h"

#include <gtest/gtest.h>

#include <vector>

namespace fracpack::write_test {
namespace {

TEST(JsonWrite, EscapesWhatJsonRequires) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\n\t") + std::string(1, '\x01') + "é");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\t\\u0001é\"");
}

TEST(JsonWrite, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // Well-formed sequences of 2, 3 and 4 bytes pass; a stray continuation
  // byte, a truncated sequence, an overlong form, a surrogate and a code
  // point past U+10FFFF each become U+FFFD (per byte), so any input gives
  // valid JSON.
  const std::string ok = "é€😀";
  std::string out;
  append_json_string(out, ok);
  EXPECT_EQ(out, "\"" + ok + "\"");
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"a\x80" "z", "a\\ufffdz"},
           {"\xe2\x82", "\\ufffd\\ufffd"},
           {"\xc0\xaf", "\\ufffd\\ufffd"},
           {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},
           {"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},
           {"\xff\xfe/x", "\\ufffd\\ufffd/x"}}) {
    std::string o;
    append_json_string(o, in);
    EXPECT_EQ(o, "\"" + want + "\"") << in.size();
  }
}

// Plain runs are scanned eight bytes at a time: every character that needs
// escaping is found wherever it falls in a word, in long strings too.
TEST(JsonWrite, EscapesAreFoundAtEveryOffsetOfALongString) {
  const std::vector<std::pair<std::string, std::string>> specials = {
      {"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {std::string(1, '\x01'), "\\u0001"},
      {"\x1f", "\\u001f"}, {"\xc3\xa9", "\xc3\xa9"}, {"\xff", "\\ufffd"}};
  for (const auto& [raw, escaped] : specials) {
    for (size_t at = 0; at < 24; ++at) {
      std::string s(30, 'a');
      s.replace(at, 1, raw);
      std::string out;
      append_json_string(out, s);
      EXPECT_EQ(out, "\"" + std::string(at, 'a') + escaped + std::string(29 - at, 'a') + "\"") << escaped << " at " << at;
    }
  }
}

TEST(JsonWrite, FieldsAndNumbers) {
  std::string out = "{";
  append_json_field(out, "k", "v", false);
  append_json_number(out, "n", 3);
  append_json_number(out, "x", 0.5);
  out += "}";
  EXPECT_EQ(out, R"({"k":"v","n":3,"x":0.5})");
}

}  // namespace
}  // namespace fracpack::write_test
