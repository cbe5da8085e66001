// The one path from objects to the ledger (k8s/ledger_builder.h): records,
// partial records, inference and the fail-closed rules, the same for every
// contract and for the watch and snapshots alike.
#include "k8s/ledger_builder.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/gpushare.h"
#include "test/support/cluster_harness.h"

namespace fracpack::k8s {
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
  LedgerBuilder builder;
  explicit Built(const Contract& c = kContract)
      : builder(c, [this](std::string object, std::string message) { problems.push_back(object + ": " + message); }) {}
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
      r.allocation = scheduling::Allocation{p.node_name, {{"c", false, {scheduling::CardShare{c.index, c.uuid, 0, 1000}}}}};
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

}  // namespace
}  // namespace fracpack::k8s
