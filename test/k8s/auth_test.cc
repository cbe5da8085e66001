// The API server's connection settings (k8s/auth.h): kubeconfig contexts
// and their refusals, the in-cluster service account, endpoints and base64.
#include "k8s/auth.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::testing::auth_test {
namespace {

std::string write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Auth, KubeconfigCurrentContext) {
  const TestCertificate cert = make_test_certificate();
  write("kc-ca.crt", cert.cert_pem);
  write("kc-token", "tok-from-file\n");
  const std::string path = write("kc.yaml", R"(apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: kc-ca.crt
    tls-server-name: kubernetes
- name: other
  cluster:
    server: http://10.0.0.1:8080
users:
- name: u
  user:
    tokenFile: kc-token
- name: admin
  user:
    token: tok-inline
contexts:
- name: dev
  context: {cluster: dev, user: u}
- name: other
  context: {cluster: other, user: admin}
current-context: dev
)");
  auto c = k8s::kubeconfig_config(path);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->endpoint.url(), "https://127.0.0.1:6443");
  EXPECT_EQ(c->tls.ca_pem, cert.cert_pem) << "relative paths resolve against the kubeconfig's folder";
  EXPECT_EQ(c->tls.server_name, "kubernetes");
  ASSERT_TRUE(c->token);
  EXPECT_EQ(*c->token->token(), "tok-from-file");
  auto other = k8s::kubeconfig_config(path, "other");
  ASSERT_TRUE(other.ok()) << other.message();
  EXPECT_FALSE(other->endpoint.tls());
  EXPECT_EQ(*other->token->token(), "tok-inline");
}

TEST(Auth, KubeconfigRefusalsSayWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"users: [{name: u, user: {exec: {command: aws}}}]", "exec credential plugins are not supported"},
      {"users: [{name: u, user: {auth-provider: {name: gcp}}}]", "auth-provider plugins are not supported"},
      {"users: [{name: u, user: {username: a, password: b}}]", "basic authentication is not supported"},
      {"users: [{name: u, user: {client-certificate-data: Zm9v}}]", "needs its key"},
  };
  for (const auto& [user, why] : cases) {
    const std::string path = write("kc-bad.yaml", "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n" + user +
                                                      "\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n");
    auto c = k8s::kubeconfig_config(path);
    ASSERT_FALSE(c.ok()) << user;
    EXPECT_NE(c.message().find(why), std::string::npos) << c.message();
  }
  auto missing = k8s::kubeconfig_config(write("kc-nocontext.yaml", "current-context: nope\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no context \"nope\""), std::string::npos) << missing.message();
  EXPECT_FALSE(k8s::kubeconfig_config(::testing::TempDir() + "/does-not-exist").ok());
}

TEST(Auth, KubeconfigListMergesFirstWins) {
  const std::string a = write("kc-a.yaml", "current-context: one\ncontexts: [{name: one, context: {cluster: c1}}]\n");
  const std::string b = write("kc-b.yaml", "current-context: two\nclusters: [{name: c1, cluster: {server: 'http://first:1'}}]\n");
  setenv("KUBECONFIG", (a + ":" + b).c_str(), 1);
  auto c = k8s::kubeconfig_config();
  unsetenv("KUBECONFIG");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->endpoint.host, "first");
}

TEST(Auth, InCluster) {
  unsetenv("KUBERNETES_SERVICE_HOST");
  auto none = k8s::in_cluster_config(::testing::TempDir());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.message().find("not running in a cluster"), std::string::npos);
  const std::string dir = ::testing::TempDir() + "/sa";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "sa-token\n";
  std::ofstream(dir + "/ca.crt") << "PEM";
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = k8s::in_cluster_config(dir);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->endpoint.host, "fd00::1");
  EXPECT_EQ(c->endpoint.url(), "https://[fd00::1]:443");
  EXPECT_EQ(c->tls.ca_pem, "PEM");
  EXPECT_EQ(*c->token->token(), "sa-token");
  // The kubelet rotates the token: re-read after invalidate (a 401).
  std::ofstream(dir + "/token") << "sa-token-2";
  c->token->invalidate();
  EXPECT_EQ(*c->token->token(), "sa-token-2");
}

TEST(Auth, EndpointsAndBase64) {
  auto e = k8s::Endpoint::parse("https://[::1]:6443/prefix/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, "6443");
  EXPECT_EQ(e->base_path, "/prefix");
  EXPECT_EQ(k8s::Endpoint::parse("http://h")->port, "80");
  EXPECT_EQ(k8s::Endpoint::parse("https://h")->port, "443");
  EXPECT_FALSE(k8s::Endpoint::parse("h:80").ok());
  EXPECT_FALSE(k8s::Endpoint::parse("ftp://h").ok());
  EXPECT_FALSE(k8s::Endpoint::parse("http://h:8x").ok());
  EXPECT_EQ(*k8s::base64_decode("aGVsbG8gd29ybGQ="), "hello world");
  EXPECT_FALSE(k8s::base64_decode("a*b").ok());
}

}  // namespace
}  // namespace fracpack::testing::auth_test
