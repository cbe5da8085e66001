// The tenant attack suite (README "Security model"): what an ordinary
// namespace user can do — create and patch pods in their own namespace,
// nothing else — tried against `fracpack serve`, `fracpack node-agent` and
// the kubelet double on one node of four cards, with NO admission control
// (the webhook's own answers to the same attacks: test/k8s/admission_test).
// Each attack is one the code before record signing let through; each test
// says what it used to do and what must hold now. The invariant behind them
// all: no card ends up with two holders that together exceed it, and no
// pod gets a card fracpack did not choose for it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "server/cmd/args.h"
#include "test/support/cluster_harness.h"
#include "test/support/node_cluster.h"
#include "test/support/record_keys.h"

namespace fracpack::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class TenantAttack : public NodeCluster {
 protected:
  // A pod as a user writes it by hand: `spec` fields and annotations of their choosing.
  std::string create_by_hand(const std::string& name, const std::vector<Ctr>& containers, const std::string& node,
                             const std::map<std::string, std::string>& annotations, const std::string& scheduler = "fracpack",
                             const std::string& ns = "team-b") {
    json p = json::parse(node_pod(name, containers, ns));
    if (!node.empty()) p["spec"]["nodeName"] = node;
    p["spec"]["schedulerName"] = scheduler;
    for (const auto& [k, v] : annotations) p["metadata"]["annotations"][k] = v;
    return json::parse(cluster_->api->create("pods", p.dump()))["metadata"]["uid"];
  }

  // The record a user writes: container `container` on `cards`, as
  // fracpack would write a whole card (40960 MiB, 100 %), or with 0 and 0
  // (which the node agent used to read as "the whole card, no limits").
  static std::string forged_record(const std::vector<int>& cards, const std::string& container = "main", bool sized = false) {
    json list = json::array();
    for (int c : cards) {
      list.push_back({{"index", c}, {"uuid", card_uuid(c)}, {"memoryMiB", sized ? 40960 : 0}, {"cores", sized ? 100 : 0}});
    }
    return json{{"node", kGpuNode}, {"containers", json::array({{{"name", container}, {"cards", list}}})}}.dump();
  }

  // Waits until the agent's watch shows `n` waiting pods.
  void wait_waiting(size_t n) { ASSERT_TRUE(Cluster::wait_for([&] { return agent_->state().waiting_pods() == n; }, 5s)); }

  // The cards kubelet handed a container (its NVIDIA_VISIBLE_DEVICES).
  static std::vector<std::string> cards_of(const test::KubeletDouble::Admitted& a) {
    return cli::split_list(a.envs.at("NVIDIA_VISIBLE_DEVICES"));
  }

  // The annotations of a pod as the API server has them.
  json annotations_of(const std::string& name, const std::string& ns = "default") {
    return json::parse(*cluster_->api->get("pods", ns, name))["metadata"].value("annotations", json::object());
  }

  // A user's patch of their own pod's annotation (no admission stops it here).
  void patch_annotation(const std::string& name, const std::string& key, const std::string& value, const std::string& ns = "default") {
    cluster_->api->update("pods", ns, name, [&](const std::string& text) {
      json p = json::parse(text);
      p["metadata"]["annotations"][key] = value;
      return p.dump();
    });
  }

  int64_t whole_cards_free() {
    int64_t free = 0;
    // Held by name: a range-for over a member of a temporary dangles.
    const auto cards = ledger_cards(cluster_->daemon());
    for (const auto& c : cards.at(kGpuNode)) free += c.cores == 0 ? 1 : 0;
    return free;
  }
};

