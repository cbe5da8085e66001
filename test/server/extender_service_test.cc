// The judging verbs over HTTP (server/extender_service.h: filter,
// prioritize, preempt), as kube-scheduler's HTTPExtender calls them (through
// the test scheduler driver), against `fracpack serve --snapshot` state or
// the fake API server; and the reconciler's over-commit report. bind:
// test/server/bind_service_test.cc.
#include <algorithm>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/snapshot.h"
#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing::extender_service_test {
namespace {

using json = nlohmann::json;

std::vector<CandidateNode> names(std::initializer_list<const char*> ns) {
  std::vector<CandidateNode> out;
  for (const char* n : ns) out.push_back({n, ""});
  return out;
}

TEST(ExtenderFilter, NamesModeKeepsFittingNodesAndGivesEveryRejectionAReason) {
  auto objects = small_cluster();
  // n1 card 0 and 1 are 80 % taken.
  objects.push_back(gpu_pod("busy-0", "u-busy-0", 80, 0, 1, {}, 0, "n1"));
  objects.push_back(gpu_pod("busy-1", "u-busy-1", 80, 0, 1, {}, 0, "n1"));
  Standalone s(objects);
  // Bound pods in a snapshot carry their allocation record; without one they
  // are inferred fail-closed. Use a model constraint to get an unresolvable node.
  const std::string pod = gpu_pod("p", "u-p", 50, 0, 1, {{"fracpack.io/gpu-model", "Tesla-T4"}});
  auto f = s.driver().filter(0, pod, names({"n1", "n2", "n-a100", "ghost"}));
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(f->failed.count("n1"), 1u) << "n1's cards are taken";
  EXPECT_EQ(f->unresolvable.count("n-a100"), 1u) << "wrong model can never fit";
  ASSERT_EQ(f->failed.count("ghost") + f->unresolvable.count("ghost"), 1u);
  const std::string ghost = f->failed.count("ghost") ? f->failed["ghost"] : f->unresolvable["ghost"];
  EXPECT_NE(ghost.find("not"), std::string::npos) << ghost;
  for (const auto& [n, why] : f->failed) EXPECT_FALSE(why.empty()) << n;
  for (const auto& [n, why] : f->unresolvable) EXPECT_FALSE(why.empty()) << n;
}

// The namespace GPU quota (scheduling/quota.h): a pod that cannot fit its
// namespace's remaining quota fails every node, the reason naming the
// quota object, the key, used, asked and hard (kubectl describe shows it);
// other namespaces are not limited by it.
TEST(ExtenderFilter, APodPastItsNamespacesQuotaFailsEveryNodeWithTheQuotaNamed) {
  auto objects = small_cluster();
  objects.push_back(in_namespace(gpu_pod("running", "u-running", 30, 0, 1, {}, 0, "n1"), "team-a"));
  objects.push_back(resource_quota("team-a", "gpu-quota", {{"limits.fracpack.io/gpu", "2"}, {"requests.cpu", "8"}}));
  Standalone s(objects);
  const std::string two_cards = in_namespace(gpu_pod("p", "u-p", 20, 0, 2), "team-a");
  for (int round = 0; round < 2; ++round) {  // the second from kept replies, were quotas not checked first
    auto f = s.driver().filter(0, two_cards, names({"n1", "n2", "n-a100"}));
    ASSERT_TRUE(f) << f.message();
    EXPECT_TRUE(f->nodes.empty());
    ASSERT_EQ(f->failed.size(), 3u);
    for (const auto& [node, why] : f->failed) {
      EXPECT_EQ(why, "pod team-a/p: exceeds ResourceQuota team-a/gpu-quota limits.fracpack.io/gpu: used 1 card, asked 2 cards, hard 2 cards")
          << node;
    }
  }
  // One card fits the quota; the same pod in another namespace is not limited.
  auto one = s.driver().filter(0, in_namespace(gpu_pod("q", "u-q", 20), "team-a"), names({"n1", "n2"}));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->nodes.size(), 2u);
  auto other = s.driver().filter(0, in_namespace(gpu_pod("r", "u-r", 20, 0, 2), "team-b"), names({"n1", "n2"}));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->nodes.size(), 2u);
}

