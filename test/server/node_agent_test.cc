// server/node_agent: the whole loop on one GPU node, end to end. The fake
// API server, `fracpack serve` (the extender), the scheduler driver, the
// node agent (fake NVML through its real dlopen path) and the kubelet
// double over the real device plugin gRPC API: the agent publishes the
// cards, the extender places pods of every shape on them and records the
// cards, and kubelet's Allocate hands each container exactly those cards.
#include "server/node_agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "k8s/contract/fracpack.h"
#include "node/agent_state.h"
#include "server/cmd/args.h"
#include "test/support/cluster_harness.h"
#include "test/support/kubelet_double.h"
#include "test/support/node_cluster.h"
#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace fracpack::server::node_agent_test {
namespace {

using namespace std::chrono_literals;
using fracpack::testing::Cluster;
using fracpack::testing::Connected;
using fracpack::testing::test_config;
using nlohmann::json;
using test::KubeletDouble;

constexpr const char* kNode = testing::kGpuNode;
using testing::Ctr;
using testing::kIdsPerCard;
using testing::kubelet_order;

std::string uuid_of(int card) { return testing::card_uuid(card); }
std::string pod(const std::string& name, const std::vector<Ctr>& containers) { return testing::node_pod(name, containers); }

class NodeAgentEndToEnd : public testing::NodeCluster {};

TEST_F(NodeAgentEndToEnd, PublishesTheCardsOnceWithTheirIdsAsMaxSharers) {
  const std::vector<scheduling::Card> cards = published_cards();
  ASSERT_EQ(cards.size(), 4u);
  EXPECT_EQ(cards[3].uuid, uuid_of(3));
  EXPECT_EQ(cards[3].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(cards[3].memory_mib, 40960);
  EXPECT_EQ(cards[3].numa, 1);
  EXPECT_EQ(cards[3].max_sharers, kIdsPerCard);
  EXPECT_EQ(kubelet_->devices().size(), 4u * kIdsPerCard);
  // Written when it changes (at most twice here: before kubelet registered
  // the plugin, "registered":false, then offered); the periodic re-reads
  // find it unchanged and write nothing.
  const uint64_t written = agent_->annotation_writes();
  EXPECT_GE(written, 1u);
  EXPECT_LE(written, 2u);
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(agent_->annotation_writes(), written);
  // Removed by hand: put back at the next re-read.
  cluster_->api->update("nodes", "", kNode, [](const std::string& text) {
    json j = json::parse(text);
    j["metadata"]["annotations"].erase("fracpack.io/gpu-devices");
    return j.dump();
  });
  EXPECT_TRUE(Cluster::wait_for([&] { return agent_->annotation_writes() == written + 1; }, 5s));
}

TEST_F(NodeAgentEndToEnd, PodsOfEveryShapeGetExactlyTheirRecordedCards) {
  const std::vector<std::pair<std::string, std::vector<Ctr>>> pods = {
      {"share", {{"main", false, 1, 50, 8192}}},
      {"two-cards", {{"main", false, 2}}},
      {"init-and-two", {{"setup", true, 1, 10, 1024}, {"app", false, 1, 30, 4096}, {"sidecar", false, 1, 10, 1024}}},
      {"share-b", {{"main", false, 1, 25, 4096}}},
  };
  for (const auto& [name, containers] : pods) {
    const std::string uid = bind(name, containers);
    ASSERT_NO_FATAL_FAILURE(admit_and_check(name, uid, containers));
    set_running(name);
  }
  // The share's limits reach the container.
  auto again = recorded("share");
  ASSERT_EQ(again.at("main").size(), 1u);
  const std::string metrics = agent_->metrics_text();
  EXPECT_NE(metrics.find("fracpack_node_agent_allocations_total 6"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fracpack_node_agent_allocation_failures_total 0"), std::string::npos) << metrics;
  EXPECT_EQ(mismatches_, 0);
  std::printf("[ figures  ] %d pods, %d containers admitted through kubelet's Allocate (%d calls), %d given other cards than recorded\n",
              pods_admitted_, containers_admitted_, static_cast<int>(agent_->plugin_stats()->allocations.load()), mismatches_);
}

TEST_F(NodeAgentEndToEnd, PodsAskingTheSameAreServedInTheOrderTheirBindsArrived) {
  // The hard case of ../shared/reference/node-side.md §B2: pods asking the same, all bound
  // before kubelet admits any. A burst of whole-card pods lands on
  // different cards; kubelet admits them in the order their binds reach
  // it, which is the order the agent's watch saw them.
  const std::vector<Ctr> whole = {{"main", false, 1}};
  std::vector<std::string> uids;
  for (int i = 0; i < 3; ++i) uids.push_back(bind("burst-" + std::to_string(i), whole));
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 3; }, 5s));
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(admit_and_check("burst-" + std::to_string(i), uids[static_cast<size_t>(i)], whole));
  std::set<std::string> cards;
  for (int i = 0; i < 3; ++i) cards.insert(recorded("burst-" + std::to_string(i)).at("main").at(0));
  EXPECT_EQ(cards.size(), 3u);
  EXPECT_EQ(mismatches_, 0);
}

// Found on the real tier (CI, 2026-11-27, kube-apiserver restarted amid a
// burst): kubelet relisted and admitted the older of two pods, bound
// second, before the agent's watch showed it; the agent's one candidate was
// the other pod, and the older pod ran on the other's card. The agent now
// lists the pods waiting on its node (from the API server's cache, as
// kubelet's relist reads them) when an Allocate begins a pod.
TEST_F(NodeAgentEndToEnd, APodKubeletKnowsBeforeTheAgentsWatchIsNeverGivenAnothersCards) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string young = bind("young", whole, "default", "2026-01-01T00:00:05Z");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  cluster_->api->faults().event_delay_ms = 3000;  // the agent's watch falls behind
  const std::string old = bind("old", whole, "default", "2026-01-01T00:00:01Z");
  ASSERT_NE(recorded("old").at("main"), recorded("young").at("main"));
  auto refused = kubelet_->admit(old, kubelet_order(whole));
  ASSERT_FALSE(refused) << "old was answered with " << refused->at(0).envs.at("NVIDIA_VISIBLE_DEVICES") << "; its record says "
                        << recorded("old").at("main").at(0) << ", young's " << recorded("young").at("main").at(0);
  EXPECT_NE(refused.message().find("cannot tell which pod kubelet is admitting"), std::string::npos) << refused.message();
  cluster_->api->faults().event_delay_ms = 0;
}

