// The HTTP session: what it refuses before the application sees a request
// (framing, sizes, slow clients), and keep-alive. The process answers
// every case and keeps serving.
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/support/fake_apiserver.h"
#include "test/support/limited_server.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::http_session_test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The fixture: test/support/limited_server.h.
using HttpSession = LimitedServerTest;

TEST_F(HttpSession, FramingThatRfc9112RefusesIs400AndCloses) {
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

TEST_F(HttpSession, BodyOverTheLimitIs413BeforeItIsRead) {
  const std::string big(100 * 1024, ' ');
  auto r = send(post_request("/filter", big));
  EXPECT_EQ(status_of(r.response), 413) << r.response.substr(0, 200);
  // Declared but not sent: refused from the header alone.
  r = send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 413) << r.response;
}

TEST_F(HttpSession, HugeHeadersAre431AndGarbageIs400) {
  auto r = send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 431) << r.response.substr(0, 200);
  r = send("\x16\x03\x01 this is not http\r\n\r\n");
  EXPECT_EQ(status_of(r.response), 400) << r.response;
  r = raw_exchange(s.daemon().port(), {"\x16\x03\x01 this is not http\r\n\r\n"}, 0ms, 5s, true);
  EXPECT_TRUE(r.closed_by_server) << "no keep-alive after garbage";
}

TEST_F(HttpSession, SlowClientsAreDisconnectedAndDoNotBlockOthers) {
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

TEST_F(HttpSession, KeepAliveServesManyRequestsOnOneConnection) {
  std::string many;
  for (int i = 0; i < 50; ++i) many += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  auto r = raw_exchange(s.daemon().port(), {many}, 0ms, 1s, true);
  size_t answers = 0;
  for (size_t p = r.response.find("HTTP/1.1 200"); p != std::string::npos; p = r.response.find("HTTP/1.1 200", p + 1)) ++answers;
  EXPECT_EQ(answers, 50u);
  EXPECT_EQ(s.daemon().http_counters().connections, 1u);
}

}  // namespace
}  // namespace fracpack::testing::http_session_test
