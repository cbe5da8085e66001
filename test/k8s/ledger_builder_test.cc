// The one path from objects to the ledger (k8s/ledger_builder.h): records,
// partial records, inference and the fail-closed rules, the same for every
// contract and for the watch and snapshots alike.
#include "k8s/ledger_builder.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/gpushare.h"
#include "k8s/contract/hami.h"
#include "test/support/cluster_harness.h"
#include "test/support/contract_pods.h"
#include "test/support/record_keys.h"

namespace fracpack::k8s::ledger_builder_test {
namespace {

using testing::allocation_annotation;
using testing::node_object;
using testing::pod_object;
using testing::PodSpec;

const FracpackContract kContract;

Pod pod(const std::string& name, const std::string& node, std::map<std::string, std::string> limits,
        std::map<std::string, std::string> annotations = {}) {
  limits.emplace("cpu", "1");
  return *parse_pod(pod_object(PodSpec(name, "d", node, "Running", limits, annotations, "u-" + name)), kContract.selection());
}

Node node(const std::string& name, int gpus) { return *parse_node(node_object(name, gpus), kContract.selection()); }

struct Built {
  std::vector<std::string> problems;
  std::vector<RecordReport> reports;  // what pods' owners are told
  LedgerBuilder builder;
  explicit Built(const Contract& c = kContract, RecordTrust trust = {})
      : builder(c, [this](std::string object, std::string message) { problems.push_back(object + ": " + message); }, std::move(trust),
                [this](const RecordReport& r) { reports.push_back(r); }) {}
  const scheduling::Ledger& ledger() const { return builder.ledger(); }
  bool cordoned(const std::string& n) const {
    for (const auto& c : ledger().node(n)->cards()) {
      if (!c.cordoned) return false;
    }
    return true;
  }
};

TEST(LedgerBuilder, ARecordIsConfirmedAsWrittenAndAnOverCommitIsReported) {
  Built b;
  b.builder.apply_node(node("n1", 2));
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu-cores", "60"}},
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 60}})}}));
  b.builder.apply_bound_pod(pod("b", "n1", {{"fracpack.io/gpu-cores", "60"}},
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 60}})}}));
  EXPECT_EQ(b.ledger().node("n1")->use()[1].cores, 1200);
  EXPECT_EQ(b.ledger().pod("u-a")->phase, scheduling::PodPhase::kConfirmed);
  EXPECT_EQ(b.builder.counters().overcommit_reports, 1u);
  ASSERT_EQ(b.problems.size(), 1u);
  EXPECT_NE(b.problems[0].find("over-commits 1 card(s) of n1"), std::string::npos) << b.problems[0];
}

TEST(LedgerBuilder, APartialRecordIsMatchedToTheRequest) {
  Built b;
  b.builder.apply_node(node("n1", 4));
  // The record is malformed; the flat index list names two cards for the two asked.
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu", "2"}},
                                {{"fracpack.io/allocation", "{not json"}, {"fracpack.io/gpu-indices", "3,1"}}));
  const auto& use = b.ledger().node("n1")->use();
  EXPECT_EQ(use[1].cores, 1000);
  EXPECT_EQ(use[3].cores, 1000);
  EXPECT_EQ(b.builder.counters().malformed_pods, 1u);
  EXPECT_EQ(b.builder.counters().inferred_allocations, 1u);
  ASSERT_EQ(b.problems.size(), 2u);
  EXPECT_NE(b.problems[1].find("cards inferred from annotation fracpack.io/gpu-indices"), std::string::npos) << b.problems[1];
  EXPECT_FALSE(b.cordoned("n1"));
}

TEST(LedgerBuilder, NoRecordTakesTheCardsTheRequestWouldTakeNow) {
  Built b;
  b.builder.apply_node(node("n1", 2));
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu", "1"}}));
  EXPECT_EQ(b.ledger().node("n1")->use()[0].cores + b.ledger().node("n1")->use()[1].cores, 1000);
  EXPECT_EQ(b.builder.counters().inferred_allocations, 1u);
  EXPECT_FALSE(b.cordoned("n1"));
}

