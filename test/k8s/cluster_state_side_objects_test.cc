// ClusterState's objects beside pods and nodes (k8s/cluster_state_side_objects.cc):
// the contract's ConfigMaps and the namespace quota's ResourceQuotas, each
// kept by its list and watch through the same steps: what arrives is
// decoded (what cannot be is counted and reported), applied or deleted, and
// a relist's end drops what it did not list; an aborted relist drops nothing.
#include "k8s/cluster_state.h"

#include <gtest/gtest.h>

#include "k8s/contract/gpushare.h"
#include "k8s/quota.h"
#include "scheduling/quantity.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::cluster_state_side_objects_test {
namespace {

using namespace std::chrono_literals;
using scheduling::Ledger;

k8s::ResourceQuota quota(const std::string& ns, const std::string& name, k8s::StringMap hard) {
  k8s::ResourceQuota q;
  q.meta.namespace_name = ns;
  q.meta.name = name;
  q.meta.uid = "uid-" + name;
  q.meta.resource_version = "5";
  q.hard = std::move(hard);
  return q;
}

std::string unhealthy(const std::string& name, const std::string& gpus) {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name +
         R"(","namespace":"kube-system","resourceVersion":"7"},"data":{"gpus":")" + gpus + R"("}})";
}

// A gpushare state with node n1 (two cards) listed, pods and nodes synced.
std::unique_ptr<k8s::ClusterState> gpushare_state() {
  k8s::SyncOptions options;
  options.contract = std::make_shared<k8s::GpushareContract>();
  auto state = std::make_unique<k8s::ClusterState>(options);
  state->begin_node_list();
  EXPECT_TRUE(state->list_node(R"({"metadata":{"name":"n1"},"status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"}}})").ok());
  state->end_node_list();
  state->begin_pod_list(true);
  state->end_pod_list();
  return state;
}

std::vector<bool> schedulable(const k8s::ClusterState& state) {
  return state.read([](const Ledger& l) {
    std::vector<bool> out;
    for (const auto& c : l.node("n1")->cards()) out.push_back(c.schedulable());
    return out;
  });
}

// The gpushare profile's unhealthy-card ConfigMaps through the store's sink:
// a relist that lacks one drops its marks, an unchanged one is not reported
// again, and /debug/snapshot carries them (a replay of it sees the marks).
TEST(SideObjects, TheContractsConfigMapsFollowListsAndEvents) {
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

TEST(SideObjects, ResourceQuotasArriveByListAndWatchAndAGoneOneIsDroppedByTheRelist) {
  std::vector<std::string> reported;
  k8s::SyncOptions o;
  o.on_quota_problem = [&](const k8s::ObjectMeta& q, const std::string& m) { reported.push_back(q.namespace_name + "/" + q.name + ": " + m); };
  k8s::ClusterState state(o);
  auto json_of = [](const k8s::ResourceQuota& q) { return k8s::resource_quota_json(q); };
  state.begin_resource_quota_list();
  ASSERT_TRUE(state.list_resource_quota(json_of(quota("a", "q", {{"limits.fracpack.io/gpu", "2"}}))).ok());
  ASSERT_TRUE(state.list_resource_quota(json_of(quota("b", "q", {{"limits.fracpack.io/gpu-memory", "half"}}))).ok());
  state.end_resource_quota_list();
  EXPECT_EQ(state.quota_rows().size(), 2u);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0], "b/q: spec.hard limits.fracpack.io/gpu-memory cannot be read (" + fracpack::Quantity::parse("half").message() +
                             "): no new GPU placement in the namespace until it is fixed");
  EXPECT_EQ(state.counters().malformed_quotas, 1u);
  ASSERT_TRUE(state.resource_quota_event(k8s::WatchEventType::kModified, json_of(quota("a", "q", {{"limits.fracpack.io/gpu", "3"}}))).ok());
  EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.quota("a")->at(0).hard; }), 3);
  // A relist without b's quota: it is gone.
  state.begin_resource_quota_list();
  ASSERT_TRUE(state.list_resource_quota(json_of(quota("a", "q", {{"limits.fracpack.io/gpu", "3"}}))).ok());
  state.end_resource_quota_list();
  EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.quota("b") == nullptr; }), true);
  ASSERT_TRUE(state.resource_quota_event(k8s::WatchEventType::kDeleted, json_of(quota("a", "q", {}))).ok());
  EXPECT_TRUE(state.quota_rows().empty());
}