// Found by the project's CI (Real.A, no restart anywhere): four pods created
// in one second; when kubelet's Allocate for the first came, the API
// server's list already showed the second bound, the agent's watch not yet,
// and the first was refused as if kubelet might take the second before it.
// With no relist in sight the binds reach kubelet one by one, in the order
// the watch shows them: the first is served its own cards.
TEST_F(NodeAgentEndToEnd, PodsCreatedInOneSecondAreServedInBindOrderWhileTheWatchLags) {
  agent_->state().set_stale_wait(60s);  // a slow machine is not kubelet missing a pod
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string first = bind("first", whole, "default", "2026-01-01T00:00:05Z");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  cluster_->api->faults().event_delay_ms = 8000;  // the agent's watch falls behind
  const std::string second = bind("second", whole, "default", "2026-01-01T00:00:05Z");
  ASSERT_NE(recorded("first").at("main"), recorded("second").at("main"));
  auto served = kubelet_->admit(first, kubelet_order(whole));
  ASSERT_EQ(agent_->state().waiting_pods(), 1u) << "the watch caught up: `second` was not one only the list showed";
  ASSERT_TRUE(served) << served.message();
  EXPECT_EQ(cli::split_list(served->at(0).envs.at("NVIDIA_VISIBLE_DEVICES")), recorded("first").at("main"));
  cluster_->api->faults().event_delay_ms = 0;
  // `first` stays Pending here (no kubelet sets it Running): both wait.
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 2; }, 15s));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("second", second, whole));
  EXPECT_EQ(mismatches_, 0);
}

