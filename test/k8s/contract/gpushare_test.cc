#include "k8s/contract/gpushare.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/profiles.h"
#include "test/support/contract_pods.h"

namespace fracpack::k8s::gpushare_test {
namespace {

const GpushareContract kContract;

using testing::container_json;
Pod pod_from(const std::string& json, const Contract& contract = kContract) { return testing::pod_from(json, contract); }
// Pods bound to n1 (the record is read back only for a bound pod).
std::string pod_json(const std::string& containers, const std::string& annotations = "", const std::string& init = "") {
  return testing::pod_json(containers, annotations, R"("nodeName":"n1",)" + (init.empty() ? std::string() : R"("initContainers":[)" + init + "],"));
}
Node node_from(const std::string& capacity, const std::string& annotations = "") {
  auto n = parse_node(R"({"metadata":{"name":"n1")" + (annotations.empty() ? std::string() : R"(,"annotations":{)" + annotations + "}") +
                          R"(},"status":{"capacity":{)" + capacity + R"(},"allocatable":{"cpu":"8","memory":"32Gi"}}})",
                      kContract.selection());
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.message());
  return n.ok() ? *n : Node{};
}

TEST(GpushareContract, APodAsksForGibOnOneCard) {
  auto r = kContract.pod_request(pod_from(pod_json(container_json("proxy", R"("cpu":"1")") + "," + container_json("main", R"("aliyun.com/gpu-mem":"4")"))));
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].name, "main");
  EXPECT_EQ(r->containers[0].cards, 1);
  EXPECT_EQ(r->containers[0].memory_mib, 4096);
  EXPECT_EQ(r->containers[0].cores, 0);
  const GpushareContract mib({}, GpushareOptions{1});
  r = mib.pod_request(pod_from(pod_json(container_json("main", R"("aliyun.com/gpu-mem":"3000")"))));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_mib, 3000);
}

TEST(GpushareContract, PodsItsDevicePluginWouldMisassignAreRefused) {
  auto r = kContract.pod_request(pod_from(pod_json(container_json("a", R"("aliyun.com/gpu-mem":"1")") + "," + container_json("b", R"("aliyun.com/gpu-mem":"2")"))));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("pod ml/p: containers a and b both ask for aliyun.com/gpu-mem"), std::string::npos) << r.message();
  r = kContract.pod_request(pod_from(pod_json(container_json("main", R"("cpu":"1")"), "", container_json("warm", R"("aliyun.com/gpu-mem":"1")"))));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("init container warm"), std::string::npos) << r.message();
  r = kContract.pod_request(pod_from(pod_json(container_json("main", R"("aliyun.com/gpu-mem":"-2")"))));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("pod ml/p: container main"), std::string::npos) << r.message();
  r = kContract.pod_request(pod_from(pod_json(container_json("main", R"("aliyun.com/gpu-mem":"99999999999999")"))));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("out of range (GiB)"), std::string::npos) << r.message();
}

TEST(GpushareContract, NodesFromCapacity) {
  auto spec = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"31","aliyun.com/gpu-count":"2")"));
  ASSERT_TRUE(spec.ok()) << spec.message();
  ASSERT_EQ(spec->cards.size(), 2u);
  EXPECT_EQ(spec->cards[1].index, 1);
  EXPECT_EQ(spec->cards[1].memory_mib, 15 * 1024) << "the extender's integer division";
  // Not a gpushare node; a node whose plugin has not reported its count.
  spec = kContract.node_spec(node_from(R"("cpu":"8")"));
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->cards.empty());
  EXPECT_TRUE(spec->excluded.empty());
  spec = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"32")"));
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->cards.empty());
  EXPECT_NE(spec->excluded.find("no aliyun.com/gpu-count"), std::string::npos) << spec->excluded;
  // Bad values name the node and the field.
  auto bad = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"lots","aliyun.com/gpu-count":"2")"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("node n1: status.capacity[aliyun.com/gpu-mem]"), std::string::npos) << bad.message();
  bad = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"1","aliyun.com/gpu-count":"2")"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("less than 1 GiB a card"), std::string::npos) << bad.message();
  // Another profile's node agent registered it.
  const auto gpushare = make_contract(testing::profile_config("gpushare"));
  ASSERT_TRUE(gpushare.ok());
  spec = (*gpushare)->node_spec(node_from(R"("aliyun.com/gpu-mem":"32","aliyun.com/gpu-count":"2")", R"("fracpack.io/gpu-devices":"[]")"));
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->cards.empty());
  EXPECT_NE(spec->excluded.find("the fracpack profile's node agent (annotation fracpack.io/gpu-devices)"), std::string::npos) << spec->excluded;
}

// Found in review: capacity was decoded only for the gpushare profile, so a
// fracpack deployment no longer saw a gpushare node whose plugin had dropped
// its allocatable to 0 (cards unhealthy, endpoint restarting) as gpushare's.
TEST(GpushareContract, AnotherProfileSeesAGpushareNodeByCapacityAlone) {
  const auto fracpack = make_contract(testing::profile_config("fracpack"));
  ASSERT_TRUE(fracpack.ok());
  auto n = parse_node(R"({"metadata":{"name":"n1","labels":{"nvidia.com/gpu.count":"2","nvidia.com/gpu.memory":"15360"}},)"
                      R"("status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"},)"
                      R"("allocatable":{"cpu":"8","aliyun.com/gpu-mem":"0","aliyun.com/gpu-count":"0"}}})",
                      (*fracpack)->selection());
  ASSERT_TRUE(n.ok()) << n.message();
  auto spec = (*fracpack)->node_spec(*n);
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_NE(spec->excluded.find("gpushare profile's node agent (resource aliyun.com/gpu-"), std::string::npos) << spec->excluded;
}