TEST(SideObjects, NotReadyUntilTheResourceQuotasAreListed) {
  k8s::ClusterState state(k8s::SyncOptions{});
  state.begin_pod_list(false);
  state.end_pod_list();
  state.begin_node_list();
  state.end_node_list();
  EXPECT_FALSE(state.ready()) << "a namespace's quota cannot be checked before its ResourceQuotas are known";
  state.begin_resource_quota_list();
  state.end_resource_quota_list();
  EXPECT_TRUE(state.ready());
}

// A relist cut short (the watch failed mid-list) drops nothing: only a
// relist that ends says what is gone. The same for both kinds.
TEST(SideObjects, AnAbortedRelistDropsNothing) {
  auto state = gpushare_state();
  ASSERT_TRUE(state->config_map_event(k8s::WatchEventType::kAdded, unhealthy("unhealthy-gpu-n1", "0")).ok());
  ASSERT_EQ(schedulable(*state), (std::vector<bool>{false, true}));
  state->begin_config_map_list();
  state->abort_config_map_list();
  EXPECT_EQ(schedulable(*state), (std::vector<bool>{false, true})) << "kept";
  state->begin_config_map_list();
  state->end_config_map_list();
  EXPECT_EQ(schedulable(*state), (std::vector<bool>{true, true})) << "dropped by a relist that ended without it";

  k8s::ClusterState quotas(k8s::SyncOptions{});
  ASSERT_TRUE(quotas.resource_quota_event(k8s::WatchEventType::kAdded, k8s::resource_quota_json(quota("a", "q", {{"limits.fracpack.io/gpu", "2"}})))
                  .ok());
  quotas.begin_resource_quota_list();
  ASSERT_TRUE(quotas.list_resource_quota(k8s::resource_quota_json(quota("b", "q", {{"limits.fracpack.io/gpu", "1"}}))).ok());
  quotas.abort_resource_quota_list();
  EXPECT_EQ(quotas.quota_rows().size(), 2u) << "a's kept, b's applied as it arrived";
  // The aborted list's items do not count as listed by the next one.
  quotas.begin_resource_quota_list();
  ASSERT_TRUE(quotas.list_resource_quota(k8s::resource_quota_json(quota("a", "q", {{"limits.fracpack.io/gpu", "2"}}))).ok());
  quotas.end_resource_quota_list();
  ASSERT_EQ(quotas.quota_rows().size(), 1u);
  EXPECT_EQ(quotas.quota_rows()[0].namespace_name, "a");
}

// What cannot be decoded is counted by its kind and reported, listed or
// watched, and applies nothing.
TEST(SideObjects, AnUndecodableObjectIsCountedAndReportedByItsKind) {
  auto state = gpushare_state();
  state->begin_config_map_list();
  EXPECT_FALSE(state->list_config_map("{").ok());
  state->end_config_map_list();
  EXPECT_FALSE(state->config_map_event(k8s::WatchEventType::kModified, "[]").ok());
  EXPECT_FALSE(state->resource_quota_event(k8s::WatchEventType::kAdded, "[]").ok());
  state->begin_resource_quota_list();
  EXPECT_FALSE(state->list_resource_quota("7").ok());
  state->end_resource_quota_list();
  EXPECT_EQ(state->counters().malformed_config_maps, 2u);
  EXPECT_EQ(state->counters().malformed_quotas, 2u);
  EXPECT_EQ(state->counters().malformed_pods, 0u);
  std::vector<std::string> objects;
  for (const auto& p : state->problems()) objects.push_back(p.object + " | " + p.message.substr(0, p.message.find(':')));
  EXPECT_EQ(objects, (std::vector<std::string>{"configmap ? | cannot decode a listed configmap", "configmap ? | cannot decode a watched configmap",
                                               "resourcequota ? | cannot decode a watched resourcequota",
                                               "resourcequota ? | cannot decode a listed resourcequota"}));
  EXPECT_EQ(schedulable(*state), (std::vector<bool>{true, true}));
  EXPECT_TRUE(state->quota_rows().empty());
}

// A watch event answers its object's resourceVersion (the informer resumes from it), for either kind.
TEST(SideObjects, AnEventAnswersItsResourceVersion) {
  auto state = gpushare_state();
  auto cm = state->config_map_event(k8s::WatchEventType::kAdded, unhealthy("unhealthy-gpu-n1", "1"));
  ASSERT_TRUE(cm.ok()) << cm.message();
  EXPECT_EQ(*cm, "7");
  auto q = state->resource_quota_event(k8s::WatchEventType::kAdded, k8s::resource_quota_json(quota("a", "q", {{"limits.fracpack.io/gpu", "2"}})));
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(*q, "5");
}

}  // namespace
}  // namespace fracpack::testing::cluster_state_side_objects_test
