// The daemon's control loop in the kubernetes mode (server/daemon_control.cc):
// it serves once the initial lists are in, then reports the over-committed
// cards the API server confirms (a log line, a Warning Event on each pod
// holding the card, once per card until it drains, and the
// fracpack_overcommitted_cards gauge); and a workload ConfigMap it cannot
// read does not stop it serving.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::daemon_control_test {
namespace {

using json = nlohmann::json;

// A pod on n1 whose signed record holds card 0 at `percent` cores.
std::string signed_share(const std::string& name, int percent) {
  const std::string uid = "u-" + name;
  return pod_object(PodSpec(name, "default", "n1", "Running",
                            {{"fracpack.io/gpu-cores", std::to_string(percent)}, {"fracpack.io/gpu-memory", "4096"}},
                            signed_record(fracpack_contract(), uid, "n1",
                                          {{"fracpack.io/allocation", allocation_annotation("n1", {{0, percent}}, 4096)}}),
                            uid));
}

// The GPUOverCommitted Events posted, by the pod they name.
std::map<std::string, int> overcommit_events(const FakeApiServer& api) {
  std::map<std::string, int> out;
  for (const auto& e : api.list("events")) {
    const auto j = json::parse(e);
    if (j.value("reason", "") == "GPUOverCommitted" && j.value("type", "") == "Warning") ++out[j["involvedObject"].value("name", "")];
  }
  return out;
}

// Events on, the reconciler every 100 ms.
config::Config reporting_config() {
  config::Config cfg = test_config();
  cfg.cluster.events = true;
  cfg.cluster.reconcile_interval = std::chrono::milliseconds(100);
  return cfg;
}

TEST(DaemonControl, AnOverCommittedCardIsReportedOnEachPodOnceAndCountedUntilItDrains) {
  Connected c(reporting_config());
  c.api->create("nodes", node_object("n1", 2));
  c.api->create("pods", signed_share("s1", 50));
  c.api->create("pods", signed_share("s2", 75));  // 1250 milli on card 0: two writers placed on it
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return metric_sum(c.url(), "fracpack_overcommitted_cards") == 1; }));
  ASSERT_TRUE(Cluster::wait_for([&] { return overcommit_events(*c.api).size() == 2; }));
  // Several passes later: still one Event per pod (reported once per card).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(overcommit_events(*c.api), (std::map<std::string, int>{{"s1", 1}, {"s2", 1}}));
  for (const auto& e : c.api->list("events")) {
    const auto j = json::parse(e);
    if (j.value("reason", "") != "GPUOverCommitted") continue;
    EXPECT_NE(j.value("message", "").find("GPU 0 of node n1 is over-committed"), std::string::npos) << e;
    EXPECT_NE(j.value("message", "").find("this pod and 1 other(s)"), std::string::npos) << e;
  }
  // One leaves: the card drains, and the gauge says so.
  ASSERT_TRUE(c.api->remove("pods", "default", "s2"));
  EXPECT_TRUE(Cluster::wait_for([&] { return metric_sum(c.url(), "fracpack_overcommitted_cards") == 0; }));
}

// What the API server does not confirm is not reported: the ledger holds
// an over-commit only while the watch lags behind a deletion.
TEST(DaemonControl, NoCardIsReportedWithoutAnOverCommit) {
  Connected c(reporting_config());
  c.api->create("nodes", node_object("n1", 2));
  c.api->create("pods", signed_share("s1", 50));
  c.api->create("pods", signed_share("s2", 50));  // exactly the card
  c.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(metric_sum(c.url(), "fracpack_overcommitted_cards"), 0);
  EXPECT_TRUE(overcommit_events(*c.api).empty());
}

// The target workload ConfigMap is best effort: one the daemon cannot read
// leaves it serving, on the cluster's pods.
TEST(DaemonControl, AnUnreadableWorkloadConfigMapStillServes) {
  config::Config cfg = test_config();
  cfg.workload.config_map = "fracpack-system/fracpack-target-workload";
  Connected c(cfg);
  c.api->create("nodes", node_object("n1", 2));
  c.api->create("configmaps", R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fracpack-target-workload",)"
                              R"("namespace":"fracpack-system"},"data":{"workload.json":"{not json"}})");
  ASSERT_NO_THROW(c.start());
  EXPECT_EQ(http_get(c.url(), "/readyz").status, 200);
}

}  // namespace
}  // namespace fracpack::testing::daemon_control_test
