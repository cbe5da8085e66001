// The routes beside the extender verbs (server/status_routes.h): /healthz,
// /readyz, /version, /metrics, /debug/ledger and /debug/snapshot, through a
// daemon serving a snapshot.
#include "server/status_routes.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "test/support/server_fixture.h"

namespace fracpack::testing::status_routes_test {
namespace {

using json = nlohmann::json;

TEST(StatusRoutes, HealthAndReadinessArePlainOk) {
  Standalone s({node_object("n1", 1)});
  for (const char* path : {"/healthz", "/readyz"}) {
    const auto r = http_get(s.url(), path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "ok\n") << path;
    EXPECT_EQ(r.content_type, "text/plain") << path;
  }
}

TEST(StatusRoutes, VersionNamesTheBuildThePolicyAndTheMode) {
  config::Config c = test_config();
  c.policy.name = "bestfit";
  Standalone s({node_object("n1", 1)}, c);
  const auto r = http_get(s.url(), "/version");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  const json v = json::parse(r.body);
  EXPECT_EQ(v.size(), 3u) << r.body;
  EXPECT_TRUE(v["version"].is_string() && !v["version"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(v["policy"], "bestfit");
  EXPECT_EQ(v["mode"], "snapshot");
}

TEST(StatusRoutes, MetricsInThePrometheusTextFormat) {
  Standalone s({node_object("n1", 1)});
  const auto r = http_get(s.url(), "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
  EXPECT_NE(r.body.find("# TYPE fracpack_ready gauge"), std::string::npos);
}

TEST(StatusRoutes, TheLedgerWithTheTargetWorkloadsFragmentation) {
  Standalone s({node_object("n1", 2), gpu_pod("a", "u-a", 30, 0, 1, {}, 0, "n1")});
  const auto r = http_get(s.url(), "/debug/ledger");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  const json ledger = json::parse(r.body);
  ASSERT_EQ(ledger["nodes"].size(), 1u);
  EXPECT_EQ(ledger["nodes"][0]["name"], "n1");
  EXPECT_EQ(ledger["totals"]["pods"], 1);
  EXPECT_TRUE(ledger["totals"].contains("fragmentationRatio")) << "standalone mode has a target workload: " << r.body;
}

TEST(StatusRoutes, TheSnapshotIsAListOfTheStoredObjects) {
  Standalone s({node_object("n1", 1), gpu_pod("a", "u-a", 30)});
  const auto r = http_get(s.url(), "/debug/snapshot");
  ASSERT_EQ(r.status, 200);
  const json list = json::parse(r.body);
  EXPECT_EQ(list["kind"], "List");
  std::multiset<std::string> kinds;
  for (const json& item : list["items"]) kinds.insert(item["kind"].get<std::string>());
  EXPECT_EQ(kinds.count("Node"), 1u) << r.body.substr(0, 500);
  EXPECT_EQ(kinds.count("Pod"), 1u) << r.body.substr(0, 500);
}

TEST(StatusRoutes, OtherPathsAreNotStatusRoutes) {
  Standalone s({node_object("n1", 1)});
  for (const char* path : {"/", "/health", "/debug", "/debug/ledger/", "/metrics/x", "/VERSION"}) {
    EXPECT_EQ(http_get(s.url(), path).status, 404) << path;
  }
}

}  // namespace
}  // namespace fracpack::testing::status_routes_test
