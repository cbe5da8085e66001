// fracpack's Prometheus metrics (server/metrics.h): the families counted as
// things happen, the scrape-time families of collectors, the text format,
// and the label a fit() rejection reason is counted under.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include "scheduling/fit.h"
#include "scheduling/ledger.h"
#include "test/support/testlib.h"

namespace fracpack::server::metrics_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

bool has(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }

TEST(Metrics, TheVerbsAndFilterOutcomesAreThereBeforeAnyRequest) {
  Metrics m;
  const std::string text = m.serialize();
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    EXPECT_TRUE(has(text, std::string("fracpack_http_request_duration_seconds_count{verb=\"") + verb + "\"} 0")) << verb;
  }
  for (const char* outcome : {"passed", "failed", "unresolvable"}) {
    EXPECT_TRUE(has(text, std::string("fracpack_filter_nodes_total{outcome=\"") + outcome + "\"} 0")) << outcome;
  }
  EXPECT_TRUE(has(text, "fracpack_bind_fence_duration_seconds_count{result=\"ok\"} 0"));
  EXPECT_TRUE(has(text, "fracpack_bind_fence_duration_seconds_count{result=\"failed\"} 0"));
  EXPECT_TRUE(has(text, "# TYPE fracpack_http_request_duration_seconds histogram"));
}

TEST(Metrics, RequestsAreTimedAndCountedByVerbAndCode) {
  Metrics m;
  m.observe_request("filter", 200, 0.0003);
  m.observe_request("filter", 200, 0.002);
  m.observe_request("filter", 400, 0.00001);
  m.observe_request("other", 404, 0.00001);
  const std::string text = m.serialize();
  EXPECT_TRUE(has(text, "fracpack_http_requests_total{code=\"200\",verb=\"filter\"} 2")) << text;
  EXPECT_TRUE(has(text, "fracpack_http_requests_total{code=\"400\",verb=\"filter\"} 1"));
  EXPECT_TRUE(has(text, "fracpack_http_requests_total{code=\"404\",verb=\"other\"} 1"));
  EXPECT_TRUE(has(text, "fracpack_http_request_duration_seconds_count{verb=\"filter\"} 3"));
  // Buckets are cumulative: 10 us and 300 us are under 0.0005 s, 2 ms is not.
  EXPECT_TRUE(has(text, "fracpack_http_request_duration_seconds_bucket{verb=\"filter\",le=\"5e-05\"} 1")) << text;
  EXPECT_TRUE(has(text, "fracpack_http_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0005\"} 2"));
  EXPECT_TRUE(has(text, "fracpack_http_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0025\"} 3"));
  EXPECT_TRUE(has(text, "fracpack_http_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 3"));
}

TEST(Metrics, EventsAreCountedUnderTheirLabels) {
  Metrics m;
  m.filter_outcome(3, 2, 1);
  m.filter_outcome(1, 0, 0);
  m.rejected("cpu", 2);
  m.rejected("gpu_model", 1);
  m.placed("fracpack");
  m.bind_failed("no_longer_fits");
  m.bind_failed("no_longer_fits");
  m.preempted("victims");
  m.admission("denied");
  m.bind_fence(0.01, true);
  m.bind_fence(0.2, false);
  m.bind_waited(0.001);
  const std::string text = m.serialize();
  for (const char* want : {"fracpack_filter_nodes_total{outcome=\"passed\"} 4",
                           "fracpack_filter_nodes_total{outcome=\"failed\"} 2",
                           "fracpack_filter_nodes_total{outcome=\"unresolvable\"} 1",
                           "fracpack_filter_rejections_total{reason=\"cpu\"} 2",
                           "fracpack_filter_rejections_total{reason=\"gpu_model\"} 1",
                           "fracpack_placements_total{policy=\"fracpack\"} 1",
                           "fracpack_bind_failures_total{reason=\"no_longer_fits\"} 2",
                           "fracpack_preemptions_total{outcome=\"victims\"} 1",
                           "fracpack_admission_reviews_total{decision=\"denied\"} 1",
                           "fracpack_bind_fence_duration_seconds_count{result=\"ok\"} 1",
                           "fracpack_bind_fence_duration_seconds_count{result=\"failed\"} 1",
                           "fracpack_bind_queue_wait_seconds_count 1"}) {
    EXPECT_TRUE(has(text, want)) << want << "\n" << text;
  }
}

