// The HTTP layer: limits, bad input, routes, TLS and its reload, readiness,
// metrics and the debug endpoints; the process answers every case and keeps
// serving.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/snapshot.h"
#include "test/support/fake_apiserver.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::http_server_test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string post_request(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct BadInput : ::testing::Test {
  static config::Config limited() {
    config::Config c = test_config();
    c.limits.max_request_bytes = 64 * 1024;
    return c;
  }
  BadInput() : s({node_object("n1", 2), gpu_pod("p", "u-p", 50)}, limited()) {}
  RawExchange send(const std::string& bytes) { return raw_exchange(s.daemon().port(), {bytes}); }
  void expect_json_error(const RawExchange& r, int status) {
    ASSERT_EQ(status_of(r.response), status) << r.response;
    json body = json::parse(body_of(r.response), nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.response;
    ASSERT_TRUE(body.contains("Error")) << r.response;
    EXPECT_FALSE(body["Error"].get<std::string>().empty());
  }
  void TearDown() override {
    // Whatever came before, the process still serves.
    EXPECT_EQ(http_get(s.url(), "/healthz").status, 200);
    auto f = s.driver().filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
    ASSERT_TRUE(f) << f.message();
    EXPECT_EQ(f->nodes.size(), 1u);
  }
  Standalone s;
};

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

TEST_F(BadInput, FramingThatRfc9112RefusesIs400AndCloses) {
  const uint16_t port = s.daemon().port();
  auto refused = [&](const std::string& bytes, const std::string& why) {
    const RawExchange r = raw_exchange(port, {bytes}, 0ms, 5s, true);
    expect_json_error(r, 400);
    EXPECT_NE(body_of(r.response).find(why), std::string::npos) << r.response;
    EXPECT_TRUE(r.closed_by_server) << bytes;  // one answer (its body parsed as JSON above): nothing more was read
  };
  refused("GET /healthz HTTP/1.1\r\n\r\n", "without a Host header");
  refused("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n", "folded header line");
  refused("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n\tb\r\n\r\n", "folded header line");
  {
    // The fold arriving in a later packet than the line it continues.
    const RawExchange r = raw_exchange(port, {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n", " b\r\n\r\n"}, 50ms, 5s, true);
    expect_json_error(r, 400);
    EXPECT_TRUE(r.closed_by_server);
  }
  refused("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n\r\nGET /version HTTP/1.1\r\nHost: x\r\n\r\n",
          "unsupported Transfer-Encoding");
  refused("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "Transfer-Encoding");
  refused("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
          "Transfer-Encoding");
  // HTTP/1.0 has no Host requirement; plain chunked is fine.
  const RawExchange old = raw_exchange(port, {"GET /healthz HTTP/1.0\r\n\r\n"}, 0ms, 5s, true);
  EXPECT_EQ(old.response.rfind("HTTP/1.0 200", 0), 0u) << old.response;
  const std::string body = "{\"Pod\":" + gpu_pod("p", "u-p", 50) + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]}";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const auto chunked = send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(chunked.response), 200) << chunked.response;
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

TEST_F(BadInput, BodyOverTheLimitIs413BeforeItIsRead) {
  const std::string big(100 * 1024, ' ');
  auto r = send(post_request("/filter", big));
  EXPECT_EQ(status_of(r.response), 413) << r.response.substr(0, 200);
  // Declared but not sent: refused from the header alone.
  r = send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 413) << r.response;
}

TEST_F(BadInput, HugeHeadersAre431AndGarbageIs400) {
  auto r = send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 431) << r.response.substr(0, 200);
  r = send("\x16\x03\x01 this is not http\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 400) << r.response;
  r = raw_exchange(s.daemon().port(), {"\x16\x03\x01 this is not http\r\n\r\n"}, 0ms, 5s, true);
  EXPECT_TRUE(r.closed_by_server) << "no keep-alive after garbage";
}

TEST_F(BadInput, SlowClientsAreDisconnectedAndDoNotBlockOthers) {
  // Slowloris: a header byte every 150 ms; the header deadline is 1 s.
  std::vector<std::string> pieces;
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  pieces.push_back(head);
  for (int i = 0; i < 40; ++i) pieces.push_back("a");
  std::vector<std::thread> slow;
  std::vector<RawExchange> results(4);
  for (size_t i = 0; i < results.size(); ++i) {
    slow.emplace_back([&, i] { results[i] = raw_exchange(s.daemon().port(), pieces, 150ms, 8s); });
  }
  std::this_thread::sleep_for(200ms);
  // Meanwhile other clients are served at once.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(http_get(s.url(), "/healthz").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  for (auto& t : slow) t.join();
  for (const auto& r : results) {
    EXPECT_TRUE(r.closed_by_server);
    EXPECT_LT(r.elapsed, 3s) << "closed near the 1 s header deadline";
    EXPECT_NE(status_of(r.response), 200);
  }
  // A body that trickles in: the body deadline.
  const std::string body = "{\"PodName\":\"p\",\"PodNamespace\":\"default\",\"PodUID\":\"u-p\",\"Node\":\"n1\"}";
  std::vector<std::string> parts = {"POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n"};
  for (char ch : body) parts.push_back(std::string(1, ch));
  auto r = raw_exchange(s.daemon().port(), parts, 100ms, 8s);
  EXPECT_TRUE(r.closed_by_server);
  EXPECT_LT(r.elapsed, 3s);
  // Five deadlines expired (the counter is updated on the server's side of the close).
  EXPECT_TRUE(Cluster::wait_for([&] { return s.daemon().http_counters().timeouts >= 5; }, 3s))
      << s.daemon().http_counters().timeouts;
}

// A connection to `port` that has sent `bytes` (and read the answer, if
// `answered`), then is held open, doing nothing.
struct HeldConnection {
  HeldConnection(uint16_t port, const std::string& bytes, bool answered) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
    if (!answered) return;
    std::string got;
    char buf[4096];
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (got.find("ok\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    EXPECT_EQ(status_of(got), 200) << got;
  }
  ~HeldConnection() { ::close(fd); }
  // True once the server has closed it (a read sees the end).
  bool closed_by_server() const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    return ::recv(fd, &c, 1, MSG_PEEK) == 0;
  }
  int fd = -1;
};

TEST(HttpServer, AtTheConnectionCapTheLongestIdleConnectionMakesRoom) {
  // Clients that send a request and then idle on the connection (or never
  // send one) cannot lock kube-scheduler out: each new connection closes
  // the one idle the longest.
  config::Config c = test_config();
  c.limits.max_connections = 3;
  Standalone s({node_object("n1", 1)}, c);
  std::vector<std::unique_ptr<HeldConnection>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<HeldConnection>(s.daemon().port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true));
    std::this_thread::sleep_for(20ms);  // a clear order of idleness
  }
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto f = s.driver().filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
    ASSERT_TRUE(f) << f.message();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  }
  EXPECT_TRUE(Cluster::wait_for([&] { return idle[0]->closed_by_server(); }, 2s)) << "the longest idle went first";
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(idle[2]->closed_by_server()) << "the most recently active stays";
  EXPECT_GE(s.daemon().http_counters().evicted, 1u);
  EXPECT_EQ(s.daemon().http_counters().refused, 0u);
}

