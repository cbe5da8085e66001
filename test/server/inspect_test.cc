// fracpack inspect, run as a process: the table and JSON from a snapshot
// and from a running server agree, follow binds, and every bad input is a
// clear error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <regex>

#include "server/cmd/inspect.h"
#include "test/support/server_fixture.h"
#include "test/support/testlib.h"

namespace fracpack::testing::inspect_test {
namespace {

const std::string kExample = std::string(FRACPACK_SOURCE_DIR) + "/config/examples/cluster-snapshot.json";

// A daemon serving the example cluster (as `fracpack serve --snapshot`).
struct ExampleServer {
  ExampleServer() {
    config::Config c = test_config();
    c.cluster.snapshot = kExample;
    server::DaemonOptions o;
    o.config = c;
    daemon = std::make_unique<server::Daemon>(o);
    if (auto s = daemon->start(); !s.ok()) throw std::runtime_error(s.message());
    driver = driver_for(url());
  }
  ~ExampleServer() { daemon->drain(std::chrono::milliseconds(500)); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(daemon->port()); }
  std::unique_ptr<server::Daemon> daemon;
  std::unique_ptr<SchedulerDriver> driver;
};

// The table's row for a card: NODE (or blank) CARD MODEL USED/TOTAL ...
bool has_row(const std::string& table, const std::string& pattern) {
  return std::regex_search(table, std::regex("(^|\n)" + pattern + "(\n|$)"));
}

TEST(Inspect, SnapshotTableShowsEveryCardItsPodsAndTheClusterTotals) {
  auto r = run_fracpack({"inspect", "--snapshot", kExample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& t = r.out;
  EXPECT_TRUE(has_row(t, "NODE +CARD +MODEL +ISOLATION +MEMORY MiB \\(USED/TOTAL\\) +MEMORY +COMPUTE +SHARERS +STATE +PODS")) << t;
  // The example's running pods: half an A100, 2 whole A100s, 8 GiB + 10 % of an L4.
  EXPECT_TRUE(has_row(t, "gpu-a100-0 +0 +A100-SXM4-80GB +none +40960/81920 +50.0% +50.0% +1 +ok +inference/llm-serve-0")) << t;
  EXPECT_TRUE(has_row(t, " +4 +A100-SXM4-80GB +none +81920/81920 +100.0% +100.0% +1 +ok +research/train-ddp-0")) << t;
  EXPECT_TRUE(has_row(t, "gpu-l4-0 +0 +NVIDIA-L4 +none +8192/23034 +35.6% +10.0% +1 +ok +notebooks/notebook-alice")) << t;
  EXPECT_TRUE(has_row(t, " +5 +A100-SXM4-80GB +none +0/81920 +0.0% +0.0% +0 +unhealthy +-")) << t;
  EXPECT_TRUE(has_row(t, " +7 +A100-SXM4-80GB +none +0/81920 +0.0% +0.0% +0 +cordoned +-")) << t;
  EXPECT_TRUE(has_row(t, "cpu-0 +- +\\(no GPUs\\)")) << t;
  // The totals' figures are checked against the ledger in the server test below.
  EXPECT_TRUE(std::regex_search(t, std::regex("\ncluster: 5 nodes, 22 GPUs, [0-9.]+ GPUs allocated \\([0-9.]+%\\), fragmentation [0-9.]+%, 4 pods \\(0 assumed\\)\n$")))
      << t;
  // One node only.
  auto one = run_fracpack({"inspect", "--snapshot", kExample, "gpu-l4-0"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.find("gpu-a100-0"), std::string::npos);
  EXPECT_NE(one.out.find("notebooks/notebook-alice"), std::string::npos);
  EXPECT_NE(one.out.find("cluster: 5 nodes"), std::string::npos);
}

// A card's split count (HAMi's register "count") beside its sharers.
TEST(Inspect, ACardsSplitCountIsShownBesideItsSharers) {
  const nlohmann::json devices = nlohmann::json::array(
      {{{"id", "GPU-a"}, {"index", 0}, {"count", 10}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-T4"}, {"health", true}}});
  const nlohmann::json snapshot = {
      {"apiVersion", "v1"},
      {"kind", "List"},
      {"items",
       {{{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata", {{"name", "t4-0"}, {"annotations", {{"hami.io/node-nvidia-register", devices.dump()}}}}},
         {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "10"}}}}}},
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata",
          {{"name", "infer"}, {"namespace", "ml"}, {"uid", "u1"}, {"annotations", {{"hami.io/vgpu-devices-allocated", "GPU-a,NVIDIA,4096,30:;"}}}}},
         {"spec",
          {{"nodeName", "t4-0"},
           {"containers", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "30"}}}}}}}}}},
         {"status", {{"phase", "Running"}}}}}}};
  const std::string path = ::testing::TempDir() + "/hami-snapshot.json";
  std::ofstream(path) << snapshot.dump();
  auto r = run_fracpack({"inspect", "--snapshot", path, "--profile", "hami"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_row(r.out, "t4-0 +0 +NVIDIA-T4 +hami-core +4096/16384 +25.0% +30.0% +1/10 +ok +ml/infer")) << r.out;
}