TEST(LedgerBuilder, WhatCannotBeInferredClosesItsNodeUntilItLeaves) {
  Built b;
  b.builder.apply_node(node("n1", 1));
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu", "1"}},
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{0, 100}})}}));
  // A second whole-card pod without a record: nothing left to infer on.
  b.builder.apply_bound_pod(pod("b", "n1", {{"fracpack.io/gpu", "1"}}));
  EXPECT_TRUE(b.cordoned("n1"));
  EXPECT_EQ(b.ledger().node("n1")->cpu_requested(), 2000) << "its CPU is charged";
  b.builder.remove_pod("u-b");
  EXPECT_FALSE(b.cordoned("n1"));
}

TEST(LedgerBuilder, APodWithUnreadableValuesClosesItsNode) {
  Built b;
  b.builder.apply_node(node("n1", 2));
  b.builder.apply_bound_pod(pod("bad", "n1", {{"fracpack.io/gpu-cores", "300"}}));
  EXPECT_TRUE(b.cordoned("n1"));
  EXPECT_EQ(b.builder.counters().malformed_pods, 1u);
  b.builder.forget_unresolved("u-bad");
  EXPECT_FALSE(b.cordoned("n1"));
}

// Found in review: a pod fracpack would refuse to place (another scheduler
// bound it: HAMi's init-container pods, gpushare's two-container pods) shut
// its node for as long as it lived, although its record says what it holds.
TEST(LedgerBuilder, ARefusedPodWithAFullRecordIsChargedByItsRecord) {
  Built b;
  b.builder.apply_node(node("n1", 2));
  b.builder.apply_bound_pod(pod("placed-elsewhere", "n1", {{"fracpack.io/gpu-cores", "300"}},
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 40}})}}));
  EXPECT_FALSE(b.cordoned("n1"));
  EXPECT_EQ(b.ledger().node("n1")->use()[1].cores, 400);
  EXPECT_EQ(b.ledger().node("n1")->cpu_requested(), 1000) << "its CPU still counts";
  ASSERT_EQ(b.problems.size(), 1u);
  EXPECT_NE(b.problems[0].find("fracpack.io/gpu-cores"), std::string::npos) << b.problems[0];
}

TEST(LedgerBuilder, APodBoundBeforeItsNodeWaitsForIt) {
  Built b;
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu", "1"}}));
  EXPECT_EQ(b.builder.counters().inferred_allocations, 0u);
  b.builder.apply_node(node("n1", 2));
  EXPECT_EQ(b.builder.counters().inferred_allocations, 1u);
  EXPECT_FALSE(b.cordoned("n1"));
}

TEST(LedgerBuilder, AMalformedNodeKeepsItsLastGoodCardsCordoned) {
  Built b;
  b.builder.apply_node(node("n1", 2));
  Node broken = node("n1", 2);
  broken.meta.labels = {{"nvidia.com/gpu.count", "x"}};
  b.builder.apply_node(broken);
  EXPECT_EQ(b.ledger().node("n1")->cards().size(), 2u);
  EXPECT_TRUE(b.cordoned("n1"));
  b.builder.apply_node(node("n1", 2));
  EXPECT_FALSE(b.cordoned("n1"));
  Node never_good = node("n2", 2);
  never_good.meta.labels = {{"nvidia.com/gpu.count", "x"}};
  b.builder.apply_node(never_good);
  EXPECT_TRUE(b.ledger().node("n2")->cards().empty());
  EXPECT_EQ(b.builder.counters().malformed_nodes, 2u);
}