// Pods bound once kubelet is back after its restart reach it one by one,
// through its watch (its first list came before the plugin could register,
// and no pod is bound here until then): they are served in bind order, not
// refused as a batch. (A 10 s "relist window" on kubelet's restart, tried
// after a review, refused such a pair; kubelet 1.20 fails the pods of its
// first list itself, README "Kubernetes versions".)
TEST_F(NodeAgentEndToEnd, PodsBoundAfterKubeletRestartedAreServedInBindOrder) {
  agent_->state().set_stale_wait(60s);
  const std::vector<Ctr> shape = {{"main", false, 1, 60, 16384}};
  ASSERT_NO_FATAL_FAILURE(restart_kubelet());
  const std::string a = bind("after-a", shape, "default", "2026-01-01T00:00:01Z");
  const std::string b = bind("after-b", shape, "default", "2026-01-01T00:00:01Z");
  ASSERT_NE(recorded("after-a").at("main"), recorded("after-b").at("main"));
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 2; }, 10s));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("after-a", a, shape));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("after-b", b, shape));
  EXPECT_EQ(mismatches_, 0);
}

// A tenant who may only create pods in its own namespace puts one straight
// on the node (spec.nodeName, no scheduler) carrying a copy of another
// team's record, while the agent's watch lags: the pod reaches the agent
// only through the list an Allocate reads. It takes no card: the victim
// is served its own cards, and the tenant's pod is refused.
TEST_F(NodeAgentEndToEnd, ATenantsPodPutOnTheNodeWithACopiedRecordTakesNoCardThroughTheList) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string victim = bind("victim", whole, "team-a");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  cluster_->api->faults().event_delay_ms = 3000;  // the agent's watch falls behind
  json squatter = json::parse(node_pod("squatter", whole, "team-b"));
  squatter["spec"]["nodeName"] = kNode;
  const json victim_pod = json::parse(*cluster_->api->get("pods", "team-a", "victim"));
  for (const auto& [key, value] : victim_pod["metadata"]["annotations"].items()) {
    if (key.rfind("fracpack.io/", 0) == 0) squatter["metadata"]["annotations"][key] = value;
  }
  const std::string squatter_uid = json::parse(cluster_->api->create("pods", squatter.dump()))["metadata"]["uid"];
  auto served = kubelet_->admit(victim, kubelet_order(whole));
  ASSERT_TRUE(served) << served.message();
  EXPECT_EQ(cli::split_list(served->at(0).envs.at("NVIDIA_VISIBLE_DEVICES")), recorded("victim", "team-a").at("main"));
  auto refused = kubelet_->admit(squatter_uid, kubelet_order(whole));
  ASSERT_FALSE(refused) << "the squatter got " << refused->at(0).envs.at("NVIDIA_VISIBLE_DEVICES");
  cluster_->api->faults().event_delay_ms = 0;
}

TEST_F(NodeAgentEndToEnd, KubeletRestartingBetweenAPodsContainersGoesOnWithTheNextOne) {
  // kubelet checkpoints each container's devices: after its restart it
  // allocates only the containers it had not reached.
  const std::vector<Ctr> shape = {{"main", false, 1, 50, 8192}, {"side", false, 1, 20, 2048}};
  const std::string uid = bind("halfway", shape);
  const auto want = recorded("halfway");
  auto first = kubelet_->admit(uid, {{"main", 1}});
  ASSERT_TRUE(first) << first.message();
  EXPECT_EQ(cli::split_list(first->at(0).envs.at("NVIDIA_VISIBLE_DEVICES")), want.at("main"));
  ASSERT_NO_FATAL_FAILURE(restart_kubelet());
  auto second = kubelet_->admit(uid, {{"side", 1}});
  ASSERT_TRUE(second) << second.message();
  EXPECT_EQ(second->at(0).container, "side");
  EXPECT_EQ(cli::split_list(second->at(0).envs.at("NVIDIA_VISIBLE_DEVICES")), want.at("side"));
}