TEST(Inspect, ServerAndSnapshotAgreeAndTheServerFollowsBinds) {
  ExampleServer server;
  for (const std::string format : {"table", "json"}) {
    auto from_server = run_fracpack({"inspect", "--server", server.url(), "-o", format});
    auto from_snapshot = run_fracpack({"inspect", "--snapshot", kExample, "-o", format});
    ASSERT_EQ(from_server.exit_code, 0) << from_server.err;
    ASSERT_EQ(from_snapshot.exit_code, 0) << from_snapshot.err;
    EXPECT_EQ(from_server.out, from_snapshot.out) << format;
  }
  auto before = nlohmann::json::parse(run_fracpack({"inspect", "--server", server.url(), "-o", "json"}).out);
  // The JSON is the ledger report; the table's totals come from it.
  const double allocated = before["totals"]["gpuMilliUsed"].get<double>();
  ASSERT_TRUE(server.driver->introduce_and_bind(snapshot_pod(kExample, "inference", "llm-serve-1"), "gpu-a100-1").ok());
  auto after_text = run_fracpack({"inspect", "--server", server.url(), "gpu-a100-1", "-o", "json"});
  ASSERT_EQ(after_text.exit_code, 0) << after_text.err;
  auto after = nlohmann::json::parse(after_text.out);
  ASSERT_EQ(after["nodes"].size(), 1u);
  EXPECT_EQ(after["totals"]["gpuMilliUsed"].get<double>(), allocated + 500);
  bool shown = false;
  for (const auto& card : after["nodes"][0]["cards"]) {
    for (const auto& pod : card["pods"]) shown |= pod == "inference/llm-serve-1";
  }
  EXPECT_TRUE(shown) << after_text.out;
  auto table = run_fracpack({"inspect", "--server", server.url(), "gpu-a100-1"});
  EXPECT_TRUE(has_row(table.out, "gpu-a100-1 +0 +\\S+ +none +40960/[0-9]+ +[0-9.]+% +50.0% +1 +ok +inference/llm-serve-1")) << table.out;
}

