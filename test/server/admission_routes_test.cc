// server/admission_routes: the webhook as kube-apiserver meets it — its own
// TLS listener beside the verbs, POST /validate, a 400 for what is not an
// AdmissionReview, 413 past its size, nothing else served there, every
// answer counted by decision.
#include "server/admission_routes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test/support/fake_apiserver.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::admission_routes_test {
namespace {

using json = nlohmann::json;

std::string review(const std::string& user, const json& pod) {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "r-1"},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"operation", "CREATE"},
                {"namespace", "team-b"},
                {"userInfo", {{"username", user}}},
                {"object", pod}}}}
      .dump();
}

TEST(AdmissionRoutes, TheWebhookAnswersOverTlsOnItsOwnListener) {
  TempDir certs;
  const TestCertificate cert = make_test_certificate("127.0.0.1");
  config::Config c = test_config();
  c.admission.listen = "127.0.0.1:0";
  c.admission.cert_file = certs.write("webhook.crt", cert.cert_pem);
  c.admission.key_file = certs.write("webhook.key", cert.key_pem);
  Standalone s({node_object("n1", 1)}, c);
  ASSERT_NE(s.daemon().admission_port(), 0);
  const std::string base = "https://127.0.0.1:" + std::to_string(s.daemon().admission_port());
  k8s::TlsOptions trust;
  trust.ca_pem = cert.cert_pem;

  const json forged = json::parse(gpu_pod("p", "u-p", 50, 0, 1, {{"fracpack.io/allocation", "{}"}}, 0, "n1"));
  auto denied = http_post(base, "/validate", review("alice", forged), trust);
  ASSERT_EQ(denied.status, 200) << denied.body;
  const json answer = json::parse(denied.body);
  EXPECT_FALSE(answer["response"]["allowed"].get<bool>());
  EXPECT_NE(answer["response"]["status"]["message"].get<std::string>().find("metadata.annotations[fracpack.io/allocation]"), std::string::npos);
  auto allowed = http_post(base, "/validate", review("alice", json::parse(gpu_pod("q", "u-q", 50))), trust);
  ASSERT_EQ(allowed.status, 200);
  EXPECT_TRUE(json::parse(allowed.body)["response"]["allowed"].get<bool>());

  EXPECT_EQ(http_post(base, "/validate", "{\"kind\":", trust).status, 400);
  // Past 8 MiB: 413 at once, the connection closed (the client may see the
  // reset before the answer while it is still sending); never decided.
  const auto huge = http_post(base, "/validate", std::string(9 << 20, ' '), trust);
  EXPECT_TRUE(huge.status == 413 || huge.status == 0) << huge.status << " " << huge.body;
  EXPECT_EQ(http_post(base, "/validate", review("alice", forged), trust).status, 200) << "and it goes on serving";
  EXPECT_EQ(http_post(base, "/scheduler/bind", "{}", trust).status, 404) << "the verbs are not served to the network here";
  EXPECT_EQ(http_get(base, "/healthz", trust).status, 200);
  EXPECT_EQ(http_get("http://127.0.0.1:" + std::to_string(s.daemon().admission_port()), "/healthz").status, 0) << "TLS only";

  const std::string metrics = http_get(s.url(), "/metrics").body;
  EXPECT_NE(metrics.find("fracpack_admission_reviews_total{decision=\"denied\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fracpack_admission_reviews_total{decision=\"allowed\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("fracpack_admission_reviews_total{decision=\"bad_request\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("fracpack_http_request_duration_seconds_count{verb=\"admission\"}"), std::string::npos);
}

}  // namespace
}  // namespace fracpack::testing::admission_routes_test
