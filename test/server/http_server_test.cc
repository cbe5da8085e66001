// The extender's server end to end: bad input the application refuses,
// routes, readiness, metrics and the debug endpoints; the process answers
// every case and keeps serving. (The transport's own refusals are in
// http_session_test.cc, its budgets in connection_budget_test.cc, TLS in
// reloading_tls_context_test.cc.)
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/snapshot.h"
#include "test/support/fake_apiserver.h"
#include "test/support/limited_server.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::http_server_test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The fixture: test/support/limited_server.h.
using BadInput = LimitedServerTest;

TEST_F(BadInput, MalformedJsonIs400WithAJsonError) {
  expect_json_error(send(post_request("/filter", "{\"Pod\":{\"metadata\":")), 400);
  expect_json_error(send(post_request("/prioritize", "not json")), 400);
  expect_json_error(send(post_request("/bind", "{\"PodName\":")), 400);
  expect_json_error(send(post_request("/preempt", "")), 400);
  expect_json_error(send(post_request("/filter", "{\"Pod\":{}} trailing")), 400);
}

TEST_F(BadInput, WrongTypesAre400NamingTheField) {
  auto r = send(post_request("/filter", "{\"Pod\":{},\"NodeNames\":5}"));
  expect_json_error(r, 400);
  EXPECT_NE(body_of(r.response).find("NodeNames"), std::string::npos) << r.response;
  r = send(post_request("/filter", "{\"Pod\":\"p\",\"NodeNames\":[]}"));
  expect_json_error(r, 400);
  EXPECT_NE(body_of(r.response).find("Pod"), std::string::npos) << r.response;
  expect_json_error(send(post_request("/filter", "{\"Pod\":{},\"NodeNames\":[1,2]}")), 400);
  r = send(post_request("/bind", "{\"PodName\":7,\"PodNamespace\":\"default\",\"PodUID\":\"u\",\"Node\":\"n1\"}"));
  expect_json_error(r, 400);
  EXPECT_NE(body_of(r.response).find("PodName"), std::string::npos) << r.response;
  expect_json_error(send(post_request("/preempt", "{\"Pod\":{},\"NodeNameToMetaVictims\":{\"n1\":{\"Pods\":[{\"UID\":3}]}}}")), 400);
  expect_json_error(send(post_request("/filter", "[]")), 400);
  // A pod whose quantities are invalid: the filter answers with Error (the
  // scheduler reports it), not a crash.
  json bad = json::parse(gpu_pod("q", "u-q", 50));
  bad["spec"]["containers"][0]["resources"]["limits"]["fracpack.io/gpu-cores"] = "lots";
  r = send(post_request("/filter", "{\"Pod\":" + bad.dump() + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]}"));
  ASSERT_EQ(status_of(r.response), 200) << r.response;
  EXPECT_NE(json::parse(body_of(r.response))["Error"].get<std::string>().find("gpu-cores"), std::string::npos) << r.response;
}

TEST_F(BadInput, DeepNestingAndInvalidUtf8Are400) {
  std::string deep = "{\"Pod\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_json_error(send(post_request("/filter", deep.substr(0, 60000))), 400);
  const std::string bad_utf8 = "{\"Pod\":{\"metadata\":{\"name\":\"\xff\xfe\"}},\"Nodes\":null,\"NodeNames\":[\"n1\"]}";
  expect_json_error(send(post_request("/filter", bad_utf8)), 400);
}

