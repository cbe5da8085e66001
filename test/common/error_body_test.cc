// The body of every error reply (common/error_body.h): {"Error":"<message>"},
// valid JSON whatever the message, with at most 4 KiB of it.
#include "common/error_body.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fracpack::error_body_test {
namespace {

using json = nlohmann::json;

TEST(ErrorBody, IsTheExtenderErrorShape) { EXPECT_EQ(error_body("no \"pod\""), R"({"Error":"no \"pod\""})"); }

TEST(ErrorBody, AnEmptyMessageIsStillAnError) { EXPECT_EQ(error_body(""), R"({"Error":""})"); }

TEST(ErrorBody, IsValidJsonWhateverTheMessageQuotes) {
  // (Sized by the array, not by hand: a hand count read past the literal, as ASan found.)
  static constexpr char kText[] = "path /a\\b\n\t\"x\"\x01\x1f end \xc3\xa9";
  const std::string message(kText, sizeof(kText) - 1);
  const json body = json::parse(error_body(message));
  ASSERT_TRUE(body.is_object());
  ASSERT_EQ(body.size(), 1u);
  EXPECT_EQ(body["Error"], message);
}

TEST(ErrorBody, MessagesAreCutAt4KiB) {
  const std::string fits(4096, 'a');
  EXPECT_EQ(json::parse(error_body(fits))["Error"], fits);
  const std::string longer(100000, 'b');
  const std::string body = error_body(longer);
  EXPECT_LT(body.size(), 4200u);
  EXPECT_EQ(json::parse(body)["Error"], std::string(4096, 'b') + "...");
}

TEST(ErrorBody, ACutNeverSplitsAUtf8Sequence) {
  // "é" is two bytes: 4095 ASCII bytes and then "é" would split it at 4096.
  const std::string message = std::string(4095, 'a') + "\xc3\xa9" + std::string(10, 'z');
  const json body = json::parse(error_body(message));  // throws on a split sequence
  EXPECT_EQ(body["Error"], std::string(4095, 'a') + "...");
}

}  // namespace
}  // namespace fracpack::error_body_test
