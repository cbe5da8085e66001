// The store and the ledger it feeds (k8s/cluster_state.h): relists replace
// the store, pods are found by UID or name, the contract's ConfigMaps follow
// lists and events. The reservations it keeps: test/k8s/reservations_test.cc.
#include "k8s/cluster_state.h"

#include <gtest/gtest.h>

#include <thread>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/gpushare.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::cluster_state_test {
namespace {

using namespace std::chrono_literals;
using scheduling::Allocation;
using scheduling::Ledger;


std::string json_of(const std::string& name, const std::string& node, const std::string& phase = "Running") {
  return pod_object(PodSpec(name, "default", node, phase, half_card(), {}, "u-" + name));
}

TEST(ClusterState, ARelistReplacesTheStoreAndReleasesWhatTheGoneHeld) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(bound_share_pod("a", "n1", 0)).ok());
  ASSERT_TRUE(state.list_pod(bound_share_pod("b", "n1", 1)).ok());
  state.end_pod_list();
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod_count(); }), 2u);
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(bound_share_pod("a", "n1", 0)).ok());
  state.end_pod_list();
  EXPECT_FALSE(state.pod("u-b").has_value());
  EXPECT_EQ(state.read([](const Ledger& l) { return l.node("n1")->use()[1].cores; }), 0);
  EXPECT_EQ(state.counters().relist_deletions, 1u);
}

// The bind fence's marker write as the pod watch delivers it (the quota's
// fence, ClusterState::wait_fence_marker): counted from a watch event, or
// once the whole relist holding it is applied; never from a pod that is not
// the marker (a tenant may write the annotation on its own pods).
TEST(ClusterState, TheFenceMarkerCountsOnceTheWatchHasDeliveredIt) {
  k8s::SyncOptions o;
  o.fence_marker_namespace = "fracpack-system";
  o.fence_marker_name = "fracpack-bind-fence";
  k8s::ClusterState state(o);
  auto marker = [](const std::string& ns, const std::string& name, const std::string& value) {
    return pod_object(PodSpec(name, ns, "", "Pending", {}, {{"fracpack.io/bind-fence", value}}, "u-" + ns + "-" + name));
  };
  auto seen = [&](const std::string& value) { return state.wait_fence_marker(value, std::chrono::steady_clock::now() + 20ms); };
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, marker("team-a", "p", "7-1")).ok());
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, marker("team-a", "fracpack-bind-fence", "7-1")).ok());
  EXPECT_FALSE(seen("7-1")) << "a tenant's pod is not the marker";
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, marker("fracpack-system", "fracpack-bind-fence", "7-1")).ok());
  EXPECT_TRUE(seen("7-1"));
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(marker("fracpack-system", "fracpack-bind-fence", "7-2")).ok());
  EXPECT_FALSE(seen("7-2")) << "the list's later items are not applied yet";
  state.end_pod_list();
  EXPECT_TRUE(seen("7-2"));
  EXPECT_TRUE(seen("7-1")) << "an earlier value stays seen";
  // Waiting ends when the event arrives.
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    (void)state.pod_event(k8s::WatchEventType::kModified, marker("fracpack-system", "fracpack-bind-fence", "7-3"));
  });
  EXPECT_TRUE(state.wait_fence_marker("7-3", std::chrono::steady_clock::now() + 10s));
  later.join();
}

TEST(ClusterState, PodsAreFoundByUidOrName) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_pod(decoded_pod(json_of("a", "")));
  ASSERT_TRUE(state.pod("u-a").has_value());
  ASSERT_TRUE(state.pod_by_name("default", "a").has_value());
  EXPECT_EQ(state.pod_by_name("default", "a")->meta.uid, "u-a");
  EXPECT_FALSE(state.pod_by_name("other", "a").has_value());
  // Finished: gone from the store.
  state.apply_pod(decoded_pod(json_of("a", "", "Succeeded")));
  EXPECT_FALSE(state.pod("u-a").has_value());
}

// The gpushare profile's unhealthy-card ConfigMaps through the store's sink:
// a relist that lacks one drops its marks, an unchanged one is not reported
// again, and /debug/snapshot carries them (a replay of it sees the marks).
TEST(ClusterState, TheContractsConfigMapsFollowListsAndEvents) {
  k8s::SyncOptions options;
  options.contract = std::make_shared<k8s::GpushareContract>();
  k8s::ClusterState state(options);
  auto cm = [](const std::string& name, const std::string& gpus) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","namespace":"kube-system","resourceVersion":"7"},"data":{"gpus":")" +
           gpus + R"("}})";
  };
  state.begin_node_list();
  ASSERT_TRUE(state.list_node(R"({"metadata":{"name":"n1"},"status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"}}})").ok());
  state.end_node_list();
  auto schedulable = [&] {
    return state.read([](const Ledger& l) {
      std::vector<bool> out;
      for (const auto& c : l.node("n1")->cards()) out.push_back(c.schedulable());
      return out;
    });
  };
  state.begin_pod_list(true);
  state.end_pod_list();
  EXPECT_FALSE(state.ready()) << "a contract that reads ConfigMaps waits for their list";
  state.begin_config_map_list();
  ASSERT_TRUE(state.list_config_map(cm("unhealthy-gpu-n1", "1,9")).ok());
  ASSERT_TRUE(state.list_config_map(cm("coredns", "0")).ok());  // not the contract's: ignored
  state.end_config_map_list();
  EXPECT_TRUE(state.ready());
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, false}));
  const size_t reported = state.problems().size();
  EXPECT_GE(reported, 1u);
  EXPECT_NE(state.snapshot_json().find("unhealthy-gpu-n1"), std::string::npos);
  auto rv = state.config_map_event(k8s::WatchEventType::kModified, cm("unhealthy-gpu-n1", "1,9"));
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(*rv, "7");
  EXPECT_EQ(state.problems().size(), reported) << "an unchanged ConfigMap is not reported again";
  state.begin_config_map_list();  // a relist without it: the mark goes
  state.end_config_map_list();
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, true}));
  EXPECT_EQ(state.snapshot_json().find("unhealthy-gpu-n1"), std::string::npos);
  ASSERT_TRUE(state.config_map_event(k8s::WatchEventType::kAdded, cm("unhealthy-n1", "0")).ok());
  EXPECT_EQ(schedulable(), (std::vector<bool>{false, true}));
  ASSERT_TRUE(state.config_map_event(k8s::WatchEventType::kDeleted, cm("unhealthy-n1", "0")).ok());
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, true}));
  EXPECT_FALSE(state.config_map_event(k8s::WatchEventType::kAdded, "[]").ok());
  EXPECT_EQ(state.counters().malformed_config_maps, 1u);
  EXPECT_EQ(state.counters().malformed_nodes, 0u);
}

}  // namespace
}  // namespace fracpack::testing::cluster_state_test
