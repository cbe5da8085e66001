// No token or key material in what fracpack shows: /debug/ledger,
// /debug/snapshot, /version, /metrics, nor its log (serve_process_test
// checks the log of a real process).
#include <gtest/gtest.h>

#include "test/support/server_fixture.h"

namespace fracpack::testing::credentials_test {
namespace {

TEST(Credentials, DebugRoutesCarryNoTokenOrKeyMaterial) {
  const std::string token = "tok-9d1c-never-shown";
  const TestCertificate api_cert = make_test_certificate("127.0.0.1");
  FakeApiServerOptions ao;
  ao.tls = true;
  ao.cert_pem = api_cert.cert_pem;
  ao.key_pem = api_cert.key_pem;
  ao.token = token;
  FakeApiServer api(ao);
  api.create("nodes", node_object("n1", 1));
  api.create("pods", gpu_pod("p", "u-p", 50));
  // fracpack's own serving certificate, and a client CA.
  TempDir dir;
  const TestCertificate serving = make_test_certificate("127.0.0.1");
  config::Config c = test_config();
  c.tls.cert_file = dir.write("tls.crt", serving.cert_pem);
  c.tls.key_file = dir.write("tls.key", serving.key_pem);
  c.metrics_listen = "127.0.0.1:0";
  server::DaemonOptions o;
  o.config = c;
  k8s::ClientConfig cc = client_for(api);
  cc.tls.ca_pem = api_cert.cert_pem;
  cc.token = k8s::TokenSource::fixed(token);
  o.client = cc;
  server::Daemon daemon(o);
  ASSERT_TRUE(daemon.start().ok());
  ASSERT_TRUE(daemon.wait_serving(std::chrono::seconds(20)));
  EXPECT_EQ(api.last_authorization(), "Bearer " + token) << "the token is used";
  k8s::TlsOptions trust;
  trust.ca_pem = serving.cert_pem;
  const std::string base = "https://127.0.0.1:" + std::to_string(daemon.port());
  // The key's base64 body, a line of it, as it would appear if leaked.
  auto key_line = [](const std::string& pem) { return pem.substr(pem.find('\n') + 1, 40); };
  for (const char* path : {"/debug/ledger", "/debug/snapshot", "/version", "/metrics", "/readyz"}) {
    auto r = http_get(base, path, trust);
    ASSERT_EQ(r.status, 200) << path << " " << r.body;
    EXPECT_EQ(r.body.find(token), std::string::npos) << path;
    EXPECT_EQ(r.body.find(key_line(serving.key_pem)), std::string::npos) << path;
    EXPECT_EQ(r.body.find(key_line(api_cert.key_pem)), std::string::npos) << path;
    EXPECT_EQ(r.body.find("PRIVATE KEY"), std::string::npos) << path;
  }
  daemon.drain(std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace fracpack::testing::credentials_test
