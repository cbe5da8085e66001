// The hami and gpushare profiles end to end: fracpack binds through the test
// API server, and doubles of the peers' own ../shared/reference/node-side.md code (written from
// ../shared/reference/node-side.md, test/support/peer_agents.h) find each pod at Allocate and
// get exactly the cards fracpack chose; after a restart fracpack's ledger
// equals what the peer's scheduler would count from the same annotations.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/contract/profiles.h"
#include "test/support/cluster_harness.h"
#include "test/support/peer_agents.h"
#include "test/support/server_fixture.h"
#include "test/support/soak_profile.h"

namespace fracpack::testing::peer_profiles_test {
namespace {

using nlohmann::json;

json container(const std::string& name, const json& limits) {
  json c = {{"name", name}, {"image", "busybox"}};
  if (!limits.empty()) c["resources"] = {{"limits", limits}, {"requests", limits}};
  return c;
}

std::string pending_pod(const std::string& name, const json& containers, const json& annotations = json::object()) {
  json meta = {{"name", name}, {"namespace", "default"}, {"uid", "u-" + name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta},
              {"spec", {{"schedulerName", "fracpack"}, {"containers", containers}}}, {"status", {{"phase", "Pending"}}}}
      .dump();
}

std::string node(const std::string& name, const json& annotations, const json& extra_resources) {
  return peer_node_json(name, annotations, extra_resources);
}

std::string uuid(const std::string& node, int i) { return "GPU-" + node + "-000" + std::to_string(i); }

// Creates `pod` on the API server, waits until fracpack has seen it, runs
// kube-scheduler's cycle over `nodes` and binds it: the node it went to.
Result<std::string> create_schedule_bind(Connected& c, const std::string& pod, const std::vector<CandidateNode>& nodes) {
  const json p = json::parse(pod);
  const std::string name = p["metadata"]["name"], uid = p["metadata"]["uid"];
  c.api->create("pods", pod);
  if (!Cluster::wait_for([&] { return c.daemon().state().pod(uid).has_value(); })) return Error{name + ": fracpack never saw it"};
  CycleResult cycle = c.driver().schedule(pod, nodes);
  if (!cycle.error.empty()) return Error{name + ": " + cycle.error};
  if (cycle.node.empty()) return Error{name + " did not fit"};
  if (Status s = c.driver().bind("default", name, uid, cycle.node); !s.ok()) return Error{name + ": " + s.message()};
  return cycle.node;
}

void restart(Connected& c) {
  c.daemon_->drain(std::chrono::milliseconds(1000));
  c.daemon_.reset();
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().ready(); }));
}