// A share sized by the card (percent of its memory) counts the MiB of the
// card each node would give: within the quota on a 16 GiB card, past it on
// an 80 GiB one. Names mode and full Node objects alike.
TEST(ExtenderFilter, AShareSizedByTheCardIsCheckedOnTheCardsEachNodeWouldGive) {
  auto objects = small_cluster();
  objects.push_back(resource_quota("team-b", "memory", {{"limits.fracpack.io/gpu-memory", "20000"}}));
  Standalone s(objects);
  json pod = json::parse(in_namespace(gpu_pod("p", "u-p", 20), "team-b"));
  for (auto* r : {&pod["spec"]["containers"][0]["resources"]["limits"], &pod["spec"]["containers"][0]["resources"]["requests"]}) {
    (*r)["fracpack.io/gpu-memory-percent"] = "50";
  }
  for (int round = 0; round < 2; ++round) {
    auto f = s.driver().filter(0, pod.dump(), names({"n1", "n2", "n-a100"}));
    ASSERT_TRUE(f) << f.message();
    EXPECT_EQ(f->nodes, (std::vector<std::string>{"n1", "n2"}));
    ASSERT_EQ(f->failed.count("n-a100"), 1u);
    EXPECT_EQ(f->failed["n-a100"],
              "pod team-b/p: exceeds ResourceQuota team-b/memory limits.fracpack.io/gpu-memory: used 0 MiB, asked 40960 MiB, hard 20000 MiB");
  }
  std::vector<CandidateNode> full;
  for (const std::string& n : small_cluster()) full.push_back({json::parse(n)["metadata"]["name"], n});
  auto f = s.driver().filter(0, pod.dump(), full);
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(f->failed.count("n-a100"), 1u);
}

TEST(ExtenderFilter, FullNodesModeTakesCardsFromTheObjectsAndAnswersWithNodes) {
  Standalone s(small_cluster());
  ExtenderConfig e;
  e.url_prefix = s.url() + "/";
  e.node_cache_capable = false;
  auto d = SchedulerDriver::create({e});
  ASSERT_TRUE(d);
  // n9 is unknown to fracpack: its Node object describes 1 card of 16 GiB.
  std::vector<CandidateNode> nodes = {{"n1", node_object("n1", 2)}, {"n9", node_object("n9", 1)}, {"n-a100", ""}};
  json a100 = json::parse(node_object("n-a100", 1, 81920));
  a100["metadata"]["labels"]["nvidia.com/gpu.product"] = "A100-SXM4-80GB";
  nodes[2].json = a100.dump();
  const std::string pod = gpu_pod("p", "u-p", 50, 20000);  // 20 000 MiB: only the A100 has room
  auto r = (*d)->post(0, "filter", extender_args_json(pod, nodes, false));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json reply = json::parse(r->body);
  ASSERT_TRUE(reply["NodeNames"].is_null()) << "full-object mode answers with Nodes";
  ASSERT_EQ(reply["Nodes"]["items"].size(), 1u) << r->body;
  EXPECT_EQ(reply["Nodes"]["items"][0], a100) << "passed nodes are returned unmodified";
  EXPECT_TRUE(reply["FailedAndUnresolvableNodes"].contains("n9")) << r->body;
  EXPECT_TRUE(reply["FailedAndUnresolvableNodes"].contains("n1")) << r->body;
  auto f = (*d)->filter(0, pod, nodes);
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes, std::vector<std::string>{"n-a100"});

  // Only a node fracpack does not know is decoded beyond its name: one that
  // cannot be read fails alone, with the item and the field named; a known
  // node is judged by the ledger's view of it, whatever else its object says.
  json broken = json::parse(node_object("n8", 1));
  broken["metadata"]["labels"] = 5;
  json known = json::parse(node_object("n2", 1));
  known["metadata"]["labels"] = 5;
  nodes.push_back({"n1", node_object("n1", 2)});  // a repeat, dropped: n8 is still item 4
  nodes.push_back({"n8", broken.dump()});
  nodes.push_back({"n2", known.dump()});
  const std::string small = gpu_pod("q", "u-q", 50);
  auto r2 = (*d)->post(0, "filter", extender_args_json(small, nodes, false));
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  json reply2 = json::parse(r2->body);
  const json failed = reply2["FailedNodes"];
  ASSERT_TRUE(failed.contains("n8")) << r2->body;
  EXPECT_NE(failed["n8"].get<std::string>().find("Nodes.items[4] cannot be read"), std::string::npos) << failed["n8"];
  EXPECT_NE(failed["n8"].get<std::string>().find("labels"), std::string::npos) << failed["n8"];
  bool n2_passed = false;
  for (const auto& item : reply2["Nodes"]["items"]) n2_passed |= item["metadata"]["name"] == "n2";
  EXPECT_TRUE(n2_passed) << r2->body;
}

