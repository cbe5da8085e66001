// The API server's version (k8s/server_version.h): read from GET /version as
// vendors write it, and what fracpack adapts to by it.
#include "k8s/server_version.h"

#include <gtest/gtest.h>

#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::testing::server_version_test {
namespace {

TEST(ServerVersion, ReadsMajorAndMinorAsVendorsWriteThem) {
  auto v = k8s::parse_server_version(R"({"major":"1","minor":"20+","gitVersion":"v1.20.2-eks"})");
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->minor, 20);
  EXPECT_FALSE(k8s::consistent_list_from_cache(*v));
  EXPECT_FALSE(k8s::scheduler_knows_unresolvable(*v));
  auto git = k8s::parse_server_version(R"({"major":"","minor":"","gitVersion":"v1.31.4"})");
  ASSERT_TRUE(git) << git.message();
  EXPECT_TRUE(k8s::consistent_list_from_cache(*git));
  EXPECT_TRUE(k8s::scheduler_knows_unresolvable(*git));
  EXPECT_FALSE(k8s::parse_server_version("{}"));
  EXPECT_FALSE(k8s::parse_server_version("not json"));
}

TEST(ServerVersion, KeepsTheGitVersionAndReadsPlainNumbers) {
  auto v = k8s::parse_server_version(R"({"major":"1","minor":"28","gitVersion":"v1.28.3","platform":"linux/amd64"})");
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 28);
  EXPECT_EQ(v->git_version, "v1.28.3");
  // A vendor's suffix after the digits.
  auto gke = k8s::parse_server_version(R"({"major":"1","minor":"31-gke.1","gitVersion":"v1.31.1-gke.1"})");
  ASSERT_TRUE(gke) << gke.message();
  EXPECT_EQ(gke->minor, 31);
  // gitVersion without the leading "v".
  auto bare = k8s::parse_server_version(R"({"gitVersion":"1.25.0"})");
  ASSERT_TRUE(bare) << bare.message();
  EXPECT_EQ(bare->major, 1);
  EXPECT_EQ(bare->minor, 25);
}

TEST(ServerVersion, NoVersionAnywhereIsAnErrorThatQuotesWhatWasSent) {
  auto r = k8s::parse_server_version(R"({"major":"x","minor":"","gitVersion":"unknown"})");
  ASSERT_FALSE(r);
  EXPECT_NE(r.message().find("unknown"), std::string::npos) << r.message();
  EXPECT_FALSE(k8s::parse_server_version(R"({"gitVersion":"v1"})"));
  EXPECT_FALSE(k8s::parse_server_version(R"(["1","20"])"));
  EXPECT_FALSE(k8s::parse_server_version(""));
}

// Found by the tests-mirror work: j.value(key, "") threw json::type_error on a
// field of another type ({"major":1}), an exception where a Result was due.
TEST(ServerVersion, FieldsOfAnotherTypeAreAnErrorNotAnException) {
  // A proxy or a broken build may answer anything; the result says so.
  EXPECT_FALSE(k8s::parse_server_version(R"({"major":1,"minor":20})"));
  EXPECT_FALSE(k8s::parse_server_version(R"({"gitVersion":null})"));
}

TEST(ServerVersion, AtLeastComparesMajorThenMinor) {
  const k8s::ServerVersion v{1, 22, "v1.22.0"};
  EXPECT_TRUE(v.at_least(1, 22));
  EXPECT_TRUE(v.at_least(1, 21));
  EXPECT_TRUE(v.at_least(0, 99));
  EXPECT_FALSE(v.at_least(1, 23));
  EXPECT_FALSE(v.at_least(2, 0));
  // The thresholds: a consistent LIST from the cache from 1.31, FailedAndUnresolvableNodes
  // safe from 1.22 (a 1.21 scheduler may be one minor behind).
  EXPECT_FALSE(k8s::consistent_list_from_cache({1, 30, ""}));
  EXPECT_TRUE(k8s::consistent_list_from_cache({1, 31, ""}));
  EXPECT_TRUE(k8s::consistent_list_from_cache({2, 0, ""}));
  EXPECT_FALSE(k8s::scheduler_knows_unresolvable({1, 21, ""}));
  EXPECT_TRUE(k8s::scheduler_knows_unresolvable({1, 22, ""}));
}

TEST(ServerVersion, ReadFromTheApiServer) {
  FakeApiServerOptions o;
  o.minor_version = "29";
  FakeApiServer s(o);
  k8s::ApiClient client(client_for(s));
  auto v = k8s::read_server_version(client);
  ASSERT_TRUE(v) << v.message();
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 29);
  // An API server that refuses: the error, not a version.
  s.faults().unauthorized = 1;
  EXPECT_FALSE(k8s::read_server_version(client));
}

}  // namespace
}  // namespace fracpack::testing::server_version_test
