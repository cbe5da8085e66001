// The store and the ledger it feeds (k8s/cluster_state.h): relists replace
// the store, pods are found by UID or name. The reservations it keeps:
// test/k8s/reservations_test.cc; its ConfigMaps and ResourceQuotas:
// test/k8s/cluster_state_side_objects_test.cc.
#include "k8s/cluster_state.h"

#include <gtest/gtest.h>

#include <thread>

#include "k8s/contract/fracpack.h"
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

}  // namespace
}  // namespace fracpack::testing::cluster_state_test