TEST(HttpServer, AtTheConnectionCapWithEveryConnectionBusyNewOnesAreRefusedAndReadyzSaysSo) {
  config::Config c = test_config();
  c.limits.max_connections = 3;
  c.metrics_listen = "127.0.0.1:0";
  Standalone s({node_object("n1", 1)}, c);
  const std::string metrics = "http://127.0.0.1:" + std::to_string(s.daemon().metrics_port());
  EXPECT_EQ(http_get(metrics, "/readyz").status, 200);
  {
    // Busy: each is sending a request body.
    std::vector<std::unique_ptr<HeldConnection>> busy;
    for (int i = 0; i < 3; ++i) {
      busy.push_back(std::make_unique<HeldConnection>(
          s.daemon().port(), "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", false));
    }
    ASSERT_TRUE(Cluster::wait_for([&] { return s.daemon().http_counters().open_connections == 3; }, 2s));
    std::this_thread::sleep_for(100ms);
    auto r = raw_exchange(s.daemon().port(), {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"}, 0ms, 1s);
    EXPECT_NE(status_of(r.response), 200) << "a fourth connection is refused";
    EXPECT_TRUE(r.closed_by_server || r.response.empty());
    EXPECT_GE(s.daemon().http_counters().refused, 1u);
    const auto ready = http_get(metrics, "/readyz");
    EXPECT_EQ(ready.status, 503);
    EXPECT_NE(ready.body.find("3 of 3 connections open"), std::string::npos) << ready.body;
    const auto scrape = http_get(metrics, "/metrics");
    EXPECT_NE(scrape.body.find("fracpack_http_connections_refused_total "), std::string::npos);
    EXPECT_NE(scrape.body.find("fracpack_http_connections_open 3"), std::string::npos) << scrape.body.substr(0, 2000);
  }
  EXPECT_TRUE(Cluster::wait_for([&] { return http_get(metrics, "/readyz").status == 200; }, 3s)) << "ready again once they left";
  EXPECT_EQ(http_get(s.url(), "/healthz").status, 200);
}

TEST(HttpServer, BodiesInFlightAreChargedAsTheyArriveAndPastTheBudgetAre503) {
  // Request bodies share one budget, charged as their bytes arrive (a
  // large one a 128 KiB step ahead): an announced length costs nothing
  // until it is sent, and the bytes held never pass the budget.
  config::Config c = test_config();
  c.limits.max_request_bytes = 4 << 20;
  c.limits.max_body_bytes_in_flight = 4 << 20;
  Standalone s({node_object("n1", 1)}, c);
  constexpr int64_t kStep = 128 << 10;
  const int64_t sent = (3 << 20) / 2;  // 1.5 MiB of a 4 MiB body, then the client stalls
  const std::string announce = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(4 << 20) + "\r\n\r\n";
  const std::string partial = announce + "{" + std::string(static_cast<size_t>(sent) - 1, ' ');
  auto charged = [&] { return s.daemon().http_counters().body_bytes; };
  std::vector<std::unique_ptr<HeldConnection>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<HeldConnection>(s.daemon().port(), partial, false));
    ASSERT_TRUE(Cluster::wait_for([&] { return charged() >= (i + 1) * sent; }, 3s)) << charged();
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_LE(charged(), 2 * (sent + kStep)) << "what arrived, and at most a step more each";
  // Announced, nothing sent: one step at most.
  const int64_t before = charged();
  held.push_back(std::make_unique<HeldConnection>(s.daemon().port(), announce, false));
  std::this_thread::sleep_for(200ms);
  EXPECT_LE(charged() - before, kStep);
  // A third body that would pass the budget: 503, Retry-After, closed, and
  // the reply reaches the client although it was still sending.
  const RawExchange third = raw_exchange(s.daemon().port(), {partial}, 0ms, 3s, true);
  EXPECT_EQ(status_of(third.response), 503) << third.response.substr(0, 300);
  EXPECT_NE(third.response.find("Retry-After: 1"), std::string::npos) << third.response.substr(0, 300);
  EXPECT_NE(body_of(third.response).find("maxBodyBytesInFlight"), std::string::npos);
  EXPECT_TRUE(third.closed_by_server);
  // A chunked body is charged as it grows.
  std::string chunks = "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  char size[16];
  std::snprintf(size, sizeof size, "%x", 1 << 20);
  chunks += std::string(size) + "\r\n" + std::string(1 << 20, ' ') + "\r\n";
  const RawExchange chunked = raw_exchange(s.daemon().port(), {chunks}, 0ms, 3s, true);
  EXPECT_EQ(status_of(chunked.response), 503) << chunked.response.substr(0, 300);
  EXPECT_GE(s.daemon().http_counters().busy, 2u);
  EXPECT_LE(charged(), c.limits.max_body_bytes_in_flight);
  // Small requests still fit beside the held bodies; once those go, all is released.
  auto f = s.driver().filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
  ASSERT_TRUE(f) << f.message();
  held.clear();
  EXPECT_TRUE(Cluster::wait_for([&] { return charged() == 0; }, 2s)) << charged();
  const std::string body = "{\"Pod\":" + gpu_pod("p", "u-p", 50) + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]}" + std::string(3 << 20, ' ');
  const RawExchange big = raw_exchange(s.daemon().port(), {post_request("/filter", body)}, 0ms, 5s);
  EXPECT_EQ(status_of(big.response), 200) << big.response.substr(0, 300);
}

