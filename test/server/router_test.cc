// The HTTP handler of `fracpack serve` (server/router.h): the extender verbs
// under the URL prefix, POST only; the status routes, GET and HEAD; every
// answer counted under its verb. Through a daemon serving a snapshot.
#include "server/router.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/support/server_fixture.h"

namespace fracpack::testing::router_test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// One request on its own connection, closed after the answer (so that an
// answer's end does not depend on its body: HEAD's has none).
std::string request(const std::string& method, const std::string& path, const std::string& body = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The answer's status and its {"Error": ...} message ("" when it has none).
struct Answer {
  int status = 0;
  std::string error;
  std::string body;
};
Answer send(Standalone& s, const std::string& bytes) {
  const RawExchange r = raw_exchange(s.daemon().port(), {bytes}, 0ms, 5s, true);
  Answer a;
  a.status = status_of(r.response);
  a.body = body_of(r.response);
  json j = json::parse(a.body, nullptr, false);
  if (j.is_object() && j.contains("Error") && j["Error"].is_string()) a.error = j["Error"];
  return a;
}

std::string filter_body() { return "{\"Pod\":" + gpu_pod("p", "u-p", 50) + ",\"Nodes\":null,\"NodeNames\":[\"n1\"]}"; }

config::Config with_prefix(const std::string& prefix) {
  config::Config c = test_config();
  c.url_prefix = prefix;
  return c;
}

TEST(Router, VerbsAreServedUnderThePrefixWithOrWithoutItsTrailingSlash) {
  for (const std::string prefix : {"/scheduler", "/scheduler/"}) {
    Standalone s({node_object("n1", 1), gpu_pod("p", "u-p", 50)}, with_prefix(prefix));
    const Answer f = send(s, request("POST", "/scheduler/filter", filter_body()));
    ASSERT_EQ(f.status, 200) << prefix << ": " << f.body;
    EXPECT_TRUE(f.error.empty()) << f.body;
    EXPECT_EQ(json::parse(f.body)["NodeNames"], json::array({"n1"})) << f.body;
    const Answer p = send(s, request("POST", "/scheduler/prioritize", filter_body()));
    ASSERT_EQ(p.status, 200) << p.body;
    EXPECT_TRUE(json::parse(p.body).is_array()) << p.body;
    // Outside the prefix a verb is an unknown route, whose message names the prefix.
    const Answer outside = send(s, request("POST", "/filter", filter_body()));
    EXPECT_EQ(outside.status, 404) << outside.body;
    EXPECT_NE(outside.error.find("POST /filter"), std::string::npos) << outside.body;
    const Answer unknown = send(s, request("GET", "/scheduler/nowhere"));
    EXPECT_EQ(unknown.status, 404) << unknown.body;
    EXPECT_NE(unknown.error.find("served under /scheduler/"), std::string::npos) << unknown.body;
  }
}

TEST(Router, EveryVerbTakesOnlyPost) {
  Standalone s({node_object("n1", 1)});
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    for (const char* method : {"GET", "HEAD", "PUT", "DELETE"}) {
      const Answer a = send(s, request(method, std::string("/") + verb));
      EXPECT_EQ(a.status, 405) << method << " /" << verb;
      if (std::string(method) != "HEAD") {
        EXPECT_EQ(a.error, std::string("use POST for /") + verb) << a.body;
      }
    }
  }
  // Each verb reaches its handler: a malformed body is its 400.
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    const Answer a = send(s, request("POST", std::string("/") + verb, "not json"));
    EXPECT_EQ(a.status, 400) << verb << ": " << a.body;
    EXPECT_FALSE(a.error.empty()) << a.body;
  }
}

TEST(Router, StatusRoutesTakeGetAndHeadOnly) {
  Standalone s({node_object("n1", 1)});
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    EXPECT_EQ(send(s, request("GET", path)).status, 200) << path;
    const Answer head = send(s, request("HEAD", path));
    EXPECT_EQ(head.status, 200) << path;
    for (const char* method : {"POST", "PUT", "DELETE"}) {
      const Answer a = send(s, request(method, path));
      EXPECT_EQ(a.status, 405) << method << " " << path;
      EXPECT_EQ(a.error, std::string("no ") + method + " " + path) << a.body;
    }
  }
  // Other paths: 404 whatever the method.
  for (const char* method : {"GET", "POST", "PUT"}) {
    const Answer a = send(s, request(method, "/nowhere"));
    EXPECT_EQ(a.status, 404) << method;
    EXPECT_FALSE(a.error.empty()) << a.body;
  }
}

// HEAD was answered with the GET's body (RFC 9110 9.3.2: a HEAD answer has
// none): "HEAD /healthz" then "GET /version" on one connection, and "ok\n"
// followed the HEAD's header where the client reads the GET's answer.
TEST(Router, AHeadAnswerHasNoBodySoTheNextAnswerIsReadRight) {
  Standalone s({node_object("n1", 1)});
  // Two requests on one connection: HEAD, then GET.
  const RawExchange r = raw_exchange(s.daemon().port(),
                                     {"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
                                     0ms, 2s, true);
  ASSERT_EQ(status_of(r.response), 200) << r.response;
  const size_t end_of_head = r.response.find("\r\n\r\n");
  ASSERT_NE(end_of_head, std::string::npos) << r.response;
  EXPECT_EQ(r.response.compare(end_of_head + 4, 9, "HTTP/1.1 "), 0) << "the GET's answer right after the HEAD's header:\n" << r.response;
}

TEST(Router, EveryAnswerIsCountedUnderItsVerb) {
  Standalone s({node_object("n1", 1), gpu_pod("p", "u-p", 50)});
  ASSERT_EQ(send(s, request("POST", "/filter", filter_body())).status, 200);
  ASSERT_EQ(send(s, request("POST", "/filter", filter_body())).status, 200);
  ASSERT_EQ(send(s, request("GET", "/filter")).status, 405);
  ASSERT_EQ(send(s, request("POST", "/preempt", "not json")).status, 400);
  ASSERT_EQ(send(s, request("GET", "/nowhere")).status, 404);
  ASSERT_EQ(send(s, request("POST", "/healthz")).status, 405);
  ASSERT_TRUE(s.driver().bind("default", "p", "u-p", "n1").ok());
  const auto m = http_get(s.url(), "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* want : {"fracpack_http_requests_total{code=\"200\",verb=\"filter\"} 2",
                           "fracpack_http_requests_total{code=\"405\",verb=\"filter\"} 1",
                           "fracpack_http_requests_total{code=\"400\",verb=\"preempt\"} 1",
                           "fracpack_http_requests_total{code=\"404\",verb=\"other\"} 1",
                           "fracpack_http_requests_total{code=\"405\",verb=\"other\"} 1",
                           "fracpack_http_requests_total{code=\"200\",verb=\"bind\"} 1",
                           "fracpack_http_request_duration_seconds_count{verb=\"filter\"} 3",
                           "fracpack_http_request_duration_seconds_count{verb=\"bind\"} 1"}) {
    EXPECT_NE(m.body.find(want), std::string::npos) << want;
  }
}

}  // namespace
}  // namespace fracpack::testing::router_test
