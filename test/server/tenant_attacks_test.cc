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

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "server/cmd/args.h"
#include "test/support/cluster_harness.h"
#include "test/support/node_cluster.h"
#include "test/support/record_keys.h"

namespace fracpack::testing::tenant_attacks_test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The namespace GPU quota's keys (fracpack contract).
constexpr const char* kCardsKey = "limits.fracpack.io/gpu";
constexpr const char* kMemoryKey = "limits.fracpack.io/gpu-memory";
constexpr const char* kCoresKey = "limits.fracpack.io/gpu-cores";

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

  // The namespace GPU quota (README "Namespace GPU quota"): a cluster
  // admin's ResourceQuota `ns/gpu`, which the tenant cannot write; returns
  // once the extender holds its limits.
  void set_quota(const std::string& ns, const std::map<std::string, std::string>& hard) {
    cluster_->api->create("resourcequotas", resource_quota(ns, "gpu", hard));
    ASSERT_TRUE(Cluster::wait_for([&] { return quota_known(ns); }, 10s)) << ns;
  }
  bool quota_known(const std::string& ns) {
    return cluster_->daemon().state().read([&](const scheduling::Ledger& l) { return l.quota(ns) != nullptr; });
  }

  // What fracpack's /debug/quota says `ns` uses of `key` (-1: not listed).
  int64_t quota_used(const std::string& ns, const std::string& key) {
    const auto r = http_get(cluster_->url(), "/debug/quota");
    if (r.status != 200) return -1;
    const json report = json::parse(r.body);  // held by name (see whole_cards_free)
    for (const json& q : report["quotas"]) {
      if (q["namespace"] == ns && q["key"] == key) return static_cast<int64_t>(q["used"].get<double>());
    }
    return -1;
  }

  // A pending pod of fracpack's scheduler as its user writes it; its UID,
  // once the extender's informer has it (bind refuses pods it has not seen).
  std::string create_pending(const std::string& name, const std::vector<Ctr>& containers, const std::string& ns,
                             const std::map<std::string, std::string>& annotations = {}) {
    const std::string uid = create_by_hand(name, containers, "", annotations, "fracpack", ns);
    EXPECT_TRUE(Cluster::wait_for([&] { return cluster_->daemon().state().pod(uid).has_value(); }, 10s)) << name;
    return uid;
  }

  // Why fracpack's filter refuses the pending pod on the node ("" when it passes).
  std::string filter_refusal(const std::string& name, const std::string& ns) {
    const auto text = cluster_->api->get("pods", ns, name);
    if (!text) return "no pod " + ns + "/" + name;
    auto f = cluster_->driver().filter(0, *text, {{kGpuNode, ""}});
    if (!f) return "filter failed: " + f.message();
    if (f->failed.count(kGpuNode)) return f->failed.at(kGpuNode);
    if (f->unresolvable.count(kGpuNode)) return f->unresolvable.at(kGpuNode);
    return "";
  }

  // kube-scheduler's bind of the pod (after the filter above judged it):
  // bind checks the quota again, atomically with the reservation.
  Status bind_judged(const std::string& name, const std::string& ns) {
    const std::string uid = json::parse(*cluster_->api->get("pods", ns, name))["metadata"]["uid"];
    return cluster_->driver().bind(ns, name, uid, kGpuNode);
  }

  std::string node_of(const std::string& name, const std::string& ns) {
    return json::parse(*cluster_->api->get("pods", ns, name))["spec"].value("nodeName", "");
  }

  // The pod's annotations, as a user copies them.
  std::map<std::string, std::string> annotation_map(const std::string& name, const std::string& ns) {
    // Held by name: a range-for over a member of a temporary dangles.
    const json annotations = annotations_of(name, ns);
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : annotations.items()) out[k] = v.get<std::string>();
    return out;
  }

  // A user's removal of their own pod's annotations.
  void remove_annotations(const std::string& name, const std::vector<std::string>& keys, const std::string& ns) {
    cluster_->api->update("pods", ns, name, [&](const std::string& text) {
      json p = json::parse(text);
      for (const std::string& k : keys) p["metadata"]["annotations"].erase(k);
      return p.dump();
    });
  }

  // Every replica restarts (its ledger rebuilt from the API server alone);
  // returns once it is ready (pods, nodes and ResourceQuotas listed).
  void restart_and_wait_ready(const std::string& quota_ns) {
    ASSERT_NO_FATAL_FAILURE(restart_extender());
    ASSERT_TRUE(Cluster::wait_for([&] { return http_get(cluster_->url(), "/readyz").status == 200 && quota_known(quota_ns); }, 10s));
  }

  k8s::SyncCounters counters() { return cluster_->daemon().state().counters(); }

  // Waits until the extender's ledger holds each of these pods (however it charged them).
  bool wait_in_ledger(const std::vector<std::string>& uids) {
    return Cluster::wait_for([&] {
      return cluster_->daemon().state().read([&](const scheduling::Ledger& l) {
        return std::all_of(uids.begin(), uids.end(), [&](const std::string& u) { return l.pod(u) != nullptr; });
      });
    }, 10s);
  }

  int64_t whole_cards_free() {
    int64_t free = 0;
    // Held by name: a range-for over a member of a temporary dangles.
    const auto cards = ledger_cards(cluster_->daemon());
    for (const auto& c : cards.at(kGpuNode)) free += c.cores == 0 ? 1 : 0;
    return free;
  }

  // Quota attack: the tenant rewrites a placement annotation of its bound
  // pod (`key` set to `value`) and deletes its record; after every replica
  // restarted, the pod still counts against the 1-card quota and the next
  // pod is refused by filter and by bind.
  void placement_annotation_keeps_quota_use(const std::string& key, const std::string& value) {
    ASSERT_NO_FATAL_FAILURE(set_quota("team-a", {{kCardsKey, "1"}}));
    const std::vector<Ctr> whole = {{"main", false, 1}};
    const std::string a1 = bind("a1", whole, "team-a");
    ASSERT_EQ(quota_used("team-a", kCardsKey), 1);
    patch_annotation("a1", key, value, "team-a");
    remove_annotations("a1", {"fracpack.io/allocation", "fracpack.io/gpu-indices", "fracpack.io/allocation-signature"}, "team-a");
    ASSERT_TRUE(Cluster::wait_for([&] { return counters().changed_records == 1; }, 10s));
    EXPECT_EQ(quota_used("team-a", kCardsKey), 1) << "at once";
    ASSERT_NO_FATAL_FAILURE(restart_and_wait_ready("team-a"));
    ASSERT_TRUE(wait_in_ledger({a1}));
    EXPECT_EQ(quota_used("team-a", kCardsKey), 1) << "after every replica restarted";
    create_pending("a2", whole, "team-a");
    const std::string refusal = "exceeds ResourceQuota team-a/gpu limits.fracpack.io/gpu: used 1 card, asked 1 card, hard 1 card";
    EXPECT_EQ(filter_refusal("a2", "team-a"), "pod team-a/a2: " + refusal);
    const Status s = bind_judged("a2", "team-a");
    EXPECT_FALSE(s.ok()) << "bound past the quota: team-a holds 2 cards, hard 1";
    EXPECT_NE(s.message().find(refusal), std::string::npos) << s.message();
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

// --- The namespace GPU quota (issue 32; README "Namespace GPU quota") ---
//
// The quota's usage is what the namespace's bound pods hold by the ledger,
// and the ledger is rebuilt from the pods' annotations, which their owner
// may patch. The tenant below can create and patch pods in its own
// namespace only: no write on ResourceQuotas, no signing key.


// Quota attack 1: a namespace at its quota edits its own bound pods'
// records (one claims no card at all, one loses its record and signature)
// hoping its usage drops so that one more pod fits. The charge stays: at
// once because a charged pod keeps its charge (the changes are reported,
// not followed), and after every replica restarts because neither record
// is fracpack's any more (an edited record does not verify, a missing one
// is no record): both pods are charged by inference, what their request
// takes. Filter and bind refuse the next pod naming the quota throughout.
TEST_F(TenantAttack, EditingYourOwnRecordsDoesNotLowerYourQuotaUse) {
  ASSERT_NO_FATAL_FAILURE(set_quota("team-a", {{kCardsKey, "2"}}));
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::string a1 = bind("a1", whole, "team-a");
  const std::string a2 = bind("a2", whole, "team-a");
  ASSERT_EQ(quota_used("team-a", kCardsKey), 2);
  patch_annotation("a1", "fracpack.io/allocation", json{{"node", kGpuNode}, {"containers", json::array()}}.dump(), "team-a");
  remove_annotations("a2", {"fracpack.io/allocation", "fracpack.io/gpu-indices", "fracpack.io/allocation-signature"}, "team-a");
  // Reported, not followed.
  Cluster::wait_for([&] { return counters().changed_records == 2; }, 10s);
  EXPECT_EQ(counters().changed_records, 2u);
  const std::string refusal = "exceeds ResourceQuota team-a/gpu limits.fracpack.io/gpu: used 2 cards, asked 1 card, hard 2 cards";
  create_pending("a3", whole, "team-a");
  for (const char* when : {"at once", "after every replica restarted"}) {
    SCOPED_TRACE(when);
    EXPECT_EQ(quota_used("team-a", kCardsKey), 2);
    EXPECT_EQ(filter_refusal("a3", "team-a"), "pod team-a/a3: " + refusal);
    const Status s = bind_judged("a3", "team-a");
    ASSERT_FALSE(s.ok()) << "bound past the quota";
    EXPECT_NE(s.message().find(refusal), std::string::npos) << s.message();
    EXPECT_EQ(node_of("a3", "team-a"), "");
    if (std::string(when) == "at once") {
      ASSERT_NO_FATAL_FAILURE(restart_and_wait_ready("team-a"));
      ASSERT_TRUE(wait_in_ledger({a1, a2}));
      // a1's record no longer verifies, a2 has none: both inferred.
      EXPECT_EQ(counters().rejected_records, 1u);
      EXPECT_EQ(counters().inferred_allocations, 2u);
    }
  }
}

// Quota attack 2: a tenant of team-a binds pods around the scheduler
// (spec.nodeName; no admission stops it) carrying records meant to move
// usage between namespaces: team-b's signed record copied verbatim onto a
// pod of the same name, and a hand-written record claiming no card. A
// record names no namespace and a pod's namespace is the one the API
// server stored it in, so team-b's usage does not move; and neither record
// is fracpack's, so neither pod is charged what its record says: each is
// charged to team-a by inference. team-b's next card still fits its quota,
// team-a's next pod is refused, and deleting the copy releases team-a's
// charge, not team-b's.
TEST_F(TenantAttack, ACopiedOrForgedRecordChargesOnlyItsOwnNamespace) {
  ASSERT_NO_FATAL_FAILURE(set_quota("team-a", {{kCardsKey, "2"}}));
  ASSERT_NO_FATAL_FAILURE(set_quota("team-b", {{kCardsKey, "2"}}));
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::vector<Ctr> share = {{"main", false, 1, 30, 4096}};
  bind("b1", whole, "team-b");
  ASSERT_EQ(quota_used("team-b", kCardsKey), 1);
  const std::map<std::string, std::string> copy = annotation_map("b1", "team-b");
  ASSERT_EQ(copy.count("fracpack.io/allocation-signature"), 1u);
  const std::string copier = create_by_hand("b1", whole, kGpuNode, copy, "fracpack", "team-a");
  const std::string freeloader = create_by_hand(
      "freeloader", share, kGpuNode, {{"fracpack.io/allocation", json{{"node", kGpuNode}, {"containers", json::array()}}.dump()}},
      "fracpack", "team-a");
  ASSERT_TRUE(wait_in_ledger({copier, freeloader}));
  EXPECT_EQ(counters().rejected_records, 2u) << "neither record is fracpack's";
  EXPECT_EQ(quota_used("team-a", kCardsKey), 2) << "each charged to team-a by inference";
  EXPECT_EQ(quota_used("team-b", kCardsKey), 1) << "team-b's usage moved";
  // team-b is not inflated: its second card fits its quota.
  bind("b2", whole, "team-b");
  EXPECT_EQ(node_of("b2", "team-b"), kGpuNode);
  EXPECT_EQ(quota_used("team-b", kCardsKey), 2);
  // team-a is not freed: its next pod is refused by filter and bind.
  create_pending("more", share, "team-a");
  const std::string refusal = "exceeds ResourceQuota team-a/gpu limits.fracpack.io/gpu: used 2 cards, asked 1 card, hard 2 cards";
  EXPECT_EQ(filter_refusal("more", "team-a"), "pod team-a/more: " + refusal);
  const Status s = bind_judged("more", "team-a");
  ASSERT_FALSE(s.ok()) << "bound past the quota";
  EXPECT_NE(s.message().find(refusal), std::string::npos) << s.message();
  // The copy's deletion releases team-a's charge; team-b's pod of the same name keeps its.
  cluster_->api->remove("pods", "team-a", "b1");
  ASSERT_TRUE(Cluster::wait_for([&] { return quota_used("team-a", kCardsKey) == 1; }, 10s)) << quota_used("team-a", kCardsKey);
  EXPECT_EQ(quota_used("team-b", kCardsKey), 2);
}

// Quota attack 3: a pod created with a record already on it, a small
// signed one copied from another namespace's pod (10 %, 1024 MiB), asking
// a whole card, hoping the whole card is counted as the small share. The
// quota counts what the request asks at filter and what fracpack chose at
// bind, and the Binding writes every record annotation (record, card
// indices, signature) over the ones the user wrote: the pod is charged the
// whole card it got (40960 MiB, 100 %), its record verifies (nothing
// pre-written survived), the node agent serves that card, and the
// namespace's next share is refused.
TEST_F(TenantAttack, ARecordWrittenBeforeTheBindIsReplacedByWhatFracpackChose) {
  ASSERT_NO_FATAL_FAILURE(set_quota("team-a", {{kMemoryKey, "40960"}, {kCoresKey, "100"}}));
  const std::vector<Ctr> whole = {{"main", false, 1}};
  const std::vector<Ctr> tiny = {{"main", false, 1, 10, 1024}};
  bind("donor", tiny, "team-c");
  // Every record annotation, pre-written: the donor's record and signature, and its card's index.
  std::map<std::string, std::string> pre = annotation_map("donor", "team-c");
  ASSERT_EQ(pre.count("fracpack.io/allocation") + pre.count("fracpack.io/allocation-signature"), 2u);
  auto donor_record = k8s::parse_allocation(pre["fracpack.io/allocation"]);
  ASSERT_TRUE(donor_record) << donor_record.message();
  pre["fracpack.io/gpu-indices"] = std::to_string(donor_record->containers.at(0).cards.at(0).index);
  // (kubelet admits pods in the order they were bound.)
  ASSERT_NO_FATAL_FAILURE(admit_and_check("donor", json::parse(*cluster_->api->get("pods", "team-c", "donor"))["metadata"]["uid"], tiny, "team-c"));
  const std::string uid = create_pending("big", whole, "team-a", pre);
  EXPECT_EQ(filter_refusal("big", "team-a"), "") << "a whole card is within 40960 MiB and 100 percent";
  auto cycle = cluster_->driver().schedule(*cluster_->api->get("pods", "team-a", "big"), {{kGpuNode, ""}});
  ASSERT_EQ(cycle.node, kGpuNode) << cycle.error;
  const Status bound = bind_judged("big", "team-a");
  ASSERT_TRUE(bound.ok()) << bound.message();
  ASSERT_TRUE(Cluster::wait_for([&] {
    return cluster_->daemon().state().read([&](const scheduling::Ledger& l) {
      const scheduling::PodRecord* r = l.pod(uid);
      return r != nullptr && r->phase == scheduling::PodPhase::kConfirmed;
    });
  }, 10s)) << "the ledger confirms the pod from its record";
  const json now = annotations_of("big", "team-a");
  for (const auto& [k, v] : pre) EXPECT_NE(now.value(k, ""), v) << k << " survived the bind";
  auto record = k8s::parse_allocation(now.value("fracpack.io/allocation", ""));
  ASSERT_TRUE(record) << record.message();
  ASSERT_EQ(record->containers.size(), 1u);
  ASSERT_EQ(record->containers[0].cards.size(), 1u);
  EXPECT_EQ(record->containers[0].cards[0].memory_mib, 40960);
  EXPECT_EQ(record->containers[0].cards[0].cores, 1000);
  EXPECT_EQ(counters().rejected_records, 0u) << "the pod's record is fracpack's, signed for it";
  EXPECT_EQ(quota_used("team-a", kMemoryKey), 40960);
  EXPECT_EQ(quota_used("team-a", kCoresKey), 100);
  ASSERT_NO_FATAL_FAILURE(admit_and_check("big", uid, whole, "team-a"));
  create_pending("small", tiny, "team-a");
  const std::string refusal =
      "exceeds ResourceQuota team-a/gpu limits.fracpack.io/gpu-cores: used 100 percent of a card, asked 10 percent of a card, "
      "hard 100 percent of a card";
  EXPECT_EQ(filter_refusal("small", "team-a"), "pod team-a/small: " + refusal);
  const Status s = bind_judged("small", "team-a");
  ASSERT_FALSE(s.ok()) << "bound past the quota";
  EXPECT_NE(s.message().find(refusal), std::string::npos) << s.message();
}

// Quota attack 1, continued: the tenant also writes its own placement
// annotations (README "Pod annotations": the model, the cards, the NUMA
// rule), which fracpack reads as part of the pod's request, on a pod
// already bound: one that no card of the node matches, or one that cannot
// be read, and deletes the record. While a replica lives the pod keeps its
// charge; once every replica has restarted (a rollout) the pod must still
// count against the quota: it holds its card whatever its annotations say.
//
// Found writing these tests: after the restart the pod was charged no
// card, its namespace's usage dropped from 1 to 0, and the next pod was
// filtered through and bound past the quota (team-a held 2 cards, hard 1):
// a bound pod without a record of fracpack's was charged from its request
// read with these annotations, and one that could not be read, or did not
// fit its own node, was charged no card when records are verified. Now a
// bound pod's holdings are read without them
// (Contract::placement_annotations, LedgerBuilder::bound_request): it is
// charged what its containers ask, wherever its cards went.
TEST_F(TenantAttack, APlacementAnnotationNoCardMatchesDoesNotLowerYourQuotaUse) {
  // (Read with the model it now names, its request would fit no card of
  // its node: it was then charged no card.)
  placement_annotation_keeps_quota_use("fracpack.io/gpu-model", "H100-SXM5-80GB");
}

TEST_F(TenantAttack, AnUnreadablePlacementAnnotationDoesNotLowerYourQuotaUse) {
  // (With that annotation its request cannot be read: it was then
  // confirmed with no card.)
  placement_annotation_keeps_quota_use("fracpack.io/numa", "both");
}

}  // namespace
}  // namespace fracpack::testing::tenant_attacks_test
