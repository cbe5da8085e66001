// The API client pieces against the fake server: binding, auth
// configuration, and the HTTP client's own behaviour.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "k8s/auth.h"
#include "k8s/binding.h"
#include "k8s/contract/fracpack.h"
#include "k8s/reconciler.h"
#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;

k8s::BindTarget target(const FakeApiServer& s, const std::string& name, const std::string& node) {
  k8s::BindTarget t;
  t.namespace_name = "default";
  t.name = name;
  t.node = node;
  t.uid = json::parse(*s.get("pods", "default", name))["metadata"]["uid"];
  t.annotations = {{"fracpack.io/allocation", R"({"node":")" + node + R"(","containers":[]})"},
                   {"fracpack.io/gpu-indices", "1"}};
  return t;
}

TEST(Binder, BindsWithAnnotationsAtomicallyAndIsIdempotent) {
  FakeApiServer s;
  s.create("pods", pod_object({"p", "default", "", "Pending", {{"fracpack.io/gpu", "1"}}, {}}));
  k8s::ApiClient api(client_for(s));
  auto t = target(s, "p", "n1");
  auto r = k8s::post_binding(api, t);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, k8s::BindOutcome::kBound);
  json pod = json::parse(*s.get("pods", "default", "p"));
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_EQ(pod["metadata"]["annotations"]["fracpack.io/gpu-indices"], "1");
  // A retry after a lost answer: 409 naming the same node is success.
  auto again = k8s::post_binding(api, t);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(*again, k8s::BindOutcome::kAlreadyBound);
  // Another node: the API server's message.
  t.node = "n2";
  auto other = k8s::post_binding(api, t);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.message().find("is already assigned to node \"n1\""), std::string::npos) << other.message();
}