// A contract whose record names cards by UUID (as HAMi's does) cannot be
// read before the node's cards are known: the pod waits for its node.
class UuidRecordContract : public FracpackContract {
 public:
  RecordedAllocation recorded_allocation(const Pod& p, const scheduling::NodeSpec* n) const override {
    RecordedAllocation r;
    const std::string* uuid = p.meta.annotation("fracpack.io/card-uuid");
    if (uuid == nullptr) return r;
    if (n == nullptr) {
      r.kind = RecordedAllocation::Kind::kNeedsNode;
      return r;
    }
    for (const auto& c : n->cards) {
      if (c.uuid != *uuid) continue;
      r.kind = RecordedAllocation::Kind::kAllocation;
      r.allocation = scheduling::Allocation{p.node_name, {{p.containers[0].name, false, {scheduling::CardShare{c.index, c.uuid, 0, 1000}}}}};
    }
    return r;
  }
};

TEST(LedgerBuilder, ARecordThatNeedsTheNodesCardsWaitsForThem) {
  const UuidRecordContract contract;
  Built b(contract);
  b.builder.apply_bound_pod(pod("a", "n1", {{"fracpack.io/gpu", "1"}}, {{"fracpack.io/card-uuid", "GPU-1"}}));
  Node n = node("n1", 0);
  n.meta.annotations = {{"fracpack.io/gpu-devices",
                         R"([{"index":0,"uuid":"GPU-0","memoryMiB":1024},{"index":1,"uuid":"GPU-1","memoryMiB":1024}])"}};
  b.builder.apply_node(n);
  EXPECT_EQ(b.ledger().node("n1")->use()[1].cores, 1000) << "the card its record names, not an inferred one";
  EXPECT_EQ(b.ledger().node("n1")->use()[0].cores, 0);
  EXPECT_EQ(b.builder.counters().inferred_allocations, 0u);
  EXPECT_FALSE(b.cordoned("n1"));
}

// gpushare's unhealthy-gpu-<node> ConfigMap: its cards take no placement
// while it lists them, whether it comes before or after the node; a bad
// entry is reported once, when the ConfigMap (or its node) arrives.
TEST(LedgerBuilder, AContractsConfigMapsApplyToTheirNodeUntilDeleted) {
  const GpushareContract gpushare;
  Built b(gpushare);
  auto gpushare_node = [&](const std::string& name) {
    return *parse_node(R"({"metadata":{"name":")" + name +
                           R"("},"status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"},"allocatable":{"cpu":"8"}}})",
                       gpushare.selection());
  };
  auto health = [&](const std::string& node) {
    std::vector<bool> out;
    for (const auto& c : b.ledger().node(node)->cards()) out.push_back(c.schedulable());
    return out;
  };
  ConfigMap cm;
  cm.meta.namespace_name = "kube-system";
  cm.meta.name = "unhealthy-gpu-n1";
  cm.data = {{"gpus", "1,x"}};
  b.builder.apply_config_map(cm);  // before its node
  EXPECT_TRUE(b.problems.empty());
  b.builder.apply_node(gpushare_node("n1"));
  EXPECT_EQ(health("n1"), (std::vector<bool>{true, false}));
  ASSERT_EQ(b.problems.size(), 1u);
  EXPECT_NE(b.problems[0].find("configmap kube-system/unhealthy-gpu-n1: "), std::string::npos) << b.problems[0];
  b.builder.apply_node(gpushare_node("n1"));  // a status update: not reported again
  EXPECT_EQ(b.problems.size(), 1u);
  EXPECT_EQ(health("n1"), (std::vector<bool>{true, false}));

  b.builder.apply_node(gpushare_node("n2"));
  cm.meta.name = "unhealthy-n2";  // the earlier revision's name, after its node
  cm.data = {{"gpus", "0"}};
  b.builder.apply_config_map(cm);
  EXPECT_EQ(health("n2"), (std::vector<bool>{false, true}));
  cm.data = {{"gpus", "1"}};  // changed: card 0 is back, card 1 out
  b.builder.apply_config_map(cm);
  EXPECT_EQ(health("n2"), (std::vector<bool>{true, false}));
  b.builder.delete_config_map("kube-system", "unhealthy-n2");
  EXPECT_EQ(health("n2"), (std::vector<bool>{true, true}));
  b.builder.delete_config_map("kube-system", "unhealthy-gpu-n1");
  EXPECT_EQ(health("n1"), (std::vector<bool>{true, true}));
  EXPECT_EQ(b.problems.size(), 1u);
}