TEST(HamiProfile, HamisDevicePluginFindsEveryPodAndGetsFracpacksCards) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kHami;
  Connected c(cfg);
  // hami-0 registers in JSON (zero fields omitted: card 0 has no "index"),
  // hami-1 in the older colon/comma text; split count 4.
  json devices = json::array();
  for (int i = 0; i < 4; ++i) {
    json d = {{"id", uuid("hami-0", i)}, {"count", 4}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-Tesla T4"},
              {"mode", "hami-core"}, {"health", true}};
    if (i > 0) d["index"] = i;
    devices.push_back(d);
  }
  std::string text;
  for (int i = 0; i < 4; ++i) text += uuid("hami-1", i) + ",4,16384,100,NVIDIA-Tesla T4,0,true," + std::to_string(i) + ",hami-core:";
  c.api->create("nodes", node("hami-0", {{"hami.io/node-nvidia-register", devices.dump()}}, {{"nvidia.com/gpu", "16"}}));
  c.api->create("nodes", node("hami-1", {{"hami.io/node-nvidia-register", text}}, {{"nvidia.com/gpu", "16"}}));
  c.start();
  const std::vector<CandidateNode> nodes = {{"hami-0", ""}, {"hami-1", ""}};

  // A mix: MiB and cores, a percentage, a sidecar without GPU before a
  // two-card worker, the whole card (exclusive cores), a bare count, two
  // GPU containers in one pod.
  const std::vector<std::string> pods = {
      pending_pod("mem-cores", json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}, {"nvidia.com/gpucores", "30"}})})),
      pending_pod("percent", json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "25"}})})),
      pending_pod("sidecar-worker", json::array({container("sidecar", json::object()),
                                                 container("worker", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "4096"}, {"nvidia.com/gpucores", "30"}})})),
      pending_pod("exclusive", json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "100"}})})),
      pending_pod("whole", json::array({container("main", {{"nvidia.com/gpu", "1"}})})),
      pending_pod("two-ctrs", json::array({container("a", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}}),
                                           container("b", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "5000"}})}),
                  {{"nvidia.com/use-gputype", "t4"}}),
  };
  for (const std::string& pod : pods) {
    const json p = json::parse(pod);
    const std::string name = p["metadata"]["name"], uid = p["metadata"]["uid"];
    const auto bound_to = create_schedule_bind(c, pod, nodes);
    ASSERT_TRUE(bound_to.ok()) << bound_to.message();
    const std::string& node_name = *bound_to;
    const auto chosen = ledger_uuids(c.daemon(), uid);
    // HAMi's node lock names the pod until its Allocate (the plugin's first lookup).
    const json n = json::parse(*c.api->get("nodes", "", node_name));
    EXPECT_NE(n["metadata"]["annotations"].value("hami.io/mutex.lock", "").find(",default," + name), std::string::npos) << name;

    // kubelet admits it: one Allocate call per container with nvidia.com/gpu.
    std::vector<int> counts;
    for (const auto& ctr : p["spec"]["containers"]) {
      const json limits = ctr.value("resources", json::object()).value("limits", json::object());
      if (limits.contains("nvidia.com/gpu")) counts.push_back(std::stoi(limits["nvidia.com/gpu"].get<std::string>()));
    }
    auto served = hami_allocate(*c.api, node_name, counts);
    ASSERT_TRUE(served.ok()) << name << ": " << served.message();
    EXPECT_EQ(served->pod, "default/" + name);
    EXPECT_EQ(served->devices, chosen) << name;
    const json after = json::parse(*c.api->get("pods", "default", name));
    EXPECT_EQ(after["metadata"]["annotations"]["hami.io/bind-phase"], "success") << name;
    c.api->update("pods", "default", name, [](const std::string& t) {
      json x = json::parse(t);
      x["status"]["phase"] = "Running";
      return x.dump();
    });
  }
  // The record's memory is what HAMi-core enforces: a quarter of 16384 for "percent".
  const json percent = json::parse(*c.api->get("pods", "default", "percent"));
  EXPECT_NE(percent["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"].get<std::string>().find(",NVIDIA,4096,0:;"), std::string::npos);
  const json sidecar = json::parse(*c.api->get("pods", "default", "sidecar-worker"));
  EXPECT_EQ(sidecar["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"].get<std::string>().substr(0, 5), ";GPU-")
      << "the sidecar's empty entry comes first";

  // After a restart, fracpack's ledger equals HAMi's scheduler's count.
  restart(c);
  const auto hami = hami_scheduler_usage(*c.api);
  EXPECT_EQ(ledger_as_hami_usage(c.daemon()), hami);
  int shares = 0;
  for (const auto& [card, use] : hami) shares += use.shares;
  EXPECT_EQ(shares, 8) << "the mix holds eight shares";
  EXPECT_EQ(compare_ledger(*c.api, c.daemon().state()), "") << "the ledger equals the annotations";
}

TEST(HamiProfile, ASplitCountOfOneServesOneShareACard) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kHami;
  Connected c(cfg);
  json devices = json::array({{{"id", "GPU-x"}, {"count", 1}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-A10"}, {"health", true}}});
  c.api->create("nodes", node("solo", {{"hami.io/node-nvidia-register", devices.dump()}}, json::object()));
  c.start();
  const auto small = json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}, {"nvidia.com/gpucores", "10"}})});
  for (const char* name : {"first", "second"}) c.api->create("pods", pending_pod(name, small));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-second").has_value(); }));
  ASSERT_TRUE(c.driver().introduce_and_bind(pending_pod("first", small), "solo").ok());
  CycleResult second = c.driver().schedule(pending_pod("second", small), {{"solo", ""}});
  EXPECT_TRUE(second.node.empty());
  ASSERT_EQ(second.filter.failed.count("solo"), 1u);
  EXPECT_NE(second.filter.failed["solo"].find("serve as many shares as their split count allows"), std::string::npos) << second.filter.failed["solo"];
}