TEST(Binder, FailuresCarryTheApiServersMessage) {
  FakeApiServer s;
  s.create("pods", pod_object({"p", "default", "", "Pending", {}, {}}));
  k8s::ApiClient api(client_for(s));
  auto t = target(s, "p", "n1");
  t.uid = "someone-else";
  auto r = k8s::post_binding(api, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("Precondition failed: UID in precondition"), std::string::npos) << r.message();

  auto missing = target(s, "p", "n1");
  missing.name = "ghost";
  r = k8s::post_binding(api, missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("pods \"ghost\" not found"), std::string::npos) << r.message();

  s.faults().conflict_bindings = 1;
  r = k8s::post_binding(api, target(s, "p", "n1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("409"), std::string::npos) << r.message();

  s.faults().fail_bindings = 1;
  r = k8s::post_binding(api, target(s, "p", "n1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("injected failure"), std::string::npos) << r.message();
  EXPECT_FALSE(json::parse(*s.get("pods", "default", "p"))["spec"].contains("nodeName"));

  // Applied, but the answer is lost: the GET shows it there.
  s.faults().drop_binding_response = 1;
  r = k8s::post_binding(api, target(s, "p", "n1"));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, k8s::BindOutcome::kAlreadyBound);
}

// Found on the real API server (issue 31): a Binding that could not even be
// sent (the API server restarting: connection refused) was taken as
// "outcome unknown" and its reservation kept; it is a known failure.
TEST(Binder, ABindingNeverSentIsAKnownFailure) {
  FakeApiServer s;
  s.create("pods", pod_object({"p", "default", "", "Pending", {}, {}}));
  k8s::ClientConfig c = client_for(s);
  c.endpoint.port = std::to_string(free_loopback_port());  // nothing listens there
  k8s::ApiClient api(c);
  bool gone = true, unknown = true;
  auto r = k8s::post_binding(api, target(s, "p", "n1"), &gone, &unknown);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(api.last_request_sent());
  EXPECT_FALSE(unknown) << r.message();
  EXPECT_FALSE(gone);
  EXPECT_NE(r.message().find("(not sent)"), std::string::npos) << r.message();
}

// Found on the real API server: the GET that tells whether a Binding whose
// answer was lost was applied got the POST's remnant of the bind timeout
// (74 ms), failed too, and left the outcome unknown for the reservation's
// whole TTL. It has a budget of its own now.
TEST(Binder, TheReadThatSettlesALostAnswerHasABudgetOfItsOwn) {
  FakeApiServer s;
  s.create("pods", pod_object({"p", "default", "", "Pending", {}, {}}));
  k8s::ApiClient api(client_for(s));
  s.faults().fail_bindings = 1;  // 500: maybe applied
  s.faults().slow_ms = 150;      // every answer, the GET's too, after 150 ms
  bool unknown = true;
  auto r = k8s::post_binding(api, target(s, "p", "n1"), nullptr, &unknown, std::chrono::milliseconds(200));
  s.faults().slow_ms = 0;
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(unknown) << "the GET (150 ms) fits its own budget, not the 50 ms the POST left: " << r.message();
}

// Found on the real API server: a failed connect left its socket open and
// the next request reused it ("SSL routines::uninitialized") — an extra
// failure after every API server restart.
TEST(ApiClient, AFailedConnectionIsNotReused) {
  const TestCertificate cert = make_test_certificate("127.0.0.1");
  FakeApiServerOptions o;
  o.tls = true;
  o.cert_pem = cert.cert_pem;
  o.key_pem = cert.key_pem;
  FakeApiServer s(o);
  // The API server's port while it restarts: nothing listens (refused),
  // then it is back (here: a proxy to the fake API server on that port).
  const uint16_t port = free_loopback_port();
  k8s::ClientConfig c = client_for(s);
  c.endpoint = *k8s::Endpoint::parse("https://127.0.0.1:" + std::to_string(port));
  c.tls.ca_pem = cert.cert_pem;
  k8s::ApiClient api(c);
  auto refused = api.request("GET", "/api/v1/pods");
  ASSERT_FALSE(refused.ok());
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  std::thread proxy([&] {
    const int in = ::accept(listener, nullptr, nullptr);
    if (in < 0) return;
    const int out = connect_loopback(s.port());
    auto pump = [](int from, int to) {
      char buf[16384];
      for (ssize_t got; (got = ::read(from, buf, sizeof buf)) > 0;) {
        if (::write(to, buf, static_cast<size_t>(got)) != got) break;
      }
      ::shutdown(to, SHUT_WR);
    };
    std::thread up(pump, in, out);
    pump(out, in);
    up.join();
    ::close(in);
    ::close(out);
  });
  auto back = api.request("GET", "/api/v1/pods");
  EXPECT_TRUE(back.ok()) << back.message();
  api.close();
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  proxy.join();
}

TEST(Binder, BindingBodyFollowsTheReference) {
  k8s::BindTarget t{"ml", "train-0", "u-1", "node-a", {{"example.com/gpu-ids", "0,1"}}, {}};
  EXPECT_EQ(k8s::binding_json(t),
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"train-0","namespace":"ml","uid":"u-1",)"
            R"("annotations":{"example.com/gpu-ids":"0,1"}},"target":{"apiVersion":"v1","kind":"Node","name":"node-a"}})");
}

// --- authentication configuration ---

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

// --- the HTTP client ---

TEST(ApiClient, TimeoutsAndRefusedConnectionsAreClearErrors) {
  FakeApiServer s;
  s.faults().slow_ms = 500;
  k8s::ClientConfig c = client_for(s);
  c.request_timeout = std::chrono::milliseconds(100);
  k8s::ApiClient api(c);
  auto r = api.request("GET", "/version");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("timed out after 100 ms"), std::string::npos) << r.message();
  s.faults().slow_ms = 0;
  auto ok = api.request("GET", "/version");  // reconnects
  ASSERT_TRUE(ok.ok()) << ok.message();

  k8s::ClientConfig dead;
  dead.endpoint = *k8s::Endpoint::parse("http://127.0.0.1:1");
  k8s::ApiClient none(dead);
  auto refused = none.request("GET", "/version");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("cannot connect to http://127.0.0.1:1"), std::string::npos) << refused.message();
}

TEST(ApiClient, KeepsOneConnectionAcrossRequests) {
  FakeApiServer s;
  k8s::ApiClient api(client_for(s));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(api.request("GET", "/version").ok());
  EXPECT_EQ(s.connections(), 1);
  // No bearer token over plain HTTP (as client-go).
  k8s::ClientConfig c = client_for(s);
  c.token = k8s::TokenSource::fixed("never-sent");
  k8s::ApiClient plain(c);
  ASSERT_TRUE(plain.request("GET", "/version").ok());
  EXPECT_EQ(s.last_authorization(), "");
}

