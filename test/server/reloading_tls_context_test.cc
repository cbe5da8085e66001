// The TLS context and its reload: a renewed certificate is served without
// a restart, a broken renewal keeps the last good one, and a client CA
// makes the handshake require a trusted client certificate.
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "server/reloading_tls_context.h"
#include "test/support/fake_apiserver.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::reloading_tls_context_test {
namespace {

using namespace std::chrono_literals;
using server::ReloadingTlsContext;

// Sets `path`'s modification time `ahead` past now (a change the next
// check sees, however coarse the file system's clock).
void touch_ahead(const std::string& path, std::chrono::seconds ahead) {
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() + ahead);
}

TEST(ReloadingTlsContext, LoadsOnceAndAgainOnlyWhenAFileChanged) {
  TempDir certs;
  const TestCertificate first = make_test_certificate("127.0.0.1");
  const std::string cert = certs.write("tls.crt", first.cert_pem);
  const std::string key = certs.write("tls.key", first.key_pem);
  ReloadingTlsContext tls(cert, key, "");
  ASSERT_TRUE(tls.load().ok());
  const auto loaded = tls.current();
  ASSERT_NE(loaded, nullptr);
  EXPECT_FALSE(tls.reload_if_changed()) << "nothing changed";
  EXPECT_EQ(tls.current(), loaded);
  const TestCertificate second = make_test_certificate("127.0.0.1");
  certs.write("tls.key", second.key_pem);
  certs.write("tls.crt", second.cert_pem);
  touch_ahead(cert, 2s);
  EXPECT_TRUE(tls.reload_if_changed());
  EXPECT_NE(tls.current(), loaded);
  EXPECT_FALSE(tls.reload_if_changed());
  // A broken renewal keeps the last good context, and is tried again.
  const auto good = tls.current();
  certs.write("tls.crt", "garbage");
  touch_ahead(cert, 4s);
  EXPECT_FALSE(tls.reload_if_changed());
  EXPECT_EQ(tls.current(), good);
  certs.write("tls.crt", second.cert_pem);
  touch_ahead(cert, 6s);
  EXPECT_TRUE(tls.reload_if_changed());
}

TEST(ReloadingTlsContext, LoadErrorsNameTheFile) {
  TempDir certs;
  const TestCertificate c = make_test_certificate("127.0.0.1");
  const std::string cert = certs.write("tls.crt", c.cert_pem);
  const std::string key = certs.write("tls.key", c.key_pem);
  const Status no_key = ReloadingTlsContext(cert, "", "").load();
  EXPECT_NE(no_key.message().find("both a certificate and a key"), std::string::npos) << no_key.message();
  const Status missing = ReloadingTlsContext(certs.path() + "/absent.crt", key, "").load();
  EXPECT_NE(missing.message().find("absent.crt"), std::string::npos) << missing.message();
  const Status bad_ca = ReloadingTlsContext(cert, key, certs.write("ca.crt", "garbage")).load();
  EXPECT_NE(bad_ca.message().find("client CA"), std::string::npos) << bad_ca.message();
}

// The test configuration serving TLS with `cert` (written into `certs`).
config::Config tls_config(TempDir& certs, const TestCertificate& cert) {
  config::Config c = test_config();
  c.tls.cert_file = certs.write("tls.crt", cert.cert_pem);
  c.tls.key_file = certs.write("tls.key", cert.key_pem);
  return c;
}

TEST(ReloadingTlsContext, TlsServesAndPicksUpARenewedCertificate) {
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

// Mutual TLS (kube-scheduler's tlsConfig.certFile/keyFile): only clients
// with a certificate signed by tls.clientCaFile get an answer.
TEST(ReloadingTlsContext, MutualTlsRequiresATrustedClientCertificate) {
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
}  // namespace fracpack::testing::reloading_tls_context_test
