// The ledger as JSON (server/ledger_report.h), per node and card, with the
// cluster's totals: what /debug/ledger serves and `fracpack inspect` prints.
#include "server/ledger_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scheduling/workload.h"
#include "test/support/testlib.h"

namespace fracpack::server::ledger_report_test {
namespace {

using json = nlohmann::json;
using fracpack::testing::gpu_shape;
using fracpack::testing::node;
using scheduling::Allocation;
using scheduling::CardShare;
using scheduling::ContainerAllocation;
using scheduling::PodFacts;

Allocation on(const std::string& node_name, std::vector<CardShare> cards) {
  Allocation a;
  a.node = node_name;
  a.containers.push_back(ContainerAllocation{"main", false, std::move(cards)});
  return a;
}

TEST(LedgerReport, AnEmptyLedger) {
  scheduling::Ledger ledger;
  const json r = json::parse(ledger_report_json(ledger, nullptr));
  EXPECT_EQ(r["nodes"], json::array());
  EXPECT_EQ(r["totals"]["nodes"], 0);
  EXPECT_EQ(r["totals"]["gpus"], 0);
  EXPECT_EQ(r["totals"]["allocatedRatio"], 0);
  EXPECT_FALSE(r["totals"].contains("fragmentationRatio")) << "no workload, no figure";
}

TEST(LedgerReport, ANodeThatOffersNoCardSaysWhy) {
  scheduling::Ledger ledger;
  auto spec = node("n1", 2, 16384, "Tesla-T4", 8000, int64_t{32} << 30);
  spec.unavailable = "the node agent's device plugin is not registered with kubelet yet";
  ledger.upsert_node(spec);
  ledger.upsert_node(node("n2", 1, 16384, "Tesla-T4", 8000, int64_t{32} << 30));
  const json r = json::parse(ledger_report_json(ledger, nullptr));
  ASSERT_EQ(r["nodes"].size(), 2u);
  EXPECT_EQ(r["nodes"][0].value("unavailable", ""), spec.unavailable);
  EXPECT_FALSE(r["nodes"][1].contains("unavailable"));
}

TEST(LedgerReport, NodesCardsAndTheirPods) {
  scheduling::Ledger ledger;
  auto spec = node("n1", 2, 16384, "Tesla-T4", 8000, int64_t{32} << 30);
  spec.cards[1].cordoned = true;
  ledger.upsert_node(spec);
  ASSERT_GE(ledger.confirm(PodFacts{"u-a", "ml/a", 1500, int64_t{1} << 30}, on("n1", {CardShare{0, "GPU-n1-0", 4096, 300}})), 0);
  ASSERT_GE(ledger.confirm(PodFacts{"u-b", "ml/b", 0, 0}, on("n1", {CardShare{0, "GPU-n1-0", 1024, 200}})), 0);
  const json r = json::parse(ledger_report_json(ledger, nullptr));
  ASSERT_EQ(r["nodes"].size(), 1u);
  const json& n = r["nodes"][0];
  EXPECT_EQ(n["name"], "n1");
  EXPECT_EQ(n["present"], true);
  EXPECT_EQ(n["cpuMilli"], 8000);
  EXPECT_EQ(n["cpuRequestedMilli"], 1500);
  EXPECT_EQ(n["memoryBytes"], int64_t{32} << 30);
  EXPECT_EQ(n["memoryRequestedBytes"], int64_t{1} << 30);
  ASSERT_EQ(n["cards"].size(), 2u);
  const json& c0 = n["cards"][0];
  EXPECT_EQ(c0["index"], 0);
  EXPECT_EQ(c0["uuid"], "GPU-n1-0");
  EXPECT_EQ(c0["model"], "Tesla-T4");
  EXPECT_EQ(c0["memoryMiB"], 16384);
  EXPECT_EQ(c0["memoryUsedMiB"], 5120);
  EXPECT_EQ(c0["computeMilli"], 1000);
  EXPECT_EQ(c0["computeUsedMilli"], 500);
  EXPECT_EQ(c0["sharers"], 2);
  EXPECT_EQ(c0["healthy"], true);
  EXPECT_EQ(c0["cordoned"], false);
  EXPECT_EQ(c0["pods"], json({"ml/a", "ml/b"}));
  const json& c1 = n["cards"][1];
  EXPECT_EQ(c1["cordoned"], true);
  EXPECT_EQ(c1["sharers"], 0);
  EXPECT_EQ(c1["pods"], json::array());
  ASSERT_EQ(n["pods"].size(), 2u);
  for (const json& p : n["pods"]) {
    EXPECT_EQ(p["phase"], "confirmed");
    EXPECT_FALSE(p.contains("expiresInMs"));
  }
  const json& t = r["totals"];
  EXPECT_EQ(t["nodes"], 1);
  EXPECT_EQ(t["gpus"], 2);
  EXPECT_EQ(t["gpuMilliUsed"], 500);
  EXPECT_DOUBLE_EQ(t["allocatedRatio"].get<double>(), 0.25);
  EXPECT_EQ(t["pods"], 2);
  EXPECT_EQ(t["assumedPods"], 0);
}

TEST(LedgerReport, AssumedPodsSayHowLongTheirReservationHasLeft) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  const auto deadline = scheduling::Clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(ledger.assume(PodFacts{"u-a", "ml/a", 0, 0}, on("n1", {CardShare{0, "GPU-n1-0", 0, 400}}), deadline).ok());
  const json r = json::parse(ledger_report_json(ledger, nullptr));
  const json& p = r["nodes"][0]["pods"][0];
  EXPECT_EQ(p["pod"], "ml/a");
  EXPECT_EQ(p["uid"], "u-a");
  EXPECT_EQ(p["phase"], "assumed");
  ASSERT_TRUE(p.contains("expiresInMs"));
  EXPECT_GT(p["expiresInMs"].get<double>(), 25000);
  EXPECT_LE(p["expiresInMs"].get<double>(), 30000);
  EXPECT_EQ(r["totals"]["assumedPods"], 1);
}

TEST(LedgerReport, AGoneNodeIsListedButNotCountedInTheTotals) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  ledger.upsert_node(node("n2", 2));
  ASSERT_GE(ledger.confirm(PodFacts{"u-a", "ml/a", 0, 0}, on("n2", {CardShare{1, "GPU-n2-1", 0, 1000}})), 0);
  ledger.remove_node("n2");  // its pod stays until it is removed itself
  const json r = json::parse(ledger_report_json(ledger, nullptr));
  ASSERT_EQ(r["nodes"].size(), 2u);
  EXPECT_EQ(r["nodes"][1]["name"], "n2");
  EXPECT_EQ(r["nodes"][1]["present"], false);
  EXPECT_EQ(r["totals"]["gpus"], 1) << "only present nodes' cards";
  EXPECT_EQ(r["totals"]["gpuMilliUsed"], 0);
  EXPECT_EQ(r["totals"]["pods"], 1);
}

TEST(LedgerReport, AWorkloadAddsTheFragmentationRatio) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("n1", 2));
  ASSERT_GE(ledger.confirm(PodFacts{"u-a", "ml/a", 0, 0}, on("n1", {CardShare{0, "GPU-n1-0", 0, 700}})), 0);
  scheduling::ShapeCounts whole_cards;
  whole_cards.add(gpu_shape(1000, 1000, 1), 10);
  const json r = json::parse(ledger_report_json(ledger, &whole_cards));
  ASSERT_TRUE(r["totals"].contains("fragmentationRatio"));
  // Whole-card pods cannot use card 0's 300 free milli: 300 of 2000 fragmented.
  EXPECT_NEAR(r["totals"]["fragmentationRatio"].get<double>(), 0.15, 1e-9) << r["totals"].dump();
  scheduling::ShapeCounts small;
  small.add(gpu_shape(1000, 100, 1), 10);
  EXPECT_NEAR(json::parse(ledger_report_json(ledger, &small))["totals"]["fragmentationRatio"].get<double>(), 0, 1e-9)
      << "every free milli fits a 100-milli pod";
}

}  // namespace
}  // namespace fracpack::server::ledger_report_test