TEST(ExtenderFilter, EscapedNamesAreDecodedAndRepeatedListsFollowNodeChanges) {
  Connected c;
  c.api->create("nodes", node_object("n1", 1));
  c.start();
  const std::string pod = gpu_pod("p", "u-p", 50);
  // "n\u0031" is "n1" (Go escapes only <, >, & and controls, but any JSON
  // escape is valid).
  auto r = c.driver().post(0, "filter", "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":[\"n\\u0031\",\"n2\"]}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json::array({"n1"})) << r->body;
  // The same list twice (the second answer reuses the first's lookups),
  // then a node joins: the same list now finds it.
  for (int round = 0; round < 2; ++round) {
    auto f = c.driver().filter(0, pod, names({"n1", "n2"}));
    ASSERT_TRUE(f) << f.message();
    EXPECT_EQ(f->nodes, std::vector<std::string>{"n1"});
    EXPECT_EQ(f->failed.count("n2") + f->unresolvable.count("n2"), 1u);
  }
  c.api->create("nodes", node_object("n2", 1));
  ASSERT_TRUE(Cluster::wait_for([&] {
    auto f = c.driver().filter(0, pod, names({"n1", "n2"}));
    return f && f->nodes.size() == 2;
  }));
  c.api->remove("nodes", "", "n1");
  ASSERT_TRUE(Cluster::wait_for([&] {
    auto f = c.driver().filter(0, pod, names({"n1", "n2"}));
    return f && f->nodes == std::vector<std::string>{"n2"};
  }));
}

TEST(ExtenderFilter, PodsWithoutFracpackResourcesPassUntouched) {
  Standalone s(small_cluster());
  auto f = s.driver().filter(0, cpu_pod("web", "u-web"), names({"n1", "ghost", "n2"}));
  ASSERT_TRUE(f) << f.message();
  EXPECT_EQ(f->nodes, (std::vector<std::string>{"n1", "ghost", "n2"}));
  EXPECT_TRUE(f->failed.empty());
}

TEST(ExtenderFilter, NullFieldsEmptyListsAndOneNominatedNode) {
  Standalone s(small_cluster());
  const std::string pod = gpu_pod("p", "u-p", 50);
  // Empty list: 200, an empty list back (every node filtered out, none to judge).
  auto r = s.driver().post(0, "filter", "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":[]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json::array());
  // Both null: nothing to filter; no error.
  r = s.driver().post(0, "filter", "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":null}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["Error"], "");
  // Keys in another case and null maps (Go decodes case-insensitively).
  r = s.driver().post(0, "filter", "{\"pod\":" + pod + ",\"nodes\":null,\"nodenames\":[\"n1\"]}");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json::array({"n1"})) << r->body;
  // A nominated node: a one-node filter, and the cycle uses it without prioritize.
  CycleResult c = s.driver().schedule(pod, names({"n2"}));
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.node, "n2");
  EXPECT_FALSE(c.prioritized);
}

TEST(ExtenderPrioritize, OnlyThePoliciesBestNodeGetsTenAndBindAgreesWithIt) {
  auto objects = small_cluster();
  objects.push_back(gpu_pod("half", "u-half", 50, 0, 1, {}, 0, "n2"));
  objects[objects.size() - 1] = [&] {
    json p = json::parse(objects.back());
    scheduling::Allocation a;
    a.node = "n2";
    a.containers.push_back({"main", false, {scheduling::CardShare{0, "", 0, 500}}});
    p["metadata"]["annotations"]["fracpack.io/allocation"] = k8s::format_allocation(a);
    return p.dump();
  }();
  // The workload (the snapshot's pods, no ConfigMap) also has whole-card
  // pods, so a half card on an empty card fragments it.
  objects.push_back(gpu_pod("whole", "u-whole", 0, 0, 1));
  objects.push_back(gpu_pod("p", "u-p", 50));
  Standalone s(objects);
  const std::string pod = objects.back();
  auto scores = s.driver().prioritize(0, pod, names({"n1", "n2", "n-a100"}));
  ASSERT_TRUE(scores) << scores.message();
  int tens = 0;
  std::string best;
  for (const auto& [n, sc] : *scores) {
    EXPECT_GE(sc, 0);
    EXPECT_LE(sc, 10);
    if (sc == 10) {
      ++tens;
      best = n;
    }
  }
  EXPECT_EQ(tens, 1) << "the best node alone gets 10\n" << http_get(s.url(), "/debug/ledger").body;
  EXPECT_EQ(best, "n2") << "a half card packs beside the other half";
  CycleResult c = s.driver().schedule(pod, names({"n1", "n2", "n-a100"}));
  ASSERT_EQ(c.node, "n2") << c.error;
  ASSERT_TRUE(s.driver().bind("default", "p", "u-p", "n2").ok());
  auto placed = s.state().pod("u-p");
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node_name, "n2");
  auto a = k8s::parse_allocation(*k8s::find(placed->meta.annotations, "fracpack.io/allocation"));
  ASSERT_TRUE(a);
  ASSERT_EQ(a->containers.size(), 1u);
  EXPECT_EQ(a->containers[0].cards[0].index, 0) << "bind takes the card prioritize scored: beside the other half";
}

