// The daemon's listeners' options from the configuration (server/listeners.h).
#include "server/listeners.h"

#include <gtest/gtest.h>

namespace fracpack::server::listeners_test {
namespace {

config::Config tls_config() {
  config::Config c;
  c.listen = "127.0.0.1:8888";
  c.metrics_listen = ":9090";
  c.admission.listen = "[::1]:9443";
  c.admission.cert_file = "/webhook/tls.crt";
  c.admission.key_file = "/webhook/tls.key";
  c.io_threads = 4;
  c.limits.max_request_bytes = 32 << 20;
  c.limits.max_connections = 500;
  c.limits.idle_timeout = std::chrono::seconds(7);
  c.tls.cert_file = "/tls/tls.crt";
  c.tls.key_file = "/tls/tls.key";
  c.tls.client_ca_file = "/tls/ca.crt";
  c.tls.reload_interval = std::chrono::seconds(3);
  return c;
}

TEST(Listeners, TheExtenderTakesTheConfiguredLimitsAndTls) {
  auto o = listener_options(tls_config(), Listener::kExtender);
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->address, "127.0.0.1");
  EXPECT_EQ(o->port, 8888);
  EXPECT_EQ(o->threads, 4);
  EXPECT_EQ(o->max_body_bytes, size_t{32} << 20);
  EXPECT_EQ(o->max_connections, 500u);
  EXPECT_EQ(o->idle_timeout, std::chrono::seconds(7));
  EXPECT_EQ(o->cert_file, "/tls/tls.crt");
  EXPECT_EQ(o->client_ca_file, "/tls/ca.crt");
  EXPECT_EQ(o->tls_reload, std::chrono::seconds(3));
}

TEST(Listeners, MetricsArePlainHttpOnOneThreadWithTheSameTimeouts) {
  auto o = listener_options(tls_config(), Listener::kMetrics);
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->address, "0.0.0.0") << "\":9090\": every address";
  EXPECT_EQ(o->port, 9090);
  EXPECT_EQ(o->threads, 1);
  EXPECT_EQ(o->max_connections, 64u);
  EXPECT_EQ(o->idle_timeout, std::chrono::seconds(7));
  EXPECT_TRUE(o->cert_file.empty() && o->key_file.empty() && o->client_ca_file.empty());
}

TEST(Listeners, TheWebhookHasItsOwnCertificateAndAsksNoClientCertificate) {
  auto o = listener_options(tls_config(), Listener::kAdmission);
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->address, "::1");
  EXPECT_EQ(o->port, 9443);
  EXPECT_EQ(o->threads, 1);
  EXPECT_EQ(o->max_connections, 256u);
  EXPECT_EQ(o->max_body_bytes, size_t{8} << 20);
  EXPECT_EQ(o->max_body_bytes_in_flight, size_t{64} << 20);
  EXPECT_EQ(o->cert_file, "/webhook/tls.crt");
  EXPECT_EQ(o->key_file, "/webhook/tls.key");
  EXPECT_TRUE(o->client_ca_file.empty());
  EXPECT_EQ(o->tls_reload, std::chrono::seconds(3));
}

TEST(Listeners, ABadAddressIsAnErrorNamingItsKey) {
  config::Config c = tls_config();
  c.metrics_listen = "nowhere";
  auto o = listener_options(c, Listener::kMetrics);
  ASSERT_FALSE(o);
  EXPECT_EQ(o.message().rfind("metricsListen: expected HOST:PORT", 0), 0u) << o.message();
}

}  // namespace
}  // namespace fracpack::server::listeners_test
