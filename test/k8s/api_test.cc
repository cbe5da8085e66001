// The reconciler (k8s/reconciler.h) against the fake server: what is gone
// is released, nothing is confirmed from a GET, stale events are ignored.
// (Bindings: binding_test.cc; authentication: auth_test.cc; the HTTP
// client: api_client_test.cc.)
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

namespace fracpack::testing::api_test {
namespace {

using json = nlohmann::json;

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
    ASSERT_TRUE(c.state().reservations().reserve({uid[name], std::string("default/") + name, 0, 0}, fixed_choice(a), scheduling::Clock::now()).ok());
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
  ASSERT_TRUE(state.reservations().reserve({uid, "default/p", 0, 0}, fixed_choice(a), scheduling::Clock::now()).ok());
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
}  // namespace fracpack::testing::api_test

namespace fracpack::testing::api_test {
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
  ASSERT_TRUE(state.reservations().reserve({uid["bound"], "default/bound", 0, 0}, fixed_choice(a0), scheduling::Clock::now()).ok());
  ASSERT_TRUE(state.reservations().reserve({uid["pending"], "default/pending", 0, 0}, fixed_choice(a1), scheduling::Clock::now()).ok());
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
  ASSERT_TRUE(state.reservations().reserve({uid["pending"], "default/pending", 0, 0}, fixed_choice(a1), scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().fail_gets = 10;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 0u);
  EXPECT_EQ(cores(1), 400);
  // One failed answer (a 500, a 429) does not hold the reservation a whole
  // reconcile interval longer: the GET is tried again within the pass.
  server.faults().fail_gets = 1;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  EXPECT_EQ(cores(1), 0);
  ASSERT_TRUE(state.reservations().reserve({uid["pending"], "default/pending", 0, 0}, fixed_choice(a1), scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().throttle = 1;
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 1u);
  EXPECT_EQ(cores(1), 0);
  // An API server failing three GETs in a row gets no more retries in that
  // pass: one attempt for each further reservation ("bound" is still held).
  ASSERT_TRUE(state.reservations().reserve({uid["pending"], "default/pending", 0, 0}, fixed_choice(a1), scheduling::Clock::now()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.faults().fail_gets = 4;
  const int gets = server.requests("GET /api/v1/namespaces/default/pods/");
  EXPECT_EQ(k8s::reconcile_assumptions(api, state, std::chrono::milliseconds(0)), 0u);
  EXPECT_EQ(server.requests("GET /api/v1/namespaces/default/pods/") - gets, 4);
  EXPECT_EQ(cores(1), 400);
}

}  // namespace
}  // namespace fracpack::testing::api_test