TEST_F(NodeAgentEndToEnd, APodDeletedBetweenBindAndAllocateIsNotServed) {
  const std::vector<Ctr> shape = {{"main", false, 1}};
  const std::string uid = bind("gone", shape);
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  cluster_->api->remove("pods", "default", "gone");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 0; }, 5s));
  auto refused = kubelet_->admit(uid, kubelet_order(shape));  // waits recordWait (3 s) for a pod that never comes
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("no pod bound to this node waits for a container asking 1 device"), std::string::npos)
      << refused.message();
}

TEST_F(NodeAgentEndToEnd, PodsAskingTheSameSeenTogetherAfterARestartAreRefusedNotGuessed) {
  // Bound while the agent was down: its first list shows them at once, in
  // no known order. Different cards: refused rather than guessed (kubelet
  // fails the pod with the reason); equivalent ones would be served.
  agent_.reset();
  const std::vector<Ctr> shape = {{"main", false, 1, 60, 16384}};
  const std::string a = bind("twin-a", shape);
  const std::string b = bind("twin-b", shape);
  ASSERT_NE(recorded("twin-a").at("main"), recorded("twin-b").at("main")) << "60 % each: two cards";
  ASSERT_NO_FATAL_FAILURE(start_agent());
  auto refused = kubelet_->admit(a, kubelet_order(shape));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.message().find("2 pods were seen bound together"), std::string::npos) << refused.message();
  // kubelet shows it on the pod it admits: the other pod (another team's, maybe) is not named.
  EXPECT_EQ(refused.message().find("twin-"), std::string::npos) << refused.message();
  // Once kubelet's verdict is in (it failed twin-a), the other is certain,
  // even when twin-a's controller deletes it at once: the agent's watch saw
  // it Failed first. (A deletion alone is no verdict: twin-b may be the pod
  // kubelet failed.)
  fail_at_admission("twin-a");
  cluster_->api->remove("pods", "default", "twin-a");
  EXPECT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("twin-b", b, shape));
}

// Found on the real tier (Real.E, 2026-11-28): kubelet 1.20 re-allocated
// devices for a pod deleted a moment before (restarting its sandbox); the
// agent waited for a pod to match, and answered that Allocate with the
// cards of the next pod bound, whose own Allocate then found nothing.
TEST_F(NodeAgentEndToEnd, AnAllocateForNoWaitingPodDoesNotTakeTheNextPodsCards) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  std::optional<Result<std::vector<test::KubeletDouble::Admitted>>> stray;
  std::jthread kubelet([&] { stray = kubelet_->admit("uid-of-a-deleted-pod", kubelet_order(whole)); });
  std::this_thread::sleep_for(300ms);
  const std::string next = bind("next", whole);
  kubelet.join();
  ASSERT_TRUE(stray.has_value());
  ASSERT_FALSE(*stray) << "answered with " << (*stray)->at(0).envs.at("FRACPACK_POD") << "'s cards";
  EXPECT_NE(stray->message().find("no pod bound to this node waits"), std::string::npos) << stray->message();
  ASSERT_NO_FATAL_FAILURE(admit_and_check("next", next, whole));
}

