// `fracpack serve` as a process, as an operator runs it: the structured
// log has one line per placement (pod, node, cards, reason), in either
// format; SIGTERM drains and exits 0; a bearer token never reaches the log.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"
#include "test/support/testlib.h"

namespace fracpack::testing::serve_process_test {
namespace {

const std::string kExample = std::string(FRACPACK_SOURCE_DIR) + "/config/examples/cluster-snapshot.json";

TEST(ServeProcess, LogsOnePlacementLinePerBindInJsonAndLogfmtAndDrainsOnSigterm) {
  for (const std::string format : {"json", "logfmt"}) {
    FracpackProcess p({"serve", "--snapshot", kExample, "--listen", "127.0.0.1:0", "--log-format", format});
    const std::string port = p.wait_for(format == "json" ? "\"msg\":\"listening\",\"address\":\"127\\.0\\.0\\.1:([0-9]+)\""
                                                         : "msg=listening address=\"?127\\.0\\.0\\.1:([0-9]+)");
    ASSERT_FALSE(port.empty()) << p.log();
    auto driver = driver_for("http://127.0.0.1:" + port);
    ASSERT_TRUE(driver->introduce_and_bind(snapshot_pod(kExample, "inference", "llm-serve-1"), "gpu-a100-1").ok());
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
  FracpackProcess p({"serve", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--log-level", "debug", "--signing-key",
                     testing::test_signing_key_path()});
  ASSERT_FALSE(p.wait_for("\"msg\":\"listening\"").empty()) << p.log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a few list attempts
  EXPECT_EQ(p.stop(), 0);
  const std::string log = p.log();
  EXPECT_NE(log.find("127.0.0.1:1"), std::string::npos) << "the failing API server should be named:\n" << log;
  EXPECT_EQ(log.find(token), std::string::npos) << log;
  EXPECT_EQ(log.find("Bearer"), std::string::npos) << log;
}

}  // namespace
}  // namespace fracpack::testing::serve_process_test