// With HAMi's node lock, a second bind to a node waits for the first pod's
// Allocate (the device plugin releases the lock), then goes through; a
// lock that is never released refuses the bind at its timeout, naming the holder.
TEST(HamiProfile, BindsToOneNodeWaitForThePreviousPodsAllocate) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kHami;
  cfg.cluster.bind_timeout = std::chrono::milliseconds(1500);
  Connected c(cfg);
  json devices = json::array({{{"id", "GPU-x"}, {"count", 10}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-A10"}, {"health", true}}});
  c.api->create("nodes", node("solo", {{"hami.io/node-nvidia-register", devices.dump()}}, json::object()));
  c.start();
  const auto share = json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}, {"nvidia.com/gpucores", "10"}})});
  for (const char* name : {"a", "b", "c"}) c.api->create("pods", pending_pod(name, share));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-c").has_value(); }));
  ASSERT_TRUE(c.driver().introduce_and_bind(pending_pod("a", share), "solo").ok());
  auto b = c.driver().introduce_and_bind_async(pending_pod("b", share), "solo");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(json::parse(*c.api->get("pods", "default", "b"))["spec"].value("nodeName", ""), "") << "b waits for a's Allocate";
  auto served = hami_allocate(*c.api, "solo", {1});
  ASSERT_TRUE(served.ok()) << served.message();
  EXPECT_EQ(served->pod, "default/a");
  Status bound = b.get();
  ASSERT_TRUE(bound.ok()) << bound.message();
  // Nobody allocates b: c's bind runs out of time and says who holds the node.
  Status refused = c.driver().introduce_and_bind(pending_pod("c", share), "solo");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("node solo is locked by pod default/b"), std::string::npos) << refused.message();
  served = hami_allocate(*c.api, "solo", {1});
  ASSERT_TRUE(served.ok()) << served.message();
  EXPECT_EQ(served->pod, "default/b");
  EXPECT_EQ(compare_ledger(*c.api, c.daemon().state()), "") << "c's refused bind released its reservation";
}

// The hami profile, all else as in tests.
config::Config hami_config() {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kHami;
  return cfg;
}

// Nodes x, y and z, one A10 each (split count 10), and the daemon started.
void create_three_one_card_nodes(Connected& c) {
  for (const char* n : {"x", "y", "z"}) {
    json devices = json::array({{{"id", std::string("GPU-") + n}, {"count", 10}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-A10"}, {"health", true}}});
    c.api->create("nodes", node(n, {{"hami.io/node-nvidia-register", devices.dump()}}, json::object()));
  }
  c.start();
}

// One container asking for a tenth of a card and 1000 MiB.
json small_share() {
  return json::array({container("main", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}, {"nvidia.com/gpucores", "10"}})});
}

// A node whose lock another pod holds (bound, not yet allocated) is ranked
// last, so a burst spreads instead of queueing behind one node's lock.
TEST(HamiProfile, ANodeHeldByAnotherPodsLockIsRankedLast) {
  Connected c(hami_config());
  create_three_one_card_nodes(c);
  const json share = small_share();
  for (const char* name : {"a", "b", "p"}) c.api->create("pods", pending_pod(name, share));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-p").has_value(); }));
  ASSERT_TRUE(c.driver().introduce_and_bind(pending_pod("a", share), "y").ok());
  ASSERT_TRUE(hami_allocate(*c.api, "y", {1}).ok());  // y: a share, its lock released
  ASSERT_TRUE(c.driver().introduce_and_bind(pending_pod("b", share), "x").ok());  // x: a share, its lock held by b
  ASSERT_TRUE(Cluster::wait_for([&] { return !c.daemon().state().held_by({"x"}).empty() && c.daemon().state().held_by({"x"})[0] == "default/b"; }));
  const std::vector<CandidateNode> nodes = {{"x", ""}, {"y", ""}, {"z", ""}};
  auto scores = c.driver().prioritize(0, pending_pod("p", share), nodes);
  ASSERT_TRUE(scores.ok()) << scores.message();
  EXPECT_EQ((*scores)["x"], 0) << "held by b's lock";
  EXPECT_GT((*scores)["y"], 0);
  EXPECT_GT((*scores)["z"], 0);
  // Once b's Allocate released it, x packs as well as y again: the policy
  // ties them, and the first by name ranks first.
  ASSERT_TRUE(hami_allocate(*c.api, "x", {1}).ok());
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().held_by({"x"}).empty(); }));
  scores = c.driver().prioritize(0, pending_pod("p", share), nodes);
  ASSERT_TRUE(scores.ok()) << scores.message();
  EXPECT_EQ((*scores)["x"], 10);
  EXPECT_EQ((*scores)["y"], 9);
}