// kube-apiserver restarted: kubelet's watch broke as the agent's did, and
// kubelet relists — it takes the pods bound meanwhile at once, ties (one
// creation second) in no set order (found on the real tier, Real.E2,
// 2026-11-28). The agent saw them one by one; it refuses rather than
// answer the first seen.
TEST_F(NodeAgentEndToEnd, PodsBoundWhileTheApiServersWatchesBrokeHaveNoOrder) {
  const std::vector<Ctr> shape = {{"main", false, 1, 60, 16384}};
  // Every watch of the API server ends at once, and the next ones too
  // (each informer's, the agent's among them, meets it).
  cluster_->api->faults().close_watches = 8;
  cluster_->api->close_watches();
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->api->faults().close_watches.load() == 0; }, 15s));
  const std::string b = bind("same-second-b", shape, "default", "2026-01-01T00:00:01Z");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  const std::string a = bind("same-second-a", shape, "default", "2026-01-01T00:00:01Z");
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 2; }, 5s));
  ASSERT_NE(recorded("same-second-a").at("main"), recorded("same-second-b").at("main"));
  auto refused = kubelet_->admit(a, kubelet_order(shape));  // kubelet's relist: `a` first
  ASSERT_FALSE(refused) << "same-second-a was answered with " << refused->at(0).envs.at("FRACPACK_POD") << "'s cards";
  EXPECT_NE(refused.message().find("cannot tell which pod kubelet is admitting"), std::string::npos) << refused.message();
}

TEST_F(NodeAgentEndToEnd, APodFailedByAnotherAdmissionHandlerSettlesNoRefusal) {
  // The twins refused as above; then twin-a shows Failed, but for another
  // reason (kubelet's CPU check, before any Allocate): the refusal was
  // twin-b's, whose own status is late. A third pod's Allocate is not
  // answered with twin-b's cards, and twin-b is not served.
  agent_.reset();
  const std::vector<Ctr> shape = {{"main", false, 1, 60, 16384}};
  const std::string a = bind("twin-a", shape);
  const std::string b = bind("twin-b", shape);
  ASSERT_NO_FATAL_FAILURE(start_agent());
  ASSERT_FALSE(kubelet_->admit(b, kubelet_order(shape)));
  fail_at_admission("twin-a", "OutOfcpu");
  EXPECT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  const std::string c = bind("third", {{"main", false, 1, 30, 4096}});
  EXPECT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 2; }, 5s));
  auto third = kubelet_->admit(c, {{"main", 1}});
  ASSERT_FALSE(third) << "answered " << third->at(0).envs.at("FRACPACK_POD") << " without kubelet's verdict on twin-b";
  EXPECT_NE(third.message().find("may be one kubelet failed on an earlier refusal"), std::string::npos) << third.message();
  // kubelet failed both (their statuses in): a fourth pod is served its own cards.
  fail_at_admission("twin-b");
  fail_at_admission("third");
  const std::string d = bind("fourth", {{"main", false, 1, 30, 4096}});
  EXPECT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("fourth", d, {{"main", false, 1, 30, 4096}}));
}

// Found on a real kubelet (issue 31): while kubelet had not registered the
// device plugin, pods were bound on the published cards and ran with no
// card. Now the extender offers the cards only while kubelet has it.
TEST_F(NodeAgentEndToEnd, CardsAreOfferedOnlyWhileKubeletHasThePluginRegistered) {
  kubelet_.reset();  // kubelet down: its socket gone
  ASSERT_TRUE(Cluster::wait_for([&] {
    const auto cards = published_cards();
    return !cards.empty() && cards[0].cordoned;
  }, 5s)) << "the agent publishes its cards as not registered";
  ASSERT_TRUE(Cluster::wait_for([&] { return !wait_cards_offered(std::chrono::milliseconds(0)); }, 5s));
  const std::string stored = cluster_->api->create("pods", pod("while-down", {{"main", false, 1}}));
  auto cycle = cluster_->driver().schedule(stored, {{kNode, ""}});
  EXPECT_EQ(cycle.node, "");
  ASSERT_EQ(cycle.filter.failed.count(kNode), 1u);
  EXPECT_NE(cycle.filter.failed[kNode].find("device plugin is not registered with kubelet"), std::string::npos)
      << cycle.filter.failed[kNode];
  // kubelet back: registered within moments, the cards offered again.
  kubelet_ = std::make_unique<KubeletDouble>(dir_ + "/plugins");
  ASSERT_TRUE(kubelet_->wait_registered("fracpack.io/gpu", 10s));
  ASSERT_TRUE(wait_cards_offered());
  EXPECT_EQ(cluster_->driver().schedule(stored, {{kNode, ""}}).node, kNode);
}