TEST(ExtenderPrioritize, AmongEquallyGoodNodesTheFirstByNameAloneGetsTen) {
  // Three identical idle nodes: the policy ties them; kube-scheduler would
  // pick at random among equal totals, the replay takes the first by name.
  std::vector<std::string> objects;
  for (const char* n : {"n-c", "n-a", "n-b"}) objects.push_back(node_object(n, 2));
  objects.push_back(gpu_pod("p", "u-p", 50));
  Standalone s(objects);
  auto scores = s.driver().prioritize(0, objects.back(), names({"n-c", "n-a", "n-b"}));
  ASSERT_TRUE(scores) << scores.message();
  EXPECT_EQ(scores->at("n-a"), 10);
  EXPECT_EQ(scores->at("n-b"), 9);
  EXPECT_EQ(scores->at("n-c"), 9);
}

// A pod bound to `node` holding `cores` percent of card 0 (its record, unsigned).
std::string bound_on_card0(const std::string& name, int cores, int priority, const std::string& node) {
  json p = json::parse(gpu_pod(name, "u-" + name, cores, 0, 1, {}, priority, node));
  scheduling::Allocation a;
  a.node = node;
  a.containers.push_back({"main", false, {scheduling::CardShare{0, "", 0, cores * 10}}});
  p["metadata"]["annotations"]["fracpack.io/allocation"] = k8s::format_allocation(a);
  return p.dump();
}

TEST(ExtenderPreempt, ChoosesTheFewestLowestPriorityVictimsThatFreeACard) {
  std::vector<std::string> objects = {node_object("solo", 1), node_object("other", 1)};
  auto bound = [&](const std::string& name, int cores, int priority, const std::string& node) {
    objects.push_back(bound_on_card0(name, cores, priority, node));
  };
  bound("low-small", 20, 1, "solo");
  bound("low-big", 40, 1, "solo");
  bound("high", 40, 100, "solo");
  bound("other-pod", 100, 1, "other");
  Standalone s(objects);
  const std::map<std::string, std::vector<std::string>> candidates = {{"solo", {"u-low-small", "u-low-big", "u-high"}},
                                                                       {"other", {"u-unknown"}}};
  // 30 % needs one victim: the low-priority one holding most.
  auto r = s.driver().preempt(0, gpu_pod("vip", "u-vip", 30, 0, 1, {}, 1000), candidates);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->count("solo"), 1u);
  EXPECT_EQ(r->at("solo"), std::vector<std::string>{"u-low-big"});
  EXPECT_EQ(r->count("other"), 0u) << "victims that free nothing here: the node is dropped";
  // 50 % needs two: both low-priority pods, never the high one.
  r = s.driver().preempt(0, gpu_pod("vip2", "u-vip2", 50, 0, 1, {}, 1000), candidates);
  ASSERT_TRUE(r) << r.message();
  auto victims = r->at("solo");
  std::sort(victims.begin(), victims.end());
  EXPECT_EQ(victims, (std::vector<std::string>{"u-low-big", "u-low-small"}));
  // 100 % fits only if all three go: the node is offered with all of them.
  r = s.driver().preempt(0, gpu_pod("vip3", "u-vip3", 0, 0, 1, {}, 1000), candidates);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->at("solo").size(), 3u);
}