ConfigMap config_map(const std::string& ns, const std::string& name, const std::string& gpus) {
  ConfigMap c;
  c.meta.namespace_name = ns;
  c.meta.name = name;
  c.data = {{"gpus", gpus}};
  return c;
}

TEST(GpushareContract, TheUnhealthyCardConfigMapsBothNames) {
  EXPECT_EQ(kContract.node_config_map_namespace(), "kube-system");
  EXPECT_EQ(kContract.config_map_nodes(config_map("kube-system", "unhealthy-node-a", "0")), std::vector<std::string>{"node-a"});
  // "unhealthy-gpu-a" is node a's by the later name and node gpu-a's by the earlier.
  EXPECT_EQ(kContract.config_map_nodes(config_map("kube-system", "unhealthy-gpu-a", "0")), (std::vector<std::string>{"a", "gpu-a"}));
  EXPECT_TRUE(kContract.config_map_nodes(config_map("default", "unhealthy-gpu-a", "0")).empty());
  EXPECT_TRUE(kContract.config_map_nodes(config_map("kube-system", "coredns", "0")).empty());
  EXPECT_TRUE(kContract.config_map_nodes(config_map("kube-system", "unhealthy-", "0")).empty());
  // Other contracts read no ConfigMaps.
  EXPECT_EQ(FracpackContract().node_config_map_namespace(), "");
}

TEST(GpushareContract, UnhealthyCardsAreMarkedAndBadEntriesNamedNotReadAsCardZero) {
  auto spec = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"60","aliyun.com/gpu-count":"4")"));
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_TRUE(kContract.apply_config_map(config_map("kube-system", "unhealthy-gpu-n1", " 1, 3"), *spec).ok());
  std::vector<bool> healthy;
  for (const auto& c : spec->cards) healthy.push_back(c.healthy);
  EXPECT_EQ(healthy, (std::vector<bool>{true, false, true, false}));

  spec = kContract.node_spec(node_from(R"("aliyun.com/gpu-mem":"60","aliyun.com/gpu-count":"4")"));
  Status s = kContract.apply_config_map(config_map("kube-system", "unhealthy-gpu-n1", "two,2,9"), *spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "configmap kube-system/unhealthy-gpu-n1: data[gpus]: \"two\", \"9\" names no card of node n1 (card indices, "
                         "comma-separated); the other entries apply");
  healthy.clear();
  for (const auto& c : spec->cards) healthy.push_back(c.healthy);
  EXPECT_EQ(healthy, (std::vector<bool>{true, true, false, true})) << "card 0 stays healthy";
  // No gpus key, or an empty list: nothing to apply.
  ConfigMap empty = config_map("kube-system", "unhealthy-gpu-n1", "");
  EXPECT_TRUE(kContract.apply_config_map(empty, *spec).ok());
  empty.data.clear();
  EXPECT_TRUE(kContract.apply_config_map(empty, *spec).ok());
}

TEST(GpushareContract, TheRecordAndItsReadBack) {
  scheduling::NodeSpec node{"n1", 8000, 0, {}, {}, {}, 0};
  node.cards = {scheduling::Card{0, "", "", 15 * 1024}, scheduling::Card{1, "", "", 15 * 1024}};
  const Pod pod = pod_from(pod_json(container_json("main", R"("aliyun.com/gpu-mem":"4")")));
  scheduling::Allocation a{"n1", {{"main", false, {{1, "", 4096, 0}}}}};
  const auto t = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1767225600123456789));
  StringMap m = kContract.allocation_annotations(pod, a, node, t);
  EXPECT_EQ(m, (StringMap{{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                          {"ALIYUN_COM_GPU_MEM_DEV", "15"},
                          {"ALIYUN_COM_GPU_MEM_POD", "4"},
                          {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"},
                          {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "1767225600123456789"}}));

  auto read = [&](const std::string& ann, const scheduling::NodeSpec* n) {
    return kContract.recorded_allocation(pod_from(pod_json(container_json("main", R"("aliyun.com/gpu-mem":"4")"), ann)), n);
  };
  auto r = read(R"("ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_POD":"4","ALIYUN_COM_GPU_MEM_ASSIGNED":"true")", &node);
  ASSERT_EQ(r.kind, RecordedAllocation::Kind::kAllocation) << r.problem;
  EXPECT_EQ(r.allocation, a);
  EXPECT_EQ(read(R"("ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_POD":"4")", nullptr).kind, RecordedAllocation::Kind::kNeedsNode);
  EXPECT_EQ(read("", &node).kind, RecordedAllocation::Kind::kNone);
  r = read(R"("ALIYUN_COM_GPU_MEM_IDX":"1")", &node);
  EXPECT_EQ(r.kind, RecordedAllocation::Kind::kCards) << "the card is known, the request says how much";
  EXPECT_EQ(r.cards, std::vector<int>{1});
  r = read(R"("ALIYUN_COM_GPU_MEM_IDX":"7","ALIYUN_COM_GPU_MEM_POD":"4")", &node);
  EXPECT_EQ(r.kind, RecordedAllocation::Kind::kMalformed);
  EXPECT_NE(r.problem.find("card 7 is not on node n1"), std::string::npos) << r.problem;
  r = read(R"("ALIYUN_COM_GPU_MEM_IDX":"one")", &node);
  EXPECT_EQ(r.kind, RecordedAllocation::Kind::kMalformed);
  EXPECT_NE(r.problem.find("ALIYUN_COM_GPU_MEM_IDX"), std::string::npos) << r.problem;
}

}  // namespace
}  // namespace fracpack::k8s::gpushare_test
