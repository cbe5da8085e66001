// The configuration's values that are not YAML's (config/values.h): each
// parsed by its one parser, which the file, the flags and their users share.
#include "config/values.h"

#include <gtest/gtest.h>

namespace fracpack::config::values_test {
namespace {

TEST(ParseDuration, GoSyntax) {
  EXPECT_EQ(parse_duration("1m30s")->count(), 90000);
  EXPECT_EQ(parse_duration("250ms")->count(), 250);
  EXPECT_EQ(parse_duration("1.5h")->count(), 5400000);
  EXPECT_EQ(parse_duration("0")->count(), 0);
  EXPECT_FALSE(parse_duration("10"));
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("5 s"));
  EXPECT_NE(parse_duration("10 parsecs").message().find("unknown unit"), std::string::npos);
}

TEST(ParseListen, HostAndPort) {
  EXPECT_EQ(*parse_listen("127.0.0.1:8888"), (std::pair<std::string, uint16_t>{"127.0.0.1", 8888}));
  EXPECT_EQ(*parse_listen(":0"), (std::pair<std::string, uint16_t>{"", 0}));
  EXPECT_EQ(*parse_listen("[::1]:443"), (std::pair<std::string, uint16_t>{"::1", 443}));
  EXPECT_FALSE(parse_listen("8888"));
  EXPECT_FALSE(parse_listen("a:99999"));
  EXPECT_FALSE(parse_listen("a:"));
  EXPECT_TRUE(loopback_host("localhost"));
  EXPECT_TRUE(loopback_host("127.0.0.2"));
  EXPECT_FALSE(loopback_host(""));
  EXPECT_FALSE(loopback_host("0.0.0.0"));
}

// log.level and log.format were checked by name in config/validate.cc and
// parsed again by server/log.cc; one parser each now, into the enum the log
// takes (server/log.h).
TEST(LogValues, EachLevelParsesFromItsNameAndBack) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    auto parsed = parse_log_level(log_level_name(l));
    ASSERT_TRUE(parsed) << log_level_name(l);
    EXPECT_EQ(*parsed, l);
  }
  EXPECT_EQ(log_level_name(LogLevel::kWarn), "warn");
  EXPECT_LT(static_cast<int>(LogLevel::kDebug), static_cast<int>(LogLevel::kError)) << "ordered by severity";
  for (const char* bad : {"", "INFO", "warning", "trace", "info "}) {
    auto refused = parse_log_level(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.message(), "expected debug, info, warn or error, got \"" + std::string(bad) + "\"");
  }
}

TEST(LogValues, EachFormatParsesFromItsNameAndBack) {
  for (LogFormat f : {LogFormat::kJson, LogFormat::kLogfmt}) {
    auto parsed = parse_log_format(log_format_name(f));
    ASSERT_TRUE(parsed) << log_format_name(f);
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(log_format_name(LogFormat::kLogfmt), "logfmt");
  for (const char* bad : {"", "text", "JSON", "xml"}) {
    auto refused = parse_log_format(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.message(), "expected json or logfmt, got \"" + std::string(bad) + "\"");
  }
}

TEST(ConfigEnumValues, EachNameParsesIntoItsEnumAndBack) {
  for (WithoutDevices w : {WithoutDevices::kFail, WithoutDevices::kIdle}) EXPECT_EQ(*parse_without_devices(without_devices_name(w)), w);
  for (RecordSigning r : {RecordSigning::kSigned, RecordSigning::kUnsigned}) EXPECT_EQ(*parse_record_signing(record_signing_name(r)), r);
  EXPECT_FALSE(parse_without_devices("sleep"));
  EXPECT_FALSE(parse_record_signing("Signed"));
}

}  // namespace
}  // namespace fracpack::config::values_test