// A namespace over its GPU quota gets no victims from other namespaces
// (they would be evicted for nothing: its bind is refused anyway); victims
// of its own namespace that free enough of its quota are offered.
TEST(ExtenderPreempt, NoVictimsForAPodItsNamespacesQuotaRefuses) {
  std::vector<std::string> objects = {node_object("solo", 1), resource_quota("team", "gpu", {{"limits.fracpack.io/gpu-cores", "50"}})};
  objects.push_back(bound_on_card0("other-team", 60, 1, "solo"));
  objects.push_back(in_namespace(bound_on_card0("own", 40, 1, "solo"), "team"));
  Standalone s(objects);
  const std::map<std::string, std::vector<std::string>> none = {{"solo", {}}};
  // 40 percent: the card is short (100 held) and so is the quota (40 of 50
  // used): evicting the other team's pod frees the card but not the quota.
  auto r = s.driver().preempt(0, in_namespace(gpu_pod("vip", "u-vip", 40, 0, 1, {}, 1000), "team"), none);
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->count("solo"), 0u) << "no victims: the pod's namespace is over its quota either way";
  // Proposed victims including the team's own pod: it frees 40 of the quota.
  const std::map<std::string, std::vector<std::string>> own = {{"solo", {"u-own"}}};
  r = s.driver().preempt(0, in_namespace(gpu_pod("vip2", "u-vip2", 40, 0, 1, {}, 1000), "team"), own);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->count("solo"), 1u);
  EXPECT_EQ(r->at("solo"), std::vector<std::string>{"u-own"});
  // Without the quota the other team's pod would be chosen.
  r = s.driver().preempt(0, in_namespace(gpu_pod("vip3", "u-vip3", 40, 0, 1, {}, 1000), "elsewhere"), none);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->count("solo"), 1u);
}

// Preempt counts the quota as filter and bind do (scheduling/quota_gate.h):
// on the card the pod would be given once the victims are gone. It used to
// bound a share sized by the card by the node's largest card, and refused a
// node whose small card, once freed, keeps the namespace within its quota:
// the pod then stayed pending for good, though filter would place it there.
TEST(ExtenderPreempt, CountsTheQuotaOnTheCardThePodWouldBeGivenOnceTheVictimsAreGone) {
  json mixed = json::parse(node_object("mixed", 2));
  mixed["metadata"]["annotations"]["fracpack.io/gpu-devices"] =
      json::array({{{"index", 0}, {"memoryMiB", 16384}, {"model", "Tesla-T4"}}, {{"index", 1}, {"memoryMiB", 81920}, {"model", "A100"}}})
          .dump();
  std::vector<std::string> objects = {mixed.dump(), resource_quota("team", "memory", {{"limits.fracpack.io/gpu-memory", "20000"}})};
  objects.push_back(bound_on_card0("low", 60, 1, "mixed"));
  json holder = json::parse(gpu_pod("holder", "u-holder", 100, 0, 1, {}, 5000, "mixed"));
  scheduling::Allocation a;
  a.node = "mixed";
  a.containers.push_back({"main", false, {scheduling::CardShare{1, "", 0, 1000}}});
  holder["metadata"]["annotations"]["fracpack.io/allocation"] = k8s::format_allocation(a);
  objects.push_back(holder.dump());
  Standalone s(objects);
  json pod = json::parse(in_namespace(gpu_pod("vip", "u-vip", 50, 0, 1, {}, 1000), "team"));
  for (auto* r : {&pod["spec"]["containers"][0]["resources"]["limits"], &pod["spec"]["containers"][0]["resources"]["requests"]}) {
    (*r)["fracpack.io/gpu-memory-percent"] = "50";
  }
  auto r = s.driver().preempt(0, pod.dump(), {{"mixed", {}}});
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->count("mixed"), 1u) << "half of the freed 16 GiB card is 8192 MiB, within 20000";
  EXPECT_EQ(r->at("mixed"), std::vector<std::string>{"u-low"});
  // Half of the 80 GiB card would not be: with that card the only one, no victims.
  json big = json::parse(node_object("big", 1, 81920));
  Standalone b({big.dump(), resource_quota("team", "memory", {{"limits.fracpack.io/gpu-memory", "20000"}}), bound_on_card0("low", 60, 1, "big")});
  r = b.driver().preempt(0, pod.dump(), {{"big", {}}});
  ASSERT_TRUE(r) << r.message();
  EXPECT_EQ(r->count("big"), 0u);
}

