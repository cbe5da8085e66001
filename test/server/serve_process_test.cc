// `fracpack serve` as a process, as an operator runs it: the structured
// log has one line per placement (pod, node, cards, reason), in either
// format; SIGTERM drains and exits 0; a bearer token never reaches the log.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "test/server/server_fixture.h"
#include "test/testlib.h"

extern char** environ;

namespace fracpack::testing {
namespace {

const std::string kExample = std::string(FRACPACK_SOURCE_DIR) + "/config/examples/cluster-snapshot.json";

// The binary with stderr into a file; stopped (SIGTERM) at destruction.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) : log_path_(::testing::TempDir() + "fracpack-serve-" + std::to_string(getpid()) + ".log") {
    args.insert(args.begin(), FRACPACK_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~ServeProcess() {
    stop();
    unlink(log_path_.c_str());
  }
  std::string log() const { return read_file(log_path_).value_or(""); }
  // Waits for a log line matching `pattern`; returns its first group.
  std::string wait_for(const std::string& pattern, std::chrono::seconds timeout = std::chrono::seconds(20)) const {
    const std::regex re(pattern);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }
  // SIGTERM; the exit code (or 128 + signal).
  int stop() {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

TEST(ServeProcess, LogsOnePlacementLinePerBindInJsonAndLogfmtAndDrainsOnSigterm) {
  for (const std::string format : {"json", "logfmt"}) {
    ServeProcess p({"serve", "--snapshot", kExample, "--listen", "127.0.0.1:0", "--log-format", format});
    const std::string port = p.wait_for(format == "json" ? "\"msg\":\"listening\",\"address\":\"127\\.0\\.0\\.1:([0-9]+)\""
                                                         : "msg=listening address=\"?127\\.0\\.0\\.1:([0-9]+)");
    ASSERT_FALSE(port.empty()) << p.log();
    auto driver = driver_for("http://127.0.0.1:" + port);
    ASSERT_TRUE(driver->bind("inference", "llm-serve-1", "uid-inference-llm-serve-1", "gpu-a100-1").ok());
    const std::string placed = p.wait_for(format == "json" ? "(\\{[^\n]*\"msg\":\"placed\"[^\n]*\\})" : "([^\n]*msg=placed[^\n]*)");
    ASSERT_FALSE(placed.empty()) << p.log();
    if (format == "json") {
      auto line = nlohmann::json::parse(placed);
      EXPECT_EQ(line["level"], "info");
      EXPECT_EQ(line["pod"], "inference/llm-serve-1");
      EXPECT_EQ(line["node"], "gpu-a100-1");
      EXPECT_TRUE(std::regex_match(line["cards"].get<std::string>(), std::regex("[0-7]"))) << placed;
      EXPECT_NE(line["reason"].get<std::string>().find("best cards"), std::string::npos) << placed;
    } else {
      EXPECT_TRUE(std::regex_search(placed, std::regex("level=info msg=placed pod=inference/llm-serve-1 .*node=gpu-a100-1 cards=[0-7] .*reason=\""))) << placed;
    }
    EXPECT_EQ(p.stop(), 0) << p.log();
    EXPECT_NE(p.log().find("stopped"), std::string::npos) << p.log();
  }
}

TEST(ServeProcess, ABearerTokenNeverReachesTheLog) {
  // An API server that refuses connections: the daemon retries and logs
  // every failure, with the kubeconfig's token in its client.
  const std::string token = "s3cr3t-token-do-not-log-4f9a";
  TempDir dir;
  const std::string kubeconfig = dir.write("kubeconfig", R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: ")" + token + R"("}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  ServeProcess p({"serve", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--log-level", "debug"});
  ASSERT_FALSE(p.wait_for("\"msg\":\"listening\"").empty()) << p.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a few list attempts
  EXPECT_EQ(p.stop(), 0);
  const std::string log = p.log();
  EXPECT_NE(log.find("127.0.0.1:1"), std::string::npos) << "the failing API server should be named:\n" << log;
  EXPECT_EQ(log.find(token), std::string::npos) << log;
  EXPECT_EQ(log.find("Bearer"), std::string::npos) << log;
}

}  // namespace
}  // namespace fracpack::testing