// Attack 1 (before: served — the thief's container got the victim's card,
// whole, no limits).
TEST_F(TenantAttack, AHandWrittenRecordForAnotherTeamsCardIsNeverServed) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string victim = bind("victim", whole);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("victim", victim, whole));
  set_running("victim");
  const std::string card = recorded("victim").at("main").at(0);
  const int index = card[4] - '0';
  // spec.nodeName (no scheduler), and a record naming the victim's card.
  const std::string thief = create_by_hand("thief", whole, kGpuNode, {{"fracpack.io/allocation", forged_record({index})}});
  wait_waiting(1);
  auto refused = kubelet_->admit(thief, kubelet_order(whole));
  ASSERT_FALSE(refused) << "served " << (refused ? refused->at(0).envs.at("NVIDIA_VISIBLE_DEVICES") : "");
  EXPECT_NE(refused.message().find("is not fracpack's: no annotation fracpack.io/allocation-signature"), std::string::npos) << refused.message();
  cluster_->api->remove("pods", "team-b", "thief");
  wait_waiting(0);
  // The victim's own signed record, copied whole (signature too) onto another pod.
  json signed_copy = annotations_of("victim");
  std::map<std::string, std::string> copy;
  for (const auto& [k, v] : signed_copy.items()) copy[k] = v.get<std::string>();
  const std::string copier = create_by_hand("copier", whole, kGpuNode, copy);
  wait_waiting(1);
  auto copied = kubelet_->admit(copier, kubelet_order(whole));
  ASSERT_FALSE(copied);
  EXPECT_NE(copied.message().find("does not match the record"), std::string::npos) << copied.message();
  cluster_->api->remove("pods", "team-b", "copier");
  wait_waiting(0);
  // Another scheduler's pod on the node is never served, whatever it carries.
  const std::string other = create_by_hand("other", whole, kGpuNode, copy, "default-scheduler");
  wait_waiting(1);
  auto foreign = kubelet_->admit(other, kubelet_order(whole));
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.message().find("schedulerName \"default-scheduler\" is not fracpack's"), std::string::npos) << foreign.message();
}

// Attack 2 (before: charged — cards 1 and 2 taken from a pod that asks no
// GPU; a legitimate three-card pod was refused, "1 available", and nothing
// was reported).
TEST_F(TenantAttack, ARecordOnAPodThatAsksNoGpuSquatsNothing) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string victim = bind("victim", whole);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("victim", victim, whole));
  json squatter = json::parse(node_pod("squatter", {}, "team-b"));
  squatter["spec"]["nodeName"] = kGpuNode;
  squatter["spec"]["containers"] = json::array({{{"name", "main"}, {"image", "busybox"}, {"resources", {{"limits", {{"cpu", "1"}}}}}}});
  squatter["metadata"]["annotations"]["fracpack.io/allocation"] = forged_record({1, 2}, "main", /*sized=*/true);
  cluster_->api->create("pods", squatter.dump());
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().counters().ignored_records == 1; }, 5s))
      << "the ledger saw the record and ignored it";
  EXPECT_EQ(whole_cards_free(), 3);
  const std::vector<Ctr> three = {{"main", false, 3}};
  const std::string big = bind("big", three);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("big", big, three));
}

// Attack 3 (before: the ledger followed the patch — the card the pod's
// container really held went to the next pod: two containers on one
// exclusive card; at once, and again after an extender restart).
TEST_F(TenantAttack, PatchingYourOwnRecordFreesNothing) {
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string mine = bind("mine", whole);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("mine", mine, whole));
  set_running("mine");
  const std::string held = recorded("mine").at("main").at(0);
  const int index = held[4] - '0';
  const int elsewhere = index == 3 ? 2 : 3;
  patch_annotation("mine", "fracpack.io/allocation", forged_record({elsewhere}));
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().counters().changed_records == 1; }, 5s));
  // The charge stays on the card it holds: three whole cards left, and the
  // card it holds is not among what a new pod can get.
  EXPECT_EQ(whole_cards_free(), 3);
  for (int i = 0; i < 3; ++i) {
    const std::string name = "next-" + std::to_string(i);
    const std::string uid = bind(name, whole);
    EXPECT_NE(recorded(name).at("main").at(0), held) << name;
    ASSERT_NO_FATAL_FAILURE(admit_and_check(name, uid, whole));
    set_running(name);
  }
  // Every replica restarts: the annotations are the ledger's only memory,
  // and this one's record no longer verifies. It is charged by inference,
  // and the node agent, which served it, refuses anything onto its card.
  for (int i = 0; i < 3; ++i) cluster_->api->remove("pods", "default", "next-" + std::to_string(i));
  ASSERT_NO_FATAL_FAILURE(restart_extender());
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().counters().rejected_records >= 1; }, 5s));
  std::set<std::string> given;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "after-" + std::to_string(i);
    const std::string uid = bind(name, whole);
    auto admitted = kubelet_->admit(uid, kubelet_order(whole));
    if (!admitted) {
      // The ledger's inference put `mine` elsewhere; the agent's account did not move.
      EXPECT_NE(admitted.message().find("is already held by other pods on this node"), std::string::npos) << admitted.message();
      EXPECT_EQ(admitted.message().find("mine"), std::string::npos) << "another team's pod is not named";
      continue;
    }
    for (const std::string& c : cards_of(admitted->at(0))) given.insert(c);
  }
  EXPECT_EQ(given.count(held), 0u) << "two containers on the card `mine` holds";
}

