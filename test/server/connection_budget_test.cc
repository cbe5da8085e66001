// The connection and body budgets: unit tests of the eviction and
// charging rules, then the server at its cap and past its body budget.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/connection_budget.h"
#include "test/support/fake_apiserver.h"
#include "test/support/limited_server.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::connection_budget_test {
namespace {

using namespace std::chrono_literals;
using server::BodyBudget;
using server::BudgetedConnection;
using server::ConnectionBudget;

TEST(BodyBudget, TakesUpToItsLimitAndNeverPastIt) {
  BodyBudget budget(100);
  EXPECT_TRUE(budget.take(60));
  EXPECT_FALSE(budget.take(41)) << "nothing is taken when it would pass";
  EXPECT_EQ(budget.held(), 60);
  EXPECT_TRUE(budget.take(40));
  budget.give_back(100);
  EXPECT_EQ(budget.held(), 0);
  // Many takers at once: the budget is never passed.
  BodyBudget shared(1000);
  std::atomic<int> taken{0};
  std::vector<std::thread> takers;
  for (int t = 0; t < 4; ++t) {
    takers.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (shared.take(7)) ++taken;
      }
    });
  }
  for (auto& t : takers) t.join();
  EXPECT_EQ(taken.load(), 1000 / 7);
  EXPECT_EQ(shared.held(), 1000 / 7 * 7);
}

// A connection that is idle since `since` (0: busy), as the session reports it.
struct FakeConnection : BudgetedConnection {
  explicit FakeConnection(int64_t idle) : since(idle) {}
  void close_when_idle(bool even_if_busy, bool evicting) override {
    if (since.load() != 0 || even_if_busy) {
      closed = true;
      evicted = evicting;
    }
  }
  int64_t idle_since() const override { return since.load(); }
  bool claim_for_eviction() override {
    int64_t s = since.load();
    while (s > 0) {
      if (since.compare_exchange_weak(s, -1)) return true;
    }
    return false;
  }
  std::atomic<int64_t> since;
  bool closed = false;
  bool evicted = false;
};

TEST(ConnectionBudget, AtTheCapTheLongestIdleMakesRoomAndBusyOnesNever) {
  ConnectionBudget budget(3);
  auto busy = std::make_shared<FakeConnection>(0);
  auto recent = std::make_shared<FakeConnection>(200);
  auto oldest = std::make_shared<FakeConnection>(100);
  std::vector<ConnectionBudget::Registration> added;
  for (const auto& c : {busy, recent}) added.push_back(budget.add(c));
  EXPECT_TRUE(budget.make_room()) << "under the cap";
  EXPECT_FALSE(recent->closed);
  added.push_back(budget.add(oldest));
  EXPECT_EQ(budget.open(), 3);
  EXPECT_EQ(budget.saturation(), "") << "idle connections can make room";
  EXPECT_TRUE(budget.make_room());
  EXPECT_TRUE(oldest->closed && oldest->evicted) << "the longest idle goes first";
  EXPECT_FALSE(recent->closed);
  // The one claimed is not chosen again while it closes: the next goes.
  EXPECT_TRUE(budget.make_room());
  EXPECT_TRUE(recent->closed);
  EXPECT_FALSE(busy->closed);
  // Every connection busy (or already claimed): no room, and saturation says why.
  EXPECT_FALSE(budget.make_room());
  EXPECT_EQ(budget.saturation(), "3 of 3 connections open (limits.maxConnections), none idle to close for a new one");
  budget.remove(added.back());
  EXPECT_EQ(budget.open(), 2);
  EXPECT_TRUE(budget.make_room());
}

TEST(ConnectionBudget, NeverMoreThanAFewPastTheCapWhileEvictedOnesClose) {
  ConnectionBudget budget(1);
  std::vector<std::shared_ptr<FakeConnection>> open;
  for (int i = 0; i < 17; ++i) {
    open.push_back(std::make_shared<FakeConnection>(1000 + i));
    budget.add(open.back());
  }
  EXPECT_FALSE(budget.make_room()) << "1 + 16 open: no more, idle or not";
  EXPECT_FALSE(open[0]->closed);
}

TEST(ConnectionBudget, CloseAllSparesBusyConnectionsUnlessTold) {
  ConnectionBudget budget(10);
  auto busy = std::make_shared<FakeConnection>(0);
  auto idle = std::make_shared<FakeConnection>(5);
  budget.add(busy);
  budget.add(idle);
  budget.close_all(false);
  EXPECT_TRUE(idle->closed);
  EXPECT_FALSE(idle->evicted);
  EXPECT_FALSE(busy->closed);
  budget.close_all(true);
  EXPECT_TRUE(busy->closed);
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

TEST(ConnectionBudget, AtTheConnectionCapTheLongestIdleConnectionMakesRoom) {
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

TEST(ConnectionBudget, AtTheConnectionCapWithEveryConnectionBusyNewOnesAreRefusedAndReadyzSaysSo) {
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

TEST(ConnectionBudget, BodiesInFlightAreChargedAsTheyArriveAndPastTheBudgetAre503) {
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

// The test configuration serving TLS with `cert` (written into `certs`).
config::Config tls_config(TempDir& certs, const TestCertificate& cert) {
  config::Config c = test_config();
  c.tls.cert_file = certs.write("tls.crt", cert.cert_pem);
  c.tls.key_file = certs.write("tls.key", cert.key_pem);
  return c;
}

TEST(ConnectionBudget, AtTheConnectionCapStalledTlsHandshakesMakeRoomToo) {
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

}  // namespace
}  // namespace fracpack::testing::connection_budget_test