// The reconciler releases assumptions whose pods are provably gone, and
// never confirms one from a GET: the answer may predate a deletion the watch
// has already applied, and would leave a phantom nothing removes.
TEST(Reconciler, ReleasesWhatIsGoneButNeverConfirmsFromAGet) {
  Cluster c;
  c.server().create("nodes", node_object("n1", 8));
  for (const char* name : {"bound", "gone", "recreated", "elsewhere", "pending"}) {
    c.server().create("pods", pod_object({name, "default", "", "Pending", {{"fracpack.io/gpu-cores", "10"}}, {}}));
  }
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return c.state().ready() && c.state().pod_by_name("default", "pending").has_value(); }));
  c.stop();  // the ledger is frozen from here: the watch is "behind"
  std::map<std::string, std::string> uid;
  int card = 0;
  for (const char* name : {"bound", "gone", "recreated", "elsewhere", "pending"}) {
    uid[name] = c.state().pod_by_name("default", name)->meta.uid;
    scheduling::Allocation a{"n1", {{"main", false, {{card++, "", 0, 100}}}}};
    ASSERT_TRUE(c.state().assume({uid[name], std::string("default/") + name, 0, 0}, a, scheduling::Clock::now()).ok());
  }
  auto bind_to = [&](const std::string& name, const std::string& node) {
    c.server().update("pods", "default", name, [&](const std::string& t) {
      json o = json::parse(t);
      o["spec"]["nodeName"] = node;
      return o.dump();
    });
  };
  bind_to("bound", "n1");
  bind_to("elsewhere", "n2");
  c.server().remove("pods", "default", "gone");
  c.server().remove("pods", "default", "recreated");
  c.server().create("pods", pod_object({"recreated", "default", "", "Pending", {}, {}}));
  k8s::ApiClient api(client_for(c.server()));
  EXPECT_EQ(k8s::reconcile_assumptions(api, c.state(), std::chrono::milliseconds(0)), 3u);
  auto phase = [&](const std::string& name) -> std::string {
    return c.state().read([&](const scheduling::Ledger& l) -> std::string {
      const auto* r = l.pod(uid[name]);
      return r == nullptr ? "released" : r->phase == scheduling::PodPhase::kAssumed ? "assumed" : "confirmed";
    });
  };
  EXPECT_EQ(phase("gone"), "released");
  EXPECT_EQ(phase("recreated"), "released");
  EXPECT_EQ(phase("elsewhere"), "released");
  EXPECT_EQ(phase("bound"), "assumed") << "left for the informer to confirm";
  EXPECT_EQ(phase("pending"), "assumed");
}

// A release proven by the API server (404) must survive events still in
// flight from before it: a lagging watch delivering the pod's bind after
// the reconciler released it would otherwise double-count its card until
// the deletion arrives. Feeds the sink by hand to order the events.
TEST(Reconciler, EventsOlderThanAProvenDeletionAreIgnored) {
  FakeApiServer server;
  k8s::ClusterState state(k8s::SyncOptions{});
  auto node = k8s::parse_node(node_object("n1", 2), state.selection());
  ASSERT_TRUE(node.ok());
  state.apply_node(*node);
  const json pending = json::parse(server.create("pods", pod_object({"p", "default", "", "Pending", {{"fracpack.io/gpu-cores", "80"}}, {}})));
  const std::string uid = pending["metadata"]["uid"];
  state.apply_pod(*k8s::parse_pod(pending.dump(), state.selection()));
  const scheduling::Allocation a{"n1", {{"main", false, {{0, "", 0, 800}}}}};
  ASSERT_TRUE(state.assume({uid, "default/p", 0, 0}, a, scheduling::Clock::now()).ok());
  // The bind lands and the pod is deleted; the watch has seen neither yet.
  json bound = pending;
  bound["spec"]["nodeName"] = "n1";
  bound["metadata"]["annotations"]["fracpack.io/allocation"] = k8s::format_allocation(a);
  server.remove("pods", "default", "p");
  k8s::ApiClient api(client_for(server));
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  auto held = [&] { return state.read([](const scheduling::Ledger& l) { return l.node("n1")->use()[0].cores; }); };
  EXPECT_EQ(held(), 0);
  // Now the lagging watch: the bind, then a stale list still showing it.
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, bound.dump()).ok());
  EXPECT_EQ(held(), 0) << "the bind predates the proven deletion";
  EXPECT_EQ(state.counters().stale_events, 1u);
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(bound.dump()).ok());
  state.end_pod_list();
  EXPECT_EQ(held(), 0) << "a stale list does not resurrect it either";
  // The deletion arrives: the tombstone goes; a list without the pod also clears it.
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kDeleted, bound.dump()).ok());
  EXPECT_EQ(held(), 0);
  EXPECT_EQ(state.counters().stale_events, 2u);
}

}  // namespace
}  // namespace fracpack::testing