// Found against real kube-scheduler calls (issue 31): the contract's
// resources are ignoredByScheduler, so kube-scheduler's dry run proposes the
// GPU nodes with no victims at all (the pod "fits" there by its in-tree
// filters); fracpack answered {} and no GPU pod could ever preempt. And a
// node where the pod fits already came back with zero victims, which
// kube-scheduler refuses ("expected at least one victim pod on node").
TEST(ExtenderPreempt, ChoosesVictimsItselfWhereKubeSchedulerProposesNoneAndNeverAnswersZero) {
  std::vector<std::string> objects = {node_object("full", 1), node_object("free", 1)};
  auto bound = [&](const std::string& name, int cores, int priority, const std::string& node) {
    objects.push_back(bound_on_card0(name, cores, priority, node));
  };
  bound("low", 60, 1, "full");
  bound("peer", 40, 1000, "full");  // as important as the preemptor: never a victim
  Standalone s(objects);
  const std::map<std::string, std::vector<std::string>> none = {{"full", {}}, {"free", {}}};
  auto r = s.driver().preempt(0, gpu_pod("vip", "u-vip", 50, 0, 1, {}, 1000), none);
  ASSERT_TRUE(r) << r.message();
  ASSERT_EQ(r->count("full"), 1u);
  EXPECT_EQ(r->at("full"), std::vector<std::string>{"u-low"});
  EXPECT_EQ(r->count("free"), 0u) << "it fits there already: nothing to evict, and zero victims are an error";
  // Only equals or betters could free enough: no preemption there.
  r = s.driver().preempt(0, gpu_pod("vip2", "u-vip2", 0, 0, 1, {}, 1000), {{"full", {}}});
  ASSERT_TRUE(r) << r.message();
  EXPECT_TRUE(r->empty());
  for (const auto& [node, victims] : *r) EXPECT_FALSE(victims.empty()) << node;
}

}  // namespace
}  // namespace fracpack::testing::extender_service_test

namespace fracpack::testing::extender_service_test {
namespace {

// What the fence cannot close (a Binding another writer posted after the
// fence's read) is never silent: the reconciler reports a card the API
// server shows over-committed with a gauge, a log line and a Warning Event
// on each pod holding it.
TEST(Reconciler, ReportsACardTwoSchedulersOverCommitted) {
  config::Config cfg = test_config();
  cfg.cluster.events = true;
  cfg.cluster.reconcile_interval = std::chrono::milliseconds(100);
  Connected c(cfg);
  c.api->create("nodes", node_object("solo", 1));
  // Two fracpack replicas that both believed they led (each record signed).
  for (const char* name : {"first", "second"}) {
    c.api->create("pods", gpu_pod(name, std::string("u-") + name, 60, 0, 1,
                                  signed_record(fracpack_contract(), std::string("u-") + name, "solo",
                                                {{"fracpack.io/allocation", allocation_annotation("solo", {{0, 60}})}}),
                                  0, "solo"));
  }
  c.start();
  ASSERT_TRUE(Cluster::wait_for([&] { return metric_sum(c.url(), "fracpack_overcommitted_cards") == 1; }));
  std::vector<nlohmann::json> warnings;
  ASSERT_TRUE(Cluster::wait_for([&] {
    warnings.clear();
    for (const auto& e : c.api->list("events")) {
      const auto j = nlohmann::json::parse(e);
      if (j.value("reason", "") == "GPUOverCommitted" && j.value("type", "") == "Warning") warnings.push_back(j);
    }
    return warnings.size() == 2;
  })) << "one Event per pod holding the card";
  for (const auto& w : warnings) {
    // Each owner hears of their own pod only: the other may be another team's.
    const std::string self = w["involvedObject"].value("name", "");
    const std::string other = self == "first" ? "second" : "first";
    EXPECT_EQ(w["message"].get<std::string>().find(other), std::string::npos) << w.dump();
    EXPECT_NE(w["message"].get<std::string>().find("this pod and 1 other"), std::string::npos) << w.dump();
  }
  // One leaves: the card drains and the gauge follows.
  c.api->remove("pods", "default", "second");
  EXPECT_TRUE(Cluster::wait_for([&] { return metric_sum(c.url(), "fracpack_overcommitted_cards") == 0; }));
}

}  // namespace
}  // namespace fracpack::testing::extender_service_test