// A node this replica is binding a pod to ranks last before its lock is
// visible: the cycles kube-scheduler runs while a bind is in flight (its
// binds are asynchronous) go to other nodes instead of queueing behind it.
TEST(HamiProfile, ANodeWithABindInFlightIsRankedLastBeforeItsLockIsSeen) {
  Connected c(hami_config());
  create_three_one_card_nodes(c);
  const json share = small_share();
  for (const char* name : {"a", "p"}) c.api->create("pods", pending_pod(name, share));
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-p").has_value(); }));
  const std::vector<CandidateNode> nodes = {{"x", ""}, {"y", ""}, {"z", ""}};
  auto before = c.driver().prioritize(0, pending_pod("p", share), nodes);
  ASSERT_TRUE(before.ok()) << before.message();
  ASSERT_EQ((*before)["x"], 10) << "three empty nodes tie: the first by name ranks first";
  ASSERT_EQ((*before)["y"], 9);
  ASSERT_EQ((*before)["z"], 9);

  // The API server answers slowly: a's bind to x (its lock patch, then the Binding) is in flight.
  ASSERT_TRUE(c.driver().introduce(pending_pod("a", share)).ok());
  c.api->faults().slow_ms = 600;
  auto a = std::async(std::launch::async, [&] { return c.driver().bind("default", "a", "u-a", "x"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_TRUE(c.daemon().state().held_by({"x"}).empty()) << "the lock is not visible yet";
  auto during = c.driver().prioritize(0, pending_pod("p", share), nodes);
  ASSERT_TRUE(during.ok()) << during.message();
  EXPECT_EQ((*during)["x"], 0) << "a's bind to x is in flight";
  EXPECT_GT((*during)["y"], 0);
  ASSERT_TRUE(a.get().ok());
  c.api->faults().slow_ms = 0;

  // Bound and allocated: x ranks with the others again.
  ASSERT_TRUE(hami_allocate(*c.api, "x", {1}).ok());
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().held_by({"x"}).empty(); }));
  auto after = c.driver().prioritize(0, pending_pod("p", share), nodes);
  ASSERT_TRUE(after.ok()) << after.message();
  EXPECT_GT((*after)["x"], 0);
}

TEST(GpushareProfile, GpusharesDevicePluginFindsEveryPodAndTheExtenderCountsTheSame) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kGpushare;
  Connected c(cfg);
  // Two nodes of 2 cards of 15 GiB (capacity 30 over 2).
  for (const char* n : {"share-0", "share-1"}) {
    c.api->create("nodes", node(n, json::object(), {{"aliyun.com/gpu-mem", "30"}, {"aliyun.com/gpu-count", "2"}}));
  }
  c.start();
  const std::vector<CandidateNode> nodes = {{"share-0", ""}, {"share-1", ""}};
  const std::vector<std::pair<std::string, int>> pods = {{"a", 4}, {"b", 8}, {"c", 4}, {"d", 12}, {"e", 15}, {"f", 2}, {"g", 3}};
  for (const auto& [name, units] : pods) {
    // A sidecar without GPU beside the gpu-mem container is fine for gpushare.
    const std::string pod = pending_pod(name, json::array({container("proxy", json::object()),
                                                           container("main", {{"aliyun.com/gpu-mem", std::to_string(units)}})}));
    const std::string uid = "u-" + name;
    const auto bound_to = create_schedule_bind(c, pod, nodes);
    ASSERT_TRUE(bound_to.ok()) << bound_to.message();
    const std::string& node_name = *bound_to;
    const auto chosen = ledger_uuids(c.daemon(), uid);
    auto served = gpushare_allocate(*c.api, node_name, units);
    ASSERT_TRUE(served.ok()) << name << ": " << served.message();
    EXPECT_EQ(served->pod, "default/" + name);
    EXPECT_EQ(std::vector<std::vector<std::string>>{{std::to_string(served->index)}}, chosen) << name;
    const json bound = json::parse(*c.api->get("pods", "default", name));
    EXPECT_EQ(bound["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_DEV"], "15");
    EXPECT_EQ(bound["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"], std::to_string(units));
  }
  restart(c);
  const auto extender = gpushare_extender_usage(*c.api);
  EXPECT_EQ(ledger_as_gpushare_usage(c.daemon()), extender);
  int64_t used = 0;
  for (const auto& [k, v] : extender) used += v;
  EXPECT_EQ(used, 48);
  EXPECT_EQ(compare_ledger(*c.api, c.daemon().state()), "");
}

