// The scrape-time metrics (server/cluster_metrics.h): the extender port's
// counters, and the ledger per card and in total as /metrics shows them
// (through a daemon serving a snapshot).
#include "server/cluster_metrics.h"

#include <gtest/gtest.h>

#include "test/support/server_fixture.h"

namespace fracpack::testing::cluster_metrics_test {
namespace {

using server::SampledFamily;

const SampledFamily* family(const std::vector<SampledFamily>& all, const std::string& name) {
  for (const auto& f : all) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(ClusterMetrics, TheExtenderPortsCounters) {
  server::HttpCounters h;
  h.open_connections = 3;
  h.evicted = 4;
  h.refused = 5;
  h.body_bytes = 6000;
  h.busy = 7;
  h.bad_requests = 8;
  h.timeouts = 9;
  std::vector<SampledFamily> out;
  server::collect_http_metrics(h, 256, out);
  const std::vector<std::tuple<std::string, SampledFamily::Type, double>> want = {
      {"fracpack_http_connections_open", SampledFamily::Type::kGauge, 3},
      {"fracpack_http_connections_max", SampledFamily::Type::kGauge, 256},
      {"fracpack_http_connections_evicted_total", SampledFamily::Type::kCounter, 4},
      {"fracpack_http_connections_refused_total", SampledFamily::Type::kCounter, 5},
      {"fracpack_http_request_body_bytes_in_flight", SampledFamily::Type::kGauge, 6000},
      {"fracpack_http_requests_busy_total", SampledFamily::Type::kCounter, 7},
      {"fracpack_http_bad_requests_total", SampledFamily::Type::kCounter, 8},
      {"fracpack_http_timeouts_total", SampledFamily::Type::kCounter, 9}};
  EXPECT_EQ(out.size(), want.size());
  for (const auto& [name, type, value] : want) {
    const SampledFamily* f = family(out, name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, type) << name;
    ASSERT_EQ(f->samples.size(), 1u) << name;
    EXPECT_TRUE(f->samples[0].labels.empty()) << name;
    EXPECT_EQ(f->samples[0].value, value) << name;
    EXPECT_FALSE(f->help.empty()) << name;
  }
}

TEST(ClusterMetrics, TheLedgerPerCardAndInTotal) {
  // n1: two 16 GiB cards, a pod holding 50 % and 4 GiB of card 0 (placed by a bind).
  Standalone s({node_object("n1", 2), gpu_pod("p", "u-p", 50, 4096)});
  ASSERT_TRUE(s.driver().filter(0, gpu_pod("p", "u-p", 50, 4096), {{"n1", ""}}));  // bind places only judged pods
  ASSERT_TRUE(s.driver().bind("default", "p", "u-p", "n1").ok());
  const auto m = http_get(s.url(), "/metrics");
  ASSERT_EQ(m.status, 200);
  // Which card the bind took is the policy's choice: find it by its sharers.
  const bool on_zero = m.body.find("fracpack_card_sharers{node=\"n1\",card=\"0\",model=\"Tesla-T4\"} 1") != std::string::npos;
  const std::string used = on_zero ? "0" : "1", idle = on_zero ? "1" : "0";
  const std::string card = "{node=\"n1\",card=\"" + used + "\",model=\"Tesla-T4\"}";
  const std::string other = "{node=\"n1\",card=\"" + idle + "\",model=\"Tesla-T4\"}";
  for (const std::string& want : {"fracpack_card_sharers" + card + " 1", "fracpack_card_sharers" + other + " 0",
                                  "fracpack_card_compute_allocated_ratio" + card + " 0.5",
                                  "fracpack_card_compute_allocated_ratio" + other + " 0",
                                  "fracpack_card_memory_allocated_bytes" + card + " 4294967296",
                                  "fracpack_card_memory_capacity_bytes" + card + " 17179869184",
                                  std::string("fracpack_cluster_gpus 2"), std::string("fracpack_cluster_gpu_allocated_ratio 0.25"),
                                  std::string("fracpack_pods{phase=\"confirmed\"} 1"), std::string("fracpack_pods{phase=\"assumed\"} 0"),
                                  std::string("fracpack_ready 1"), std::string("fracpack_evaluation_cache_total{result=\"miss\"}"),
                                  std::string("fracpack_sync_events_total{kind=\"pod\"}"),
                                  std::string("fracpack_sync_problems_total{kind=\"malformed_pod\"} 0")}) {
    EXPECT_NE(m.body.find(want), std::string::npos) << want;
  }
  // Standalone: no informers.
  EXPECT_EQ(m.body.find("fracpack_informer_synced"), std::string::npos);
}

}  // namespace
}  // namespace fracpack::testing::cluster_metrics_test