TEST(HttpServer, KeepAliveServesManyRequestsOnOneConnection) {
  Standalone s({node_object("n1", 1)});
  std::string many;
  for (int i = 0; i < 50; ++i) many += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  auto r = raw_exchange(s.daemon().port(), {many}, 0ms, 1s, true);
  size_t answers = 0;
  for (size_t p = r.response.find("HTTP/1.1 200"); p != std::string::npos; p = r.response.find("HTTP/1.1 200", p + 1)) ++answers;
  EXPECT_EQ(answers, 50u);
  EXPECT_EQ(s.daemon().http_counters().connections, 1u);
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

// The test configuration serving TLS with `cert` (written into `certs`).
config::Config tls_config(TempDir& certs, const TestCertificate& cert) {
  config::Config c = test_config();
  c.tls.cert_file = certs.write("tls.crt", cert.cert_pem);
  c.tls.key_file = certs.write("tls.key", cert.key_pem);
  return c;
}

TEST(HttpServer, AtTheConnectionCapStalledTlsHandshakesMakeRoomToo) {
  // Connections that never complete their TLS handshake are as idle as
  // those that never send a request: a real client still gets in.
  TempDir certs;
  const TestCertificate cert = make_test_certificate("127.0.0.1");
  config::Config c = tls_config(certs, cert);
  c.limits.max_connections = 3;
  Standalone s({node_object("n1", 1)}, c);
  std::vector<std::unique_ptr<HeldConnection>> stalled;
  for (int i = 0; i < 3; ++i) stalled.push_back(std::make_unique<HeldConnection>(s.daemon().port(), "", false));
  ASSERT_TRUE(Cluster::wait_for([&] { return s.daemon().http_counters().open_connections == 3; }, 2s));
  k8s::TlsOptions trust;
  trust.ca_pem = cert.cert_pem;
  EXPECT_EQ(http_get(s.url(), "/healthz", trust).status, 200);
  EXPECT_GE(s.daemon().http_counters().evicted, 1u);
  EXPECT_EQ(s.daemon().http_counters().refused, 0u);
}

TEST(HttpServer, TlsServesAndPicksUpARenewedCertificate) {
  TempDir certs;
  const TestCertificate first = make_test_certificate("127.0.0.1");
  config::Config c = tls_config(certs, first);
  c.tls.reload_interval = 100ms;
  Standalone s({node_object("n1", 1), gpu_pod("p", "u-p", 50)}, c);
  ASSERT_EQ(s.url().rfind("https://", 0), 0u);
  k8s::TlsOptions trust_first;
  trust_first.ca_pem = first.cert_pem;
  EXPECT_EQ(http_get(s.url(), "/healthz", trust_first).status, 200);
  EXPECT_EQ(http_get("http://127.0.0.1:" + std::to_string(s.daemon().port()), "/healthz").status, 0) << "plain HTTP is refused";
  // kube-scheduler's enableHTTPS without a CA: no verification.
  ExtenderConfig e;
  e.url_prefix = s.url() + "/";
  auto d = SchedulerDriver::create({e});
  ASSERT_TRUE(d);
  auto f = (*d)->filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
  ASSERT_TRUE(f) << f.message();
  // Renew: a new key and certificate, swapped in atomically.
  const TestCertificate second = make_test_certificate("127.0.0.1");
  std::this_thread::sleep_for(1100ms);  // a distinct modification time
  certs.write("tls.key", second.key_pem);
  certs.write("tls.crt", second.cert_pem);
  k8s::TlsOptions trust_second;
  trust_second.ca_pem = second.cert_pem;
  bool renewed = Cluster::wait_for([&] { return http_get(s.url(), "/healthz", trust_second).status == 200; }, 5s);
  EXPECT_TRUE(renewed);
  EXPECT_EQ(http_get(s.url(), "/healthz", trust_first).status, 0) << "the old certificate is no longer served";
  EXPECT_GE(s.daemon().http_counters().tls_reloads, 1u);
  // A broken renewal keeps the last good certificate.
  certs.write("tls.crt", "garbage");
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(http_get(s.url(), "/healthz", trust_second).status, 200);
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

namespace fracpack::testing::http_server_test {
namespace {

// Mutual TLS (kube-scheduler's tlsConfig.certFile/keyFile): only clients
// with a certificate signed by tls.clientCaFile get an answer.
TEST(HttpServer, MutualTlsRequiresATrustedClientCertificate) {
  TempDir certs;
  const TestCertificate server_cert = make_test_certificate("127.0.0.1");
  const TestCertificate client_cert = make_test_certificate("kube-scheduler");
  const TestCertificate stranger = make_test_certificate("someone-else");
  config::Config c = test_config();
  c.tls.cert_file = certs.write("tls.crt", server_cert.cert_pem);
  c.tls.key_file = certs.write("tls.key", server_cert.key_pem);
  c.tls.client_ca_file = certs.write("client-ca.crt", client_cert.cert_pem);  // self-signed: its own CA
  Standalone s({node_object("n1", 1)}, c);
  k8s::TlsOptions anonymous;
  anonymous.ca_pem = server_cert.cert_pem;
  EXPECT_EQ(http_get(s.url(), "/healthz", anonymous).status, 0) << "no client certificate: the handshake fails";
  k8s::TlsOptions wrong = anonymous;
  wrong.client_cert_pem = stranger.cert_pem;
  wrong.client_key_pem = stranger.key_pem;
  EXPECT_EQ(http_get(s.url(), "/healthz", wrong).status, 0) << "a certificate the CA did not sign";
  k8s::TlsOptions trusted = anonymous;
  trusted.client_cert_pem = client_cert.cert_pem;
  trusted.client_key_pem = client_cert.key_pem;
  EXPECT_EQ(http_get(s.url(), "/healthz", trusted).status, 200);
  // The scheduler's verbs too, over the same trusted connection settings.
  ExtenderConfig e;
  e.url_prefix = s.url() + "/";
  e.tls = trusted;
  auto d = SchedulerDriver::create({e});
  ASSERT_TRUE(d);
  auto f = (*d)->filter(0, gpu_pod("p", "u-p", 50), {{"n1", ""}});
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes, std::vector<std::string>{"n1"});
  // A client CA without a certificate of our own is a configuration error.
  config::Config bad = test_config();
  bad.tls.client_ca_file = c.tls.client_ca_file;
  EXPECT_FALSE(config::validate(bad).ok());
}

}  // namespace
}  // namespace fracpack::testing::http_server_test