// gpushare's unhealthy-gpu-<node> ConfigMap in kube-system, watched: while
// it lists card 0, no share goes there; deleted, the card serves again.
TEST(GpushareProfile, TheUnhealthyCardConfigMapIsWatched) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kGpushare;
  Connected c(cfg);
  c.api->create("nodes", node("share-0", json::object(), {{"aliyun.com/gpu-mem", "30"}, {"aliyun.com/gpu-count", "2"}}));
  const json unhealthy = {{"apiVersion", "v1"}, {"kind", "ConfigMap"},
                          {"metadata", {{"name", "unhealthy-gpu-share-0"}, {"namespace", "kube-system"}}}, {"data", {{"gpus", "0"}}}};
  c.api->create("configmaps", unhealthy.dump());
  c.start();
  auto schedulable = [&](int index) {
    return c.daemon().state().read([&](const scheduling::Ledger& l) {
      const auto* n = l.node("share-0");
      return n != nullptr && n->cards()[static_cast<size_t>(index)].schedulable();
    });
  };
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().ready() && !schedulable(0) && schedulable(1); }));
  const std::vector<CandidateNode> nodes = {{"share-0", ""}};
  auto pod = [](const std::string& name, int gib) {
    return pending_pod(name, json::array({container("main", {{"aliyun.com/gpu-mem", std::to_string(gib)}})}));
  };
  auto first = create_schedule_bind(c, pod("a", 10), nodes);
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(ledger_uuids(c.daemon(), "u-a"), (std::vector<std::vector<std::string>>{{"1"}})) << "card 1: card 0 is unhealthy";
  // 5 GiB left on card 1 and card 0 out: 10 GiB fits nowhere.
  const std::string big = pod("b", 10);
  c.api->create("pods", big);
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-b").has_value(); }));
  EXPECT_TRUE(c.driver().schedule(big, nodes).node.empty());
  ASSERT_TRUE(c.api->remove("configmaps", "kube-system", "unhealthy-gpu-share-0"));
  ASSERT_TRUE(Cluster::wait_for([&] { return schedulable(0); }));
  CycleResult cycle = c.driver().schedule(big, nodes);
  ASSERT_EQ(cycle.node, "share-0") << cycle.error;
  ASSERT_TRUE(c.driver().bind("default", "b", "u-b", "share-0").ok());
  EXPECT_EQ(ledger_uuids(c.daemon(), "u-b"), (std::vector<std::vector<std::string>>{{"0"}}));
}

TEST(Profiles, ADeploymentLeavesAnotherProfilesNodesAlone) {
  config::Config cfg = test_config();
  cfg.contract.profile = k8s::Profile::kGpushare;
  Connected c(cfg);
  json devices = json::array({{{"id", "GPU-h"}, {"count", 4}, {"devmem", 16384}, {"devcore", 100}, {"type", "NVIDIA-T4"}, {"health", true}}});
  c.api->create("nodes", node("hami-node", {{"hami.io/node-nvidia-register", devices.dump()}},
                              {{"aliyun.com/gpu-mem", "15"}, {"aliyun.com/gpu-count", "1"}}));
  c.start();
  const std::string pod = pending_pod("p", json::array({container("main", {{"aliyun.com/gpu-mem", "2"}})}));
  c.api->create("pods", pod);
  ASSERT_TRUE(Cluster::wait_for([&] { return c.daemon().state().pod("u-p").has_value(); }));
  CycleResult cycle = c.driver().schedule(pod, {{"hami-node", ""}});
  EXPECT_TRUE(cycle.node.empty());
  std::string reason = cycle.filter.failed.count("hami-node") ? cycle.filter.failed["hami-node"] : cycle.filter.unresolvable["hami-node"];
  EXPECT_NE(reason.find("hami profile's node agent (annotation hami.io/node-nvidia-register)"), std::string::npos) << reason;
}

}  // namespace
}  // namespace fracpack::testing::peer_profiles_test
