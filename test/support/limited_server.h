// A standalone fracpack with a 64 KiB request limit, for the transport's
// tests (http_session_test, http_server_test, connection_budget_test): raw
// request bytes in, the reply checked, and after each test a check that the
// process still serves.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test/support/server_fixture.h"

namespace fracpack::testing {

inline std::string post_request(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct LimitedServerTest : ::testing::Test {
  static config::Config limited() {
    config::Config c = test_config();
    c.limits.max_request_bytes = 64 * 1024;
    return c;
  }
  LimitedServerTest() : s({node_object("n1", 2), gpu_pod("p", "u-p", 50)}, limited()) {}
  RawExchange send(const std::string& bytes) { return raw_exchange(s.daemon().port(), {bytes}); }
  void expect_json_error(const RawExchange& r, int status) {
    ASSERT_EQ(status_of(r.response), status) << r.response;
    nlohmann::json body = nlohmann::json::parse(body_of(r.response), nullptr, false);
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

}  // namespace fracpack::testing