// The namespace GPU quota, seen three ways that agree: `inspect quota` from
// a snapshot and from the server, /debug/quota, and the fracpack_quota_*
// metrics; a bind moves the used figure.
TEST(Inspect, QuotaShowsEveryLimitWithItsUseFromASnapshotAndFromTheServer) {
  std::vector<std::string> objects = small_cluster();
  objects.push_back(resource_quota("team-a", "gpu", {{"limits.fracpack.io/gpu", "4"}, {"limits.fracpack.io/gpu-cores", "150"}}));
  objects.push_back(resource_quota("team-c", "broken", {{"limits.fracpack.io/gpu-cores", "oops"}}));
  objects.push_back(in_namespace(gpu_pod("p", "u-p", 30), "team-a"));
  const std::string path = ::testing::TempDir() + "/quota-snapshot.json";
  {
    std::string list = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
    for (size_t i = 0; i < objects.size(); ++i) list += (i ? "," : "") + objects[i];
    std::ofstream(path) << list << "]}";
  }
  auto table = run_fracpack({"inspect", "--snapshot", path, "quota"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(has_row(table.out, "NAMESPACE +RESOURCEQUOTA +KEY +USED +HARD")) << table.out;
  EXPECT_TRUE(has_row(table.out, "team-a +gpu +limits.fracpack.io/gpu +0 +4")) << table.out;
  EXPECT_TRUE(has_row(table.out, "team-a +gpu +limits.fracpack.io/gpu-cores +0 +150")) << table.out;
  EXPECT_TRUE(has_row(table.out, "team-c +broken +limits.fracpack.io/gpu-cores +0 +cannot be read: .*")) << table.out;
  EXPECT_EQ(run_fracpack({"inspect", "--snapshot", path, "quota", "team-b"}).out, "no GPU quota in namespace team-b\n");

  Standalone s(objects);
  ASSERT_TRUE(s.driver().introduce_and_bind(objects.back(), "n1").ok());
  auto json_out = run_fracpack({"inspect", "--server", s.url(), "quota", "team-a", "-o", "json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  auto rows = nlohmann::json::parse(json_out.out)["quotas"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["used"], 1);
  EXPECT_EQ(rows[0]["hard"], 4);
  EXPECT_EQ(rows[1]["used"], 30);
  auto debug = nlohmann::json::parse(http_get(s.url(), "/debug/quota").body);
  ASSERT_EQ(debug["quotas"].size(), 3u);
  EXPECT_EQ(debug["quotas"][0], rows[0]);
  const std::string metrics = http_get(s.url(), "/metrics").body;
  EXPECT_NE(metrics.find("fracpack_quota_used{namespace=\"team-a\",resourcequota=\"gpu\",key=\"limits.fracpack.io/gpu\"} 1"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fracpack_quota_hard{namespace=\"team-a\",resourcequota=\"gpu\",key=\"limits.fracpack.io/gpu\"} 4"),
            std::string::npos);
  EXPECT_NE(metrics.find("fracpack_quota_malformed{namespace=\"team-c\",resourcequota=\"broken\",key=\"limits.fracpack.io/gpu-cores\"} 1"),
            std::string::npos);
}

TEST(Inspect, BadInputIsAClearError) {
  struct Case {
    std::vector<std::string> argv;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"inspect", "--snapshot", kExample, "no-such-node"}, 1, "node \"no-such-node\" is not in the ledger (5 nodes)"},
      {{"inspect", "--snapshot", kExample, "--server", "http://127.0.0.1:1"}, 2, "--server and --snapshot exclude each other"},
      {{"inspect", "--snapshot", kExample, "-o", "yaml"}, 2, "--output: expected table or json, got \"yaml\""},
      {{"inspect", "--snapshot", kExample, "a", "b"}, 2, "at most one node name"},
      {{"inspect", "--server", "http://127.0.0.1:1"}, 1, "cannot read http://127.0.0.1:1/debug/ledger"},
      {{"inspect", "--server", "ftp://x"}, 1, "--server:"},
      {{"inspect", "--server", "http://127.0.0.1:8888/scheduler"}, 1, "give the scheme, host and port only"},
      {{"inspect", "--snapshot", "/nonexistent.json"}, 1, "/nonexistent.json"},
      {{"inspect", "--config", "x.yaml"}, 2, "--config goes with --snapshot"},
      {{"inspect", "--snapshot", kExample, "--timeout", "soon"}, 0, ""},  // --timeout only matters for a server
      {{"inspect", "--server", "http://127.0.0.1:1", "--timeout", "soon"}, 1, "--timeout: expected a positive duration"},
  };
  for (const auto& c : cases) {
    auto r = run_fracpack(c.argv);
    std::string joined;
    for (const auto& a : c.argv) joined += a + " ";
    EXPECT_EQ(r.exit_code, c.exit_code) << joined << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << joined << ": " << r.err;
  }
}

TEST(Inspect, AReportThatIsNotALedgerIsNamed) {
  using cli::InspectFormat;
  using cli::render_inspect;
  auto not_json = render_inspect("<html>", std::nullopt, InspectFormat::kTable);
  ASSERT_FALSE(not_json);
  EXPECT_NE(not_json.message().find("not JSON"), std::string::npos) << not_json.message();
  auto other = render_inspect("{\"status\":\"ok\"}", std::nullopt, InspectFormat::kTable);
  ASSERT_FALSE(other);
  EXPECT_NE(other.message().find("is this a fracpack /debug/ledger?"), std::string::npos) << other.message();
  auto no_cards = render_inspect("{\"nodes\":[{\"name\":\"n1\",\"present\":true}],\"totals\":{}}", std::nullopt, InspectFormat::kTable);
  ASSERT_FALSE(no_cards);
  EXPECT_NE(no_cards.message().find("n1: the ledger report has no \"cards\""), std::string::npos) << no_cards.message();
  auto bad_type = render_inspect("{\"nodes\":[{\"name\":\"n1\",\"present\":true,\"cards\":[{\"index\":\"zero\"}]}],\"totals\":{}}",
                                 std::nullopt, InspectFormat::kTable);
  ASSERT_FALSE(bad_type);
  EXPECT_NE(bad_type.message().find("n1 card"), std::string::npos) << bad_type.message();
  // A trailing slash on --server is fine.
  ExampleServer server;
  auto r = run_fracpack({"inspect", "--server", server.url() + "/"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace fracpack::testing::inspect_test