// --- records a namespace user may have written (README "Security model") ---

// A pod "<name>" (uid "u-<name>") on n1 asking half a card, with `annotations`.
Pod half(const std::string& name, std::map<std::string, std::string> annotations) {
  return pod(name, "n1", {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-cores", "50"}, {"fracpack.io/gpu-memory", "8192"}},
             std::move(annotations));
}

std::map<std::string, std::string> signed_half(const std::string& name, int card) {
  return testing::signed_record(kContract, "u-" + name, "n1",
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{card, 50}}, 8192)},
                                 {"fracpack.io/gpu-indices", std::to_string(card)}});
}

TEST(LedgerBuilder, ASignedRecordIsChargedAndAHandWrittenOneIsNot) {
  Built b(kContract, testing::test_trust());
  b.builder.apply_node(node("n1", 4));
  b.builder.apply_bound_pod(half("signed", signed_half("signed", 3)));
  EXPECT_EQ(b.ledger().node("n1")->use()[3].cores, 500);
  EXPECT_TRUE(b.reports.empty());
  // The same record written by hand on another pod naming card 3 too: not
  // followed; charged where the request would go now (not card 3's half
  // beside the signed pod's, which would double-book it if both are real).
  b.builder.apply_bound_pod(half("forged", {{"fracpack.io/allocation", allocation_annotation("n1", {{2, 100}}, 40960)}}));
  const auto& use = b.ledger().node("n1")->use();
  EXPECT_EQ(use[2].cores, 0) << "the forged record's card is not charged";
  EXPECT_EQ(use[0].cores + use[1].cores + use[2].cores + use[3].cores, 1000) << "charged its request (half a card), by inference";
  ASSERT_EQ(b.reports.size(), 1u);
  EXPECT_EQ(b.reports[0].reason, "FracpackRecordRejected");
  EXPECT_EQ(b.reports[0].namespace_name, "d");
  EXPECT_EQ(b.reports[0].name, "forged");
  EXPECT_NE(b.reports[0].message.find("no annotation fracpack.io/allocation-signature"), std::string::npos) << b.reports[0].message;
  EXPECT_EQ(b.builder.counters().rejected_records, 1u);
  EXPECT_EQ(b.builder.records_by_key().at(testing::test_signer()->key_id()), 1);
  EXPECT_EQ(b.builder.records_by_key().at("none"), 1);
  // A record copied from the signed pod onto another: its signature names another UID.
  b.builder.apply_bound_pod(half("copy", signed_half("signed", 3)));
  EXPECT_EQ(b.builder.counters().rejected_records, 2u);
  EXPECT_LE(b.ledger().node("n1")->use()[3].cores, 1000);
}

TEST(LedgerBuilder, APodThatAsksNoGpuIsChargedNoCardWhateverItsRecordSays) {
  // Attack: a CPU pod with spec.nodeName and a record naming two free cards.
  for (bool verified : {false, true}) {
    Built b(kContract, verified ? testing::test_trust() : RecordTrust{});
    b.builder.apply_node(node("n1", 4));
    auto annotations = std::map<std::string, std::string>{
        {"fracpack.io/allocation", R"({"node":"n1","containers":[{"name":"main","cards":[{"index":0,"memoryMiB":16384,"cores":100},)"
                                   R"({"index":1,"memoryMiB":16384,"cores":100}]}]})"}};
    if (verified) annotations = testing::signed_record(kContract, "u-cpu", "n1", annotations);  // even one signed (another version's)
    b.builder.apply_bound_pod(pod("cpu", "n1", {}, annotations));
    for (const auto& u : b.ledger().node("n1")->use()) EXPECT_EQ(u.cores, 0) << verified;
    EXPECT_EQ(b.ledger().node("n1")->cpu_requested(), 1000) << "its CPU is charged";
    ASSERT_EQ(b.reports.size(), 1u);
    EXPECT_EQ(b.reports[0].reason, "FracpackRecordIgnored");
  }
}

