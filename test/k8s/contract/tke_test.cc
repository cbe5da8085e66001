// The tke profile (k8s/contract/tke.h): pods written for tkestack's
// GPUManager, in its units, placed by fracpack and served by fracpack's
// node agent and record.
#include "k8s/contract/tke.h"

#include <gtest/gtest.h>

#include "k8s/contract/profiles.h"
#include "test/support/contract_pods.h"

namespace fracpack::k8s::tke_test {
namespace {

// As a deployment makes it: knowing the other profiles' marks.
std::shared_ptr<const Contract> tke(FracpackOptions options = {}) {
  ContractConfig c = testing::profile_config("tke");
  c.fracpack_options = options;
  auto made = make_contract(c);
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.message());
  return made.ok() ? *made : nullptr;
}

using testing::container_json;
Result<scheduling::PodRequest> request(const std::string& containers, const std::string& annotations = "", const std::string& init = "") {
  auto contract = tke();
  const std::string spec = init.empty() ? std::string() : R"("initContainers":[)" + init + "],";
  return contract->pod_request(testing::pod_from(testing::pod_json(containers, annotations, spec), *contract));
}

const std::string kDevices =
    R"("fracpack.io/gpu-devices":"[{\"index\":0,\"uuid\":\"GPU-a\",\"model\":\"T4\",\"memoryMiB\":15360,\"isolation\":\"mps\"},)"
    R"({\"index\":1,\"uuid\":\"GPU-b\",\"model\":\"T4\",\"memoryMiB\":15360,\"isolation\":\"mps\"}]")";

Result<scheduling::NodeSpec> node(const std::string& annotations, const std::string& resources, const std::string& labels = "") {
  auto contract = tke();
  auto n = parse_node(R"({"metadata":{"name":"n1","labels":{)" + labels + R"(},"annotations":{)" + annotations +
                          R"(}},"status":{"capacity":{)" + resources + R"(},"allocatable":{"cpu":"8","memory":"32Gi")" +
                          (resources.empty() ? "" : "," + resources) + "}}}",
                      contract->selection());
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.message());
  if (!n.ok()) return n.error();
  return contract->node_spec(*n);
}

TEST(TkeContract, AShareIsPercentOfACardWithMemoryIn256MibBlocks) {
  auto r = request(container_json("proxy", R"("cpu":"1")") + "," +
                   container_json("main", R"("tencent.com/vcuda-core":"30","tencent.com/vcuda-memory":"8")"));
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].name, "main");
  EXPECT_EQ(r->containers[0].cards, 1);
  EXPECT_EQ(r->containers[0].cores, 300);        // milli of a card
  EXPECT_EQ(r->containers[0].memory_mib, 2048);  // 8 x 256 MiB
  EXPECT_EQ(r->containers[0].memory_percent, 0);
}

TEST(TkeContract, HundredsAreWholeCardsWhateverTheMemorySays) {
  auto r = request(container_json("train", R"("tencent.com/vcuda-core":"200","tencent.com/vcuda-memory":"4")") + "," +
                   container_json("eval", R"("tencent.com/vcuda-core":"100")"));
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 2u);
  EXPECT_EQ(r->containers[0].cards, 2);
  EXPECT_EQ(r->containers[0].cores, scheduling::kCardMilli);
  EXPECT_EQ(r->containers[0].memory_percent, 100);
  EXPECT_EQ(r->containers[0].memory_mib, 0);
  EXPECT_EQ(r->containers[1].cards, 1);
  EXPECT_EQ(r->containers[1].memory_percent, 100);
}

TEST(TkeContract, InitContainersAndSidecarsAskAsInTheFracpackProfile) {
  auto r = request(container_json("main", R"("tencent.com/vcuda-core":"50","tencent.com/vcuda-memory":"16")"), "",
                   container_json("warm", R"("tencent.com/vcuda-core":"20","tencent.com/vcuda-memory":"4")"));
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 2u);
  EXPECT_EQ(r->containers[0].name, "warm");
  EXPECT_TRUE(r->containers[0].init);
  // vcuda-memory is no node resource: kubelets before 1.31 refuse it on an init container.
  EXPECT_TRUE(r->init_names_unknown_resources);
}