TEST(Metrics, CollectorsAddTheirFamiliesAtEveryScrape) {
  Metrics m;
  int scrapes = 0;
  m.add_collector([&](std::vector<SampledFamily>& out) {
    ++scrapes;
    out.push_back(SampledFamily::single("fracpack_ready", "Whether the extender serves.", SampledFamily::Type::kGauge, 1));
    SampledFamily cards{"fracpack_card_sharers", "Pods sharing a card.", SampledFamily::Type::kGauge, {}};
    cards.samples.push_back({{{"node", "n1"}, {"card", "0"}}, 2});
    cards.samples.push_back({{{"node", "n1"}, {"card", "1"}}, static_cast<double>(scrapes)});
    out.push_back(std::move(cards));
    out.push_back(SampledFamily::single("fracpack_things_total", "Things.", SampledFamily::Type::kCounter, 7));
  });
  std::string text = m.serialize();
  EXPECT_TRUE(has(text, "# HELP fracpack_ready Whether the extender serves.")) << text;
  EXPECT_TRUE(has(text, "# TYPE fracpack_ready gauge"));
  EXPECT_TRUE(has(text, "\nfracpack_ready 1\n"));
  EXPECT_TRUE(has(text, "fracpack_card_sharers{node=\"n1\",card=\"0\"} 2"));
  EXPECT_TRUE(has(text, "fracpack_card_sharers{node=\"n1\",card=\"1\"} 1"));
  EXPECT_TRUE(has(text, "# TYPE fracpack_things_total counter"));
  EXPECT_TRUE(has(text, "\nfracpack_things_total 7\n"));
  text = m.serialize();
  EXPECT_EQ(scrapes, 2);
  EXPECT_TRUE(has(text, "fracpack_card_sharers{node=\"n1\",card=\"1\"} 2")) << "read at scrape time";
}

TEST(Metrics, RejectionClassNamesTheReasonsFitGives) {
  scheduling::Ledger ledger;
  ledger.upsert_node(node("small", 2, 16384, "T4", 4000, int64_t{8} << 30));
  ledger.upsert_node(node("empty", 0));
  const scheduling::NodeState& small = *ledger.node("small");
  const scheduling::BestCardRanker ranker;
  auto reason_for = [&](const scheduling::PodRequest& p, const scheduling::NodeState& n) {
    const scheduling::FitResult r = scheduling::explain_fit(p, n, scheduling::FitOptions{}, ranker);
    EXPECT_FALSE(r.fits);
    return r.reason;
  };
  std::string r = reason_for(pod("cpu", 1, 100, 0, 8000), small);
  EXPECT_EQ(rejection_class(r), "cpu") << r;
  scheduling::PodRequest memory = pod("mem", 1, 100);
  memory.memory_bytes = int64_t{64} << 30;
  r = reason_for(memory, small);
  EXPECT_EQ(rejection_class(r), "memory") << r;
  r = reason_for(pod("cards", 3, 100), small);
  EXPECT_EQ(rejection_class(r), "gpu_count") << r;
  scheduling::PodRequest a100 = pod("model", 1, 100);
  a100.allowed_models = {"A100"};
  r = reason_for(a100, small);
  EXPECT_EQ(rejection_class(r), "gpu_model") << r;
  r = reason_for(pod("big", 1, 500, 20000), small);  // no card that large: the count of cards that could
  EXPECT_EQ(rejection_class(r), "gpu_count") << r;
  // Cards taken for now: capacity.
  scheduling::Allocation busy;
  busy.node = "small";
  scheduling::ContainerAllocation c;
  c.name = "main";
  c.cards = {scheduling::CardShare{0, "", 0, 900}, scheduling::CardShare{1, "", 0, 900}};
  busy.containers.push_back(c);
  ASSERT_GE(ledger.confirm(scheduling::PodFacts{"u-busy", "default/busy", 0, 0}, busy), 0);
  r = reason_for(pod("later", 1, 500), *ledger.node("small"));
  EXPECT_EQ(rejection_class(r), "gpu_capacity") << r;
  r = reason_for(pod("none", 1, 100), *ledger.node("empty"));
  EXPECT_EQ(rejection_class(r), "no_gpus") << r;
}

TEST(Metrics, RejectionClassOfOtherReasons) {
  EXPECT_EQ(rejection_class("node is not known to fracpack"), "unknown_node");
  EXPECT_EQ(rejection_class("node unknown"), "unknown_node");
  EXPECT_EQ(rejection_class("insufficient GPU: the pod's GPU containers do not fit together on the free GPUs"),
            "gpu_capacity");
  EXPECT_EQ(rejection_class(""), "other");
  EXPECT_EQ(rejection_class("something else entirely"), "other");
}

}  // namespace
}  // namespace fracpack::server::metrics_test