TEST(LedgerBuilder, ARecordChangedAfterTheChargeIsReportedAndNotFollowed) {
  // Attack: patch your own running pod's record to another card, then wait
  // for the extender to read it again.
  for (bool verified : {false, true}) {
    Built b(kContract, verified ? testing::test_trust() : RecordTrust{});
    b.builder.apply_node(node("n1", 4));
    const auto record = verified ? signed_half("mine", 0)
                                 : std::map<std::string, std::string>{{"fracpack.io/allocation", allocation_annotation("n1", {{0, 50}}, 8192)}};
    b.builder.apply_bound_pod(half("mine", record));
    auto patched = record;
    patched["fracpack.io/allocation"] = allocation_annotation("n1", {{3, 50}}, 8192);
    for (int i = 0; i < 3; ++i) b.builder.apply_bound_pod(half("mine", patched));  // and its status updates after
    const auto& use = b.ledger().node("n1")->use();
    EXPECT_EQ(use[0].cores, 500) << "the card it holds stays charged";
    EXPECT_EQ(use[3].cores, 0);
    ASSERT_EQ(b.reports.size(), 1u) << "reported once";
    EXPECT_EQ(b.reports[0].reason, "FracpackRecordChanged");
    EXPECT_EQ(b.builder.counters().changed_records, 1u);
    // Back to what it was: nothing to report, the charge as before.
    b.builder.apply_bound_pod(half("mine", record));
    EXPECT_EQ(b.ledger().node("n1")->use()[0].cores, 500);
    EXPECT_EQ(b.reports.size(), 1u);
  }
}

TEST(LedgerBuilder, ARecordHoldingMoreThanThePodAsksIsNotFollowed) {
  Built b;  // even with records taken as written
  b.builder.apply_node(node("n1", 2));
  // Asks half a card, records a whole one (and another container's card).
  b.builder.apply_bound_pod(half("greedy", {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 100}}, 16384)}}));
  const auto& use = b.ledger().node("n1")->use();
  EXPECT_EQ(use[0].cores + use[1].cores, 500);
  ASSERT_EQ(b.reports.size(), 1u);
  EXPECT_NE(b.reports[0].message.find("more than the 50% asked"), std::string::npos) << b.reports[0].message;
  b.builder.apply_bound_pod(half("other", {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 50}}, 8192, "sidecar")}}));
  ASSERT_EQ(b.reports.size(), 2u);
  EXPECT_NE(b.reports[1].message.find("container sidecar asks for no GPU"), std::string::npos) << b.reports[1].message;
}

TEST(LedgerBuilder, WithVerifiedRecordsNoPodClosesItsNode) {
  // A pod creator who bypasses the scheduler (spec.nodeName) asking what
  // cannot fit, or what cannot be read, must not stop every placement on
  // the node; it is reported and charged its CPU and memory.
  Built b(kContract, testing::test_trust());
  b.builder.apply_node(node("n1", 1));
  b.builder.apply_bound_pod(pod("big", "n1", {{"fracpack.io/gpu", "4"}}));
  b.builder.apply_bound_pod(pod("bad", "n1", {{"fracpack.io/gpu-cores", "300"}}));
  EXPECT_FALSE(b.cordoned("n1"));
  EXPECT_EQ(b.ledger().node("n1")->use()[0].cores, 0);
  EXPECT_EQ(b.ledger().node("n1")->cpu_requested(), 1000) << "the pod that can be read";
  ASSERT_EQ(b.reports.size(), 1u);
  EXPECT_EQ(b.reports[0].name, "big");
}