TEST_F(BadInput, UnknownRoutesAre404AndWrongMethods405) {
  expect_json_error(send("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
  expect_json_error(send(post_request("/scheduler/filter", "{}")), 404);
  expect_json_error(send("GET /filter HTTP/1.1\r\nHost: x\r\n\r\n"), 405);
  expect_json_error(send(post_request("/healthz", "")), 405);
}

TEST_F(BadInput, ErrorBodiesAreValidUtf8JsonWhateverThePathHolds) {
  const RawExchange r = send("GET /no\xff\xfewhere HTTP/1.1\r\nHost: x\r\n\r\n");
  expect_json_error(r, 404);  // (nlohmann refuses invalid UTF-8: the parse in expect_json_error checks it)
  EXPECT_NE(body_of(r.response).find("\\ufffd"), std::string::npos) << r.response;
}

TEST_F(BadInput, RepeatedNodesAreAnsweredOnceAndReasonsStayShort) {
  // The amplification attack: one node named thousands of times, a pod
  // whose model list is long. Each distinct node is answered once, with a
  // reason of bounded length.
  json pod = json::parse(gpu_pod("amp", "u-amp", 50));
  std::string models;
  while (models.size() < 8000) models += (models.empty() ? "" : "|") + std::string("NVIDIA-H999-") + std::to_string(models.size());
  pod["metadata"]["annotations"]["fracpack.io/gpu-model"] = models;
  json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", json::array()}};
  for (int i = 0; i < 3000; ++i) args["NodeNames"].push_back(i % 2 ? "n1" : "ghost");
  const std::string request = args.dump();
  ASSERT_LT(request.size(), 64u * 1024);
  auto r = send(post_request("/filter", request));
  ASSERT_EQ(status_of(r.response), 200) << r.response.substr(0, 300);
  EXPECT_LT(body_of(r.response).size(), 2048u) << "two distinct nodes, two bounded reasons";
  json reply = json::parse(body_of(r.response));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"].size() + reply["FailedNodes"].size(), 2u) << reply.dump().substr(0, 500);
  // prioritize: one score per distinct node.
  r = send(post_request("/prioritize", request));
  ASSERT_EQ(status_of(r.response), 200) << r.response.substr(0, 300);
  EXPECT_EQ(json::parse(body_of(r.response)).size(), 2u) << body_of(r.response).substr(0, 300);
  // A pod fracpack does not place passes every node, once each.
  json plain = {{"Pod", json::parse(R"({"metadata":{"name":"cpu","namespace":"default","uid":"u-cpu"},"spec":{"containers":[{"name":"c"}]}})")},
                {"Nodes", nullptr},
                {"NodeNames", {"n1", "n1", "n2", "n1"}}};
  r = send(post_request("/filter", plain.dump()));
  ASSERT_EQ(status_of(r.response), 200) << r.response;
  EXPECT_EQ(json::parse(body_of(r.response))["NodeNames"], json({"n1", "n2"}));
  // Full Node objects: the same.
  json full = {{"Pod", json::parse(gpu_pod("p", "u-p", 50))},
               {"Nodes", {{"items", {json::parse(node_object("n1", 2)), json::parse(node_object("n1", 2))}}}},
               {"NodeNames", nullptr}};
  r = send(post_request("/filter", full.dump()));
  ASSERT_EQ(status_of(r.response), 200) << r.response;
  EXPECT_EQ(json::parse(body_of(r.response))["Nodes"]["items"].size(), 1u) << body_of(r.response).substr(0, 600);
}

TEST_F(BadInput, InvalidJsonAnywhereAndPodsPastKubernetesLimitsAre400) {
  const std::string args = "{\"Pod\":" + gpu_pod("p", "u-p", 50) + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]";
  expect_json_error(send(post_request("/filter", args + ",\"Junk\":NaN}")), 400);
  expect_json_error(send(post_request("/filter", args + ",\"Junk\":[tru]}")), 400);
  json pod = json::parse(gpu_pod("p", "u-p", 50));
  pod["spec"]["containers"][0]["name"] = std::string(40000, 'c');
  const auto r = send(post_request("/filter", json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump()));
  expect_json_error(r, 400);
  EXPECT_NE(body_of(r.response).find("Pod.spec.containers[0].name: 40000 bytes"), std::string::npos) << r.response.substr(0, 300);
  EXPECT_LT(body_of(r.response).size(), 300u) << "the error does not echo the name";
}

TEST(HttpServer, UrlPrefixIsHonoured) {
  config::Config c = test_config();
  c.url_prefix = "/scheduler";
  Standalone s({node_object("n1", 1), gpu_pod("p", "u-p", 50)}, c);
  ExtenderConfig e;
  e.url_prefix = s.url() + "/scheduler/";
  auto d = SchedulerDriver::create({e});
  ASSERT_TRUE(d);
  auto f = (*d)->filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes.size(), 1u);
  EXPECT_FALSE(s.driver().filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}})) << "/filter is not served";
}