TEST(TkeContract, WhatGpuManagerRefusesIsRefusedNamingPodContainerAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("tencent.com/vcuda-core":"150")",
       "pod ml/p: container main: resources.limits[tencent.com/vcuda-core]: 150 is above 100 and not a multiple of 100"},
      {R"("tencent.com/vcuda-core":"30")",
       "pod ml/p: container main: resources.limits[tencent.com/vcuda-core]: 30 is a share of one card and needs "
       "resources.limits[tencent.com/vcuda-memory]"},
      {R"("tencent.com/vcuda-core":"30","tencent.com/vcuda-memory":"0")", "needs resources.limits[tencent.com/vcuda-memory]"},
      {R"("tencent.com/vcuda-memory":"8")",
       "pod ml/p: container main: resources.limits[tencent.com/vcuda-memory] without tencent.com/vcuda-core"},
      {R"("tencent.com/vcuda-core":"6500")", "6500 is more than 64 whole cards"},
      {R"("tencent.com/vcuda-core":"20","tencent.com/vcuda-memory":"99999999999999")",
       "resources.limits[tencent.com/vcuda-memory]: 99999999999999 is out of range"},
      {R"("tencent.com/vcuda-core":"half")", "pod ml/p: container main"},
  };
  for (const auto& [limits, message] : cases) {
    auto r = request(container_json("main", limits));
    ASSERT_FALSE(r.ok()) << limits;
    EXPECT_NE(r.message().find(message), std::string::npos) << limits << ": " << r.message();
  }
  auto r = request(container_json("main", R"("tencent.com/vcuda-core":"100","fracpack.io/gpu":"1")"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("asks for fracpack.io/gpu (the fracpack profile) beside the tke profile's resources"), std::string::npos)
      << r.message();
}

TEST(TkeContract, APodWithoutVcudaAsksForNoCard) {
  auto r = request(container_json("main", R"("cpu":"2")"));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->containers.empty());
  EXPECT_FALSE(tke()->requests_gpu(testing::pod_from(testing::pod_json(container_json("main", R"("cpu":"2")")), *tke())));
}

// The cluster refuses unenforced shares: a vcuda share needs an enforcing
// card as a fracpack.io share does, and the fracpack.io annotations apply.
TEST(TkeContract, SharesNeedEnforcementAndFracpackAnnotationsApply) {
  auto contract = tke(FracpackOptions{UnenforcedShares::kRefuse});
  const std::string containers = container_json("share", R"("tencent.com/vcuda-core":"25","tencent.com/vcuda-memory":"32")") + "," +
                                 container_json("whole", R"("tencent.com/vcuda-core":"100")");
  auto r = contract->pod_request(testing::pod_from(testing::pod_json(containers, R"("fracpack.io/gpu-model":"T4")"), *contract));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->containers[0].needs_enforcement);
  EXPECT_FALSE(r->containers[1].needs_enforcement);
  EXPECT_EQ(r->allowed_models, std::vector<std::string>{"T4"});
  r = contract->pod_request(testing::pod_from(testing::pod_json(containers, R"("fracpack.io/isolation":"none")"), *contract));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r->containers[0].needs_enforcement);
}

TEST(TkeContract, KubeletsVcudaCoreCountNamesTheCards) {
  const TkeContract contract;
  EXPECT_EQ(contract.device_resource(), "tencent.com/vcuda-core");
  EXPECT_EQ(contract.device_ids_per_card(), 100);
  EXPECT_EQ(*contract.cards_of_devices(1), 1);
  EXPECT_EQ(*contract.cards_of_devices(99), 1);
  EXPECT_EQ(*contract.cards_of_devices(100), 1);
  EXPECT_EQ(*contract.cards_of_devices(300), 3);
  EXPECT_EQ(*contract.cards_of_devices(6400), 64);
  for (int64_t bad : {0, 150, 6500}) {
    auto cards = contract.cards_of_devices(bad);
    ASSERT_FALSE(cards.ok()) << bad;
    EXPECT_NE(cards.message().find(std::to_string(bad) + " is not a share of one card"), std::string::npos) << cards.message();
  }
}

TEST(TkeContract, NodesAreThoseFracpacksAgentServesVcudaCoreOn) {
  auto n = node(kDevices, R"("tencent.com/vcuda-core":"200")");
  ASSERT_TRUE(n.ok()) << n.message();
  ASSERT_EQ(n->cards.size(), 2u);
  EXPECT_EQ(n->cards[1].uuid, "GPU-b");
  EXPECT_EQ(n->cards[1].isolation, scheduling::CardIsolation::kMps);
  EXPECT_TRUE(n->unavailable.empty()) << n->unavailable;
  EXPECT_TRUE(n->excluded.empty()) << n->excluded;
}