// The peers' records are as user-writable as fracpack's: HAMi's
// vgpu-devices-allocated (while HAMi's plugin serves to-allocate) and
// gpushare's ALIYUN_COM_GPU_MEM_IDX/POD are charged only when fracpack
// signed them at bind.
TEST(LedgerBuilder, APeersRecordWrittenByHandIsNotCharged) {
  const HamiContract hami;
  Built b(hami, testing::test_trust());
  auto n = parse_node(R"({"metadata":{"name":"n1","annotations":{"hami.io/node-nvidia-register":)"
                      R"("[{\"id\":\"GPU-a\",\"count\":10,\"devmem\":16384,\"devcore\":100,\"type\":\"NVIDIA-T4\",\"health\":true},)"
                      R"({\"id\":\"GPU-b\",\"count\":10,\"devmem\":16384,\"devcore\":100,\"type\":\"NVIDIA-T4\",\"health\":true}]"}},)"
                      R"("status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"20"}}})",
                      hami.selection());
  ASSERT_TRUE(n) << n.message();
  b.builder.apply_node(*n);
  const std::string record = ";GPU-b,NVIDIA,16384,100:;";
  const std::string containers = testing::container_json("main", R"("nvidia.com/gpu":"1","nvidia.com/gpumem":"1000","nvidia.com/gpucores":"10")");
  const Pod forged = testing::pod_from(testing::pod_json(containers, R"("hami.io/vgpu-devices-allocated":")" + record + R"(","hami.io/vgpu-node":"n1")",
                                                         R"("nodeName":"n1",)"),
                                       hami);
  b.builder.apply_bound_pod(forged);
  ASSERT_EQ(b.reports.size(), 1u);
  EXPECT_EQ(b.reports[0].reason, "FracpackRecordRejected");
  const auto& use = b.ledger().node("n1")->use();
  EXPECT_EQ(use[0].cores + use[1].cores, 100) << "charged what it asks, by inference, not the whole card it wrote";
  // Signed by fracpack's extender, the same kind of record is charged as written.
  auto signed_annotations = testing::signed_record(hami, "u2", "n1",
                                                   {{"hami.io/vgpu-devices-allocated", ";GPU-a,NVIDIA,1000,10:;"}, {"hami.io/vgpu-node", "n1"}});
  std::string ann;
  for (const auto& [k, v] : signed_annotations) ann += (ann.empty() ? "" : ",") + ("\"" + k + "\":\"" + v + "\"");
  Pod ok = testing::pod_from(testing::pod_json(containers, ann, R"("nodeName":"n1",)"), hami);
  ok.meta.uid = "u2";
  ok.meta.name = "q";
  b.builder.apply_bound_pod(ok);
  EXPECT_EQ(b.reports.size(), 1u);
  EXPECT_EQ(b.ledger().pod("u2")->allocation.containers.at(0).cards.at(0).uuid, "GPU-a");

  const GpushareContract gpushare;
  Built g(gpushare, testing::test_trust());
  g.builder.apply_node(*parse_node(R"({"metadata":{"name":"n1"},"status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"},)"
                                   R"("allocatable":{"cpu":"8"}}})",
                                   gpushare.selection()));
  g.builder.apply_bound_pod(testing::pod_from(
      testing::pod_json(testing::container_json("main", R"("aliyun.com/gpu-mem":"2")"),
                        R"("ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_POD":"15","ALIYUN_COM_GPU_MEM_DEV":"15")", R"("nodeName":"n1",)"),
      gpushare));
  ASSERT_EQ(g.reports.size(), 1u);
  EXPECT_EQ(g.reports[0].reason, "FracpackRecordRejected");
  EXPECT_LE(g.ledger().node("n1")->use()[1].memory_mib, 2048) << "not the 15 GiB it wrote";
}

}  // namespace
}  // namespace fracpack::k8s::ledger_builder_test
