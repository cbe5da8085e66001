// Structured logs (server/log.h): one line per record, JSON lines or logfmt,
// values quoted and escaped as the format needs; the level filter; one
// write per record on stderr.
#include "server/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fracpack::server::log_test {
namespace {

using json = nlohmann::json;

TEST(Log, JsonRecordsCarryTimeLevelMessageAndFields) {
  const std::string line = format_log(LogFormat::kJson, "2024-01-02T03:04:05.678Z", LogLevel::kWarn, "bind failed",
                                      {{"pod", "ml/train-0"}, {"node", "n1"}});
  EXPECT_EQ(line, R"({"time":"2024-01-02T03:04:05.678Z","level":"warn","msg":"bind failed","pod":"ml/train-0","node":"n1"})");
}

TEST(Log, JsonValuesAreEscapedAndOneLine) {
  const std::string message = "quote \" backslash \\ newline \n tab \t";
  const std::string line = format_log(LogFormat::kJson, "t", LogLevel::kError, message, {{"why", "a\nb\x01"}});
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  const json j = json::parse(line);
  EXPECT_EQ(j["msg"], message);
  EXPECT_EQ(j["why"], "a\nb\x01");
  EXPECT_EQ(j["level"], "error");
}

TEST(Log, LogfmtQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(format_log(LogFormat::kLogfmt, "T", LogLevel::kInfo, "started", {{"port", "8888"}, {"policy", "fracpack"}}),
            "time=T level=info msg=started port=8888 policy=fracpack");
  EXPECT_EQ(format_log(LogFormat::kLogfmt, "T", LogLevel::kDebug, "two words", {{"empty", ""}, {"eq", "a=b"}}),
            "time=T level=debug msg=\"two words\" empty=\"\" eq=\"a=b\"");
}

TEST(Log, LogfmtEscapesQuotesBackslashesAndControlCharacters) {
  const std::string line = format_log(LogFormat::kLogfmt, "T", LogLevel::kWarn, "m",
                                      {{"q", "say \"hi\""}, {"b", "a\\b"}, {"nl", "a\nb"}, {"tab", "a\tb"}});
  EXPECT_EQ(line, "time=T level=warn msg=m q=\"say \\\"hi\\\"\" b=\"a\\\\b\" nl=\"a\\nb\" tab=\"a\\x09b\"");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

// What log() writes to stderr while `f` runs (fd 2 sent to a file).
template <typename F>
std::string captured_stderr(F f) {
  // One file per process: ctest -j runs the Log tests side by side, and a
  // shared name mixed one test's lines into the other's (seen in CI's TSan stage).
  const std::string path = ::testing::TempDir() + "/log_test_stderr." + std::to_string(::getpid());
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
  f();
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::remove(path);
  return ss.str();
}

TEST(Log, WritesLinesAtOrAboveTheConfiguredLevel) {
  configure_log(LogLevel::kWarn, LogFormat::kJson);
  EXPECT_FALSE(log_enabled(LogLevel::kDebug));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo));
  EXPECT_TRUE(log_enabled(LogLevel::kWarn));
  EXPECT_TRUE(log_enabled(LogLevel::kError));
  const std::string out = captured_stderr([] {
    log_info("quiet");
    log_warn("loud", {{"k", "v"}});
    log_error("louder");
  });
  std::istringstream lines(out);
  std::vector<json> records;
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  ASSERT_EQ(records.size(), 2u) << out;
  EXPECT_EQ(records[0]["msg"], "loud");
  EXPECT_EQ(records[0]["level"], "warn");
  EXPECT_EQ(records[0]["k"], "v");
  EXPECT_EQ(records[1]["msg"], "louder");
  // The time: RFC 3339 in UTC with milliseconds.
  const std::string time = records[0]["time"];
  ASSERT_EQ(time.size(), 24u) << time;
  EXPECT_EQ(time[10], 'T');
  EXPECT_EQ(time[19], '.');
  EXPECT_EQ(time.back(), 'Z');
  EXPECT_EQ(out.back(), '\n');
  configure_log(LogLevel::kInfo, LogFormat::kJson);
}

TEST(Log, TheConfiguredFormatIsTheOneWritten) {
  configure_log(LogLevel::kDebug, LogFormat::kLogfmt);
  EXPECT_TRUE(log_enabled(LogLevel::kDebug));
  const std::string out = captured_stderr([] { log(LogLevel::kDebug, "hello world", {{"n", "1"}}); });
  EXPECT_EQ(out.rfind("time=", 0), 0u) << out;
  EXPECT_NE(out.find(" level=debug msg=\"hello world\" n=1\n"), std::string::npos) << out;
  configure_log(LogLevel::kInfo, LogFormat::kJson);
}

}  // namespace
}  // namespace fracpack::server::log_test