TEST(TkeContract, ANodeWhoseKubeletDoesNotCountVcudaCoreOffersNoCard) {
  // kubelet would admit the pod without asking the agent for its card.
  for (const std::string& resources : {std::string(), std::string(R"("tencent.com/vcuda-core":"0")")}) {
    auto n = node(kDevices, resources);
    ASSERT_TRUE(n.ok()) << n.message();
    EXPECT_NE(n->unavailable.find("kubelet counts no tencent.com/vcuda-core"), std::string::npos) << resources << ": " << n->unavailable;
    for (const auto& c : n->cards) EXPECT_TRUE(c.cordoned);
  }
}

TEST(TkeContract, GpuManagersNodesAndFracpackProfileNodesAreLeftAlone) {
  auto n = node("", R"("tencent.com/vcuda-core":"200","tencent.com/vcuda-memory":"120")",
                R"("nvidia.com/gpu.count":"2","nvidia.com/gpu.memory":"15360")");
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_TRUE(n->cards.empty());
  EXPECT_NE(n->excluded.find("tencent.com/vcuda-core is served by another device plugin (GPUManager's?)"), std::string::npos)
      << n->excluded;
  // fracpack's agent run with the fracpack profile registers fracpack.io/gpu.
  n = node(kDevices, R"("fracpack.io/gpu":"64")");
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_NE(n->excluded.find("the fracpack profile's node agent (resource fracpack.io/gpu)"), std::string::npos) << n->excluded;
  // GFD labels alone are on GPUManager's nodes too: no cards.
  n = node("", "", R"("nvidia.com/gpu.count":"2","nvidia.com/gpu.memory":"15360")");
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_TRUE(n->cards.empty());
  EXPECT_TRUE(n->excluded.empty()) << n->excluded;
}

TEST(TkeContract, TheRecordIsFracpacksSoItsAgentServesIt) {
  auto contract = tke();
  scheduling::Allocation a;
  a.node = "n1";
  a.containers.push_back(scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{1, "GPU-b", 2048, 300}}});
  const Pod pod = testing::pod_from(
      testing::pod_json(container_json("main", R"("tencent.com/vcuda-core":"30","tencent.com/vcuda-memory":"8")"), "", R"("nodeName":"n1",)"),
      *contract);
  const StringMap written = contract->allocation_annotations(pod, a, scheduling::NodeSpec{}, {});
  EXPECT_EQ(written, (StringMap{{"fracpack.io/allocation", format_allocation(a)}, {"fracpack.io/gpu-indices", "1"}}));
  EXPECT_EQ(contract->record_keys(), (std::vector<std::string>{"fracpack.io/allocation", "fracpack.io/gpu-indices"}));
  Pod bound = pod;
  bound.meta.annotations = written;
  const RecordedAllocation read = contract->recorded_allocation(bound, nullptr);
  ASSERT_EQ(read.kind, RecordedAllocation::Kind::kAllocation) << read.problem;
  EXPECT_EQ(read.allocation.containers[0].cards[0].cores, 300);
  EXPECT_EQ(read.allocation.containers[0].cards[0].memory_mib, 2048);
}

TEST(TkeContract, QuotaCountsPercentOfACardAndBlocks) {
  const auto keys = tke()->quota_keys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].key, "limits.tencent.com/vcuda-core");
  EXPECT_EQ(keys[0].resource, scheduling::QuotaResource::kCoresPercent);
  EXPECT_EQ(keys[1].key, "limits.tencent.com/vcuda-memory");
  EXPECT_EQ(keys[1].resource, scheduling::QuotaResource::kMemoryMib);
  EXPECT_EQ(keys[1].unit_mib, 256);
}

TEST(TkeContract, TheConfiguredNamesAreRead) {
  ContractConfig c = testing::profile_config("tke");
  c.tke.vcuda_core = "example.com/vcore";
  c.fracpack.allocation = "example.com/allocation";
  auto contract = make_contract(c);
  ASSERT_TRUE(contract.ok()) << contract.message();
  EXPECT_EQ((*contract)->device_resource(), "example.com/vcore");
  EXPECT_EQ((*contract)->record_keys().front(), "example.com/allocation");
}

}  // namespace
}  // namespace fracpack::k8s::tke_test