TEST_F(NodeAgentEndToEnd, AnUnhealthyCardLeavesKubeletAndTheExtender) {
  // An Xid 79 (fallen off the bus) on card 2.
  std::ofstream(dir_ + "/nvml.events", std::ios::app) << "xid;uuid=" << uuid_of(2) << ";code=79\n";
  ASSERT_TRUE(kubelet_->wait_devices(
      [](const std::map<std::string, std::string>& d) {
        auto it = d.find(uuid_of(2) + "-0");
        return it != d.end() && it->second == "Unhealthy";
      },
      5s));
  // The extender learns it from the annotation: card 2 takes nothing new.
  ASSERT_TRUE(Cluster::wait_for(
      [&] {
        const auto cards = published_cards();
        return cards.size() == 4 && !cards[2].healthy;
      },
      5s));
  for (int i = 0; i < 3; ++i) {
    const std::string name = "whole-" + std::to_string(i);
    const std::vector<Ctr> shape = {{"main", false, 1}};
    const std::string uid = bind(name, shape);
    const auto r = recorded(name);
    ASSERT_EQ(r.at("main").size(), 1u);
    EXPECT_NE(r.at("main")[0], uuid_of(2)) << name;
    ASSERT_NO_FATAL_FAILURE(admit_and_check(name, uid, shape));
    set_running(name);
  }
  // Nothing is left for a fourth whole card.
  const std::string stored = cluster_->api->create("pods", pod("whole-3", {{"main", false, 1}}));
  EXPECT_EQ(cluster_->driver().schedule(stored, {{kNode, ""}}).node, "");
  EXPECT_NE(agent_->metrics_text().find("fracpack_node_agent_device_healthy{index=\"2\""), std::string::npos);
}

TEST_F(NodeAgentEndToEnd, APodWithoutAUsableRecordIsRefusedWithAReasonKubeletShows) {
  // Bound by someone else (no fracpack.io/allocation), or with a record
  // that does not parse, or that names another node: never given cards.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no annotation fracpack.io/allocation"},
      {"{\"node\":\"gpu-1\",\"containers\":[{\"name\":", "annotation fracpack.io/allocation: "},
      {"{\"node\":\"gpu-9\",\"containers\":[{\"name\":\"main\",\"cards\":[{\"index\":0,\"memoryMiB\":1,\"cores\":100}]}]}",
       "names node gpu-9 but the pod is bound to gpu-1"},
  };
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    json p = json::parse(pod("foreign-" + std::to_string(i), {{"main", false, 1}}));
    p["spec"]["nodeName"] = kNode;
    if (!cases[i].first.empty()) p["metadata"]["annotations"]["fracpack.io/allocation"] = cases[i].first;
    const std::string stored = cluster_->api->create("pods", p.dump());
    const std::string uid = json::parse(stored)["metadata"]["uid"];
    ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 1; }, 5s));
    auto refused = kubelet_->admit(uid, {{"main", 1}});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.message().find(cases[i].second), std::string::npos) << refused.message();
    EXPECT_NE(agent_->metrics_text().find("fracpack_node_agent_allocation_failures_total " + std::to_string(++failures)), std::string::npos);
    cluster_->api->remove("pods", "default", "foreign-" + std::to_string(i));  // kubelet failed it
    ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == 0; }, 5s));
  }
}