namespace fracpack::testing {
namespace {

// Found by the chaos soak: past its TTL, a reservation whose pod is bound
// (the watch only lagging) was dropped, and another pod took its cards. Now
// only a pod the API server shows unbound loses its reservation at the TTL.
TEST(Reconciler, PastTheTtlOnlyProvablyUnboundPodsLoseTheirReservation) {
  FakeApiServer server;
  k8s::SyncOptions so;
  so.assume_ttl = std::chrono::milliseconds(1);
  k8s::ClusterState state(so);
  auto node = k8s::parse_node(node_object("n1", 2), state.selection());
  ASSERT_TRUE(node.ok());
  state.apply_node(*node);
  std::map<std::string, std::string> uid;
  for (const char* name : {"bound", "pending"}) {
    const json p = json::parse(server.create("pods", pod_object({name, "default", "", "Pending", {{"fracpack.io/gpu-cores", "40"}}, {}})));
    uid[name] = p["metadata"]["uid"];
    state.apply_pod(*k8s::parse_pod(p.dump(), state.selection()));
  }
  const scheduling::Allocation a0{"n1", {{"main", false, {{0, "", 0, 400}}}}}, a1{"n1", {{"main", false, {{1, "", 0, 400}}}}};
  ASSERT_TRUE(state.assume({uid["bound"], "default/bound", 0, 0}, a0, scheduling::Clock::now()).ok());
  ASSERT_TRUE(state.assume({uid["pending"], "default/pending", 0, 0}, a1, scheduling::Clock::now()).ok());
  // "bound" is bound in the API server (its event not yet seen); "pending" never was.
  server.update("pods", "default", "bound", [&](const std::string& text) {
    json p = json::parse(text);
    p["spec"]["nodeName"] = "n1";
    p["metadata"]["annotations"]["fracpack.io/allocation"] = k8s::format_allocation(a0);
    return p.dump();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // both past the TTL
  k8s::ApiClient api(client_for(server));
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  auto cores = [&](int card) { return state.read([&](const scheduling::Ledger& l) { return l.node("n1")->use()[static_cast<size_t>(card)].cores; }); };
  EXPECT_EQ(cores(0), 400) << "the bound pod keeps its card until the watch confirms it";
  EXPECT_EQ(cores(1), 0) << "the never-bound pod's reservation is released";
  EXPECT_EQ(state.counters().expired_assumptions, 1u);
  // The API server unreachable: nothing is released.
  ASSERT_TRUE(state.assume({uid["pending"], "default/pending", 0, 0}, a1, scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().fail_gets = 10;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 0u);
  EXPECT_EQ(cores(1), 400);
  // One failed answer (a 500, a 429) does not hold the reservation a whole
  // reconcile interval longer: the GET is tried again within the pass.
  server.faults().fail_gets = 1;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  EXPECT_EQ(cores(1), 0);
  ASSERT_TRUE(state.assume({uid["pending"], "default/pending", 0, 0}, a1, scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().throttle = 1;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  EXPECT_EQ(cores(1), 0);
  // An API server failing three GETs in a row gets no more retries in that
  // pass: one attempt for each further reservation ("bound" is still held).
  ASSERT_TRUE(state.assume({uid["pending"], "default/pending", 0, 0}, a1, scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().fail_gets = 4;
  const int gets = server.requests("GET /api/v1/namespaces/default/pods/");
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 0u);
  EXPECT_EQ(server.requests("GET /api/v1/namespaces/default/pods/") - gets, 4);
  EXPECT_EQ(cores(1), 400);
}

}  // namespace
}  // namespace fracpack::testing