TEST(Service, ReadyOnlyAfterTheInitialSync) {
  Connected c;
  c.api->create("nodes", node_object("n1", 1));
  c.api->faults().slow_ms = 1500;
  server::DaemonOptions o;
  o.config = c.config;
  o.client = client_for(*c.api);
  server::Daemon d(o);
  ASSERT_TRUE(d.start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(d.port());
  EXPECT_EQ(http_get(url, "/healthz").status, 200);
  auto ready = http_get(url, "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("starting"), std::string::npos) << ready.body;
  ExtenderConfig e;
  e.url_prefix = url + "/";
  auto driver = SchedulerDriver::create({e});
  ASSERT_TRUE(driver);
  auto r = (*driver)->post(0, "filter", "{\"Pod\":" + gpu_pod("p", "u-p", 50) + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << "no verdicts from an empty ledger";
  c.api->faults().slow_ms = 0;
  ASSERT_TRUE(d.wait_serving(20s));
  EXPECT_EQ(http_get(url, "/readyz").status, 200);
  d.drain(1s);
}

TEST(Service, MetricsVersionAndDebugEndpoints) {
  Standalone s({node_object("n1", 2), gpu_pod("p", "u-p", 50)});
  ASSERT_TRUE(s.driver().filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}, {"ghost", ""}}));
  ASSERT_TRUE(s.driver().bind("default", "p", "u-p", "n1").ok());
  auto m = http_get(s.url(), "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* want : {"fracpack_http_requests_total{code=\"200\",verb=\"filter\"} 1",
                           "fracpack_http_request_duration_seconds_bucket{verb=\"bind\"",
                           "fracpack_filter_nodes_total{outcome=\"passed\"} 1",
                           "fracpack_placements_total",
                           "fracpack_card_compute_allocated_ratio{node=\"n1\",card=\"0\",model=\"Tesla-T4\"} 0.5",
                           "fracpack_card_sharers{node=\"n1\",card=\"0\",model=\"Tesla-T4\"} 1",
                           "fracpack_cluster_gpu_allocated_ratio 0.25",
                           "fracpack_ready 1"}) {
    std::string cards;  // the per-card lines, for the failure message
    for (size_t p = m.body.find("\nfracpack_card"); p != std::string::npos; p = m.body.find("\nfracpack_card", p + 1)) {
      cards += m.body.substr(p + 1, m.body.find('\n', p + 1) - p);
    }
    EXPECT_NE(m.body.find(want), std::string::npos) << want << "\n" << cards;
  }
  auto v = http_get(s.url(), "/version");
  EXPECT_EQ(json::parse(v.body)["policy"], "fracpack");
  auto ledger = json::parse(http_get(s.url(), "/debug/ledger").body);
  ASSERT_EQ(ledger["nodes"].size(), 1u);
  EXPECT_EQ(ledger["nodes"][0]["cards"][0]["pods"].size(), 1u) << ledger.dump();
  // /debug/snapshot is a snapshot replay reads: the bound pod with its record.
  auto snap = http_get(s.url(), "/debug/snapshot");
  ASSERT_EQ(snap.status, 200);
  const k8s::FracpackContract contract;
  auto list = k8s::parse_snapshot(snap.body, contract);
  ASSERT_TRUE(list) << list.message();
  const k8s::SnapshotState read = k8s::read_snapshot(*list, contract);
  EXPECT_EQ(read.nodes.size(), 1u);
  ASSERT_EQ(read.bound.size(), 1u);
  EXPECT_EQ(read.bound[0].allocation.node, "n1");
  EXPECT_TRUE(read.problems.empty());
}

}  // namespace
}  // namespace fracpack::testing::http_server_test