TEST_F(NodeAgentEndToEnd, ARestartedAgentRemembersWhatItAllocatedAndKubeletRestartsAreSurvived) {
  // "early" is admitted (all its containers) but not running yet when the
  // agent restarts; "late" asks the same and is bound after the restart.
  const std::vector<Ctr> shape = {{"main", false, 1, 60, 16384}};  // two of them: two cards
  const std::string early = bind("early", shape);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("early", early, shape));
  agent_.reset();
  auto saved = node::load_agent_state(dir_ + "/agent.state");
  ASSERT_TRUE(saved) << saved.message();
  ASSERT_EQ(saved->served.count(early), 1u);
  EXPECT_EQ(saved->served.at(early), 1);
  ASSERT_NO_FATAL_FAILURE(start_agent());
  const std::string late = bind("late", shape);
  // Without the state, "early" (seen in the restarted agent's first list,
  // before "late") would take this Allocate: "late" would run on early's card.
  ASSERT_NE(recorded("early").at("main"), recorded("late").at("main"));
  ASSERT_NO_FATAL_FAILURE(admit_and_check("late", late, shape));

  // kubelet restarts: the agent registers again and keeps serving.
  ASSERT_NO_FATAL_FAILURE(restart_kubelet());
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string after = bind("after-kubelet", whole);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("after-kubelet", after, whole));
}

TEST(NodeAgent, WithoutCardsItFailsOrIdlesAsConfigured) {
  const std::string dir = "/tmp/fp-na-empty-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/nvml.conf") << "driver;version=550.54.15\n";
  ::setenv("FAKE_NVML_CONFIG", (dir + "/nvml.conf").c_str(), 1);
  NodeAgentOptions o;
  o.node_name = kNode;
  o.nvml_library = FRACPACK_FAKE_NVML;
  o.serve_http = false;
  {
    NodeAgent failing(o);
    const Status s = failing.start();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("finds no GPU"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("withoutDevices"), std::string::npos) << s.message();
  }
  o.nvml_library = dir + "/no-such-libnvidia-ml.so.1";
  o.idle_without_devices = true;
  o.serve_http = true;
  o.listen_address = "127.0.0.1";
  o.listen_port = 0;
  NodeAgent idle(o);
  ASSERT_TRUE(idle.start().ok());
  EXPECT_TRUE(idle.idle());
  EXPECT_NE(idle.idle_reason().find("no-such-libnvidia-ml"), std::string::npos) << idle.idle_reason();
  const auto readyz = testing::raw_exchange(idle.port(), {"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"});
  EXPECT_EQ(testing::status_of(readyz.response), 200);
  EXPECT_NE(testing::body_of(readyz.response).find("idle"), std::string::npos);
  const auto metrics = testing::raw_exchange(idle.port(), {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"});
  EXPECT_NE(testing::body_of(metrics.response).find("fracpack_node_agent_idle 1"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_F(NodeAgentEndToEnd, ANodeThatDoesNotExistIsReportedAndRetriedWithoutSpinning) {
  NodeAgentOptions o;
  o.node_name = "no-such-node";
  o.client = testing::client_for(*cluster_->api);
  o.plugin.plugin_dir = dir_ + "/plugins-2";
  std::filesystem::create_directories(o.plugin.plugin_dir);
  o.nvml_library = FRACPACK_FAKE_NVML;
  o.serve_http = false;
  o.retry = 100ms;
  o.health_wait = 50ms;
  NodeAgent lost(o);
  ASSERT_TRUE(lost.start().ok());
  const int before = cluster_->api->requests("GET /api/v1/nodes/no-such-node");
  std::this_thread::sleep_for(1s);
  const int reads = cluster_->api->requests("GET /api/v1/nodes/no-such-node") - before;
  EXPECT_GE(reads, 3);
  EXPECT_LE(reads, 15) << "one read per retry (100 ms), not a busy loop";
  EXPECT_NE(lost.ready().message().find("node no-such-node does not exist"), std::string::npos) << lost.ready().message();
}

TEST(NodeAgent, AMalformedStateFileStopsTheStartNamingTheLine) {
  const std::string path = "/tmp/fp-na-state-" + std::to_string(::getpid());
  std::ofstream(path) << "# x\nserved abc zero\n";
  NodeAgentOptions o;
  o.node_name = kNode;
  o.state_file = path;
  o.serve_http = false;
  NodeAgent agent(o);
  const Status s = agent.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + ":2"), std::string::npos) << s.message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fracpack::server::node_agent_test