// The bind verb binds only fracpack's pods, and only after judging them
// (before: any pod, fracpack's or not, GPU or not, to any node).
TEST_F(TenantAttack, BindBindsOnlyPodsFracpackJudged) {
  const std::string cpu = create_by_hand("cpu", {}, "", {}, "default-scheduler");
  // (Once the informer has it: before, the bind is refused for that.)
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().pod(cpu).has_value(); }, 5s));
  Status s = cluster_->driver().bind("team-b", "cpu", cpu, kGpuNode);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fracpack binds only pods of fracpack"), std::string::npos) << s.message();
  const std::string gpu = create_by_hand("gpu", {{"main", false, 1}}, "", {});
  ASSERT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().pod(gpu).has_value(); }, 5s));
  s = cluster_->driver().bind("team-b", "gpu", gpu, kGpuNode);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("never sent to fracpack's filter or prioritize"), std::string::npos) << s.message();
  EXPECT_EQ(json::parse(*cluster_->api->get("pods", "team-b", "gpu"))["spec"].value("nodeName", ""), "");
}

// A pod kubelet admitted halfway (its first container served, then the
// pod rejected, e.g. by the topology manager) is not continued by the next
// pod that asks the same (before: the next pod's container got the
// rejected pod's second card).
TEST_F(TenantAttack, APodKubeletRejectedHalfwayIsNotContinuedByTheNext) {
  const std::vector<Ctr> two = {{"a", false, 1, 30, 4096}, {"b", false, 1, 30, 4096}};
  const std::vector<Ctr> one_share = {{"main", false, 1, 60, 20000}};
  const std::string half = bind("half", two);
  const std::string next = bind("next", one_share);
  wait_waiting(2);
  auto first = kubelet_->admit(half, {{"a", 1}});
  ASSERT_TRUE(first) << first.message();
  // kubelet rejects `half`; the agent's watch hears of it late.
  cluster_->api->faults().event_delay_ms = 2000;
  set_phase("half", "Failed");
  kubelet_->remove_pod(half);
  auto admitted = kubelet_->admit(next, kubelet_order(one_share));
  cluster_->api->faults().event_delay_ms = 0;
  ASSERT_TRUE(admitted) << admitted.message();
  EXPECT_EQ(admitted->at(0).envs.at("FRACPACK_POD"), "default/next");
  EXPECT_EQ(cards_of(admitted->at(0)), recorded("next").at("main"));
}

// kubelet's Allocate is answered for the pod the API server has, not the
// one the agent's watch still shows (before: a pod deleted a moment ago
// lent its cards to the next one's container).
TEST_F(TenantAttack, APodDeletedAMomentAgoDoesNotLendItsCards) {
  const std::vector<Ctr> share = {{"main", false, 1, 60, 20000}};
  const std::string gone = bind("gone", share);
  wait_waiting(1);
  // The deletion's watch event is late when kubelet's Allocate comes; the
  // fake server delays each batch of events, so `fresh`'s bind arrives a
  // second delay later: two delays stay well inside the agent's
  // record_wait (3 s; with 1.5 s each a loaded CI machine missed it).
  cluster_->api->faults().event_delay_ms = 700;
  cluster_->api->remove("pods", "default", "gone");
  const std::string fresh = bind("fresh", share);
  ASSERT_NE(recorded("fresh").at("main"), std::vector<std::string>{}) << "bound";
  auto admitted = kubelet_->admit(fresh, kubelet_order(share));  // waits for the watch to bring `fresh`
  cluster_->api->faults().event_delay_ms = 0;
  ASSERT_TRUE(admitted) << admitted.message();
  EXPECT_EQ(admitted->at(0).envs.at("FRACPACK_POD"), "default/fresh");
  EXPECT_EQ(cards_of(admitted->at(0)), recorded("fresh").at("main"));
}

}  // namespace
}  // namespace fracpack::testing
