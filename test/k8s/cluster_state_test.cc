// The store and the ledger it feeds (k8s/cluster_state.h): relists replace
// the store, proven-gone pods are not resurrected by late events, a
// consistent relist settles binds it should show, and the bind fence's
// catch_up applies another writer's pods and re-checks a reservation.
#include "k8s/cluster_state.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/gpushare.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing {
namespace {

using namespace std::chrono_literals;
using scheduling::Allocation;
using scheduling::Ledger;


// The reservation a bind made on arrival: half of `card` on `node`.
void reserve(k8s::ClusterState& state, const std::string& uid, const std::string& node, int card) {
  Allocation a{node, {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{card, "", 8192, 500}}}}};
  ASSERT_TRUE(state.assume(scheduling::PodFacts{uid, "default/" + uid, 0, 0}, a, scheduling::Clock::now()).ok());
}

// Chooses the first card with room for half a card.
Result<Allocation> first_fit(const Ledger& l, const std::string& node) {
  const scheduling::NodeState* n = l.node(node);
  for (size_t p = 0; p < n->cards().size(); ++p) {
    if (n->free_cores(p) >= 500 && n->free_memory(p) >= 8192) {
      return Allocation{node, {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{n->cards()[p].index, "", 8192, 500}}}}};
    }
  }
  return Error{"no card with room"};
}

int card_of(const Allocation& a) { return a.containers.at(0).cards.at(0).index; }

// Node n1 with `cards` cards, this replica's reservation of half of card 0
// ("mine"), then the fence's read `fresh` caught up with.
Result<k8s::ClusterState::CaughtUp> reserve_and_catch_up(k8s::ClusterState& state, int cards, const std::vector<k8s::Pod>& fresh) {
  state.apply_node(decoded_node("n1", cards));
  reserve(state, "mine", "n1", 0);
  return state.catch_up("n1", fresh, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
}

std::string json_of(const std::string& name, const std::string& node, const std::string& phase = "Running") {
  return pod_object(PodSpec(name, "default", node, phase, half_card(), {}, "u-" + name));
}

TEST(ClusterState, ARelistReplacesTheStoreAndReleasesWhatTheGoneHeld) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(bound_share_pod("a", "n1", 0)).ok());
  ASSERT_TRUE(state.list_pod(bound_share_pod("b", "n1", 1)).ok());
  state.end_pod_list();
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod_count(); }), 2u);
  state.begin_pod_list(false);
  ASSERT_TRUE(state.list_pod(bound_share_pod("a", "n1", 0)).ok());
  state.end_pod_list();
  EXPECT_FALSE(state.pod("u-b").has_value());
  EXPECT_EQ(state.read([](const Ledger& l) { return l.node("n1")->use()[1].cores; }), 0);
  EXPECT_EQ(state.counters().relist_deletions, 1u);
}

TEST(ClusterState, APodProvenGoneIsNotBroughtBackByALateEvent) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(json_of("a", "")));
  reserve(state, "u-a", "n1", 0);
  state.note_gone("u-a");  // the reconciler's GET: 404
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-a"); }), nullptr);
  EXPECT_EQ(state.counters().stale_events, 1u);
  // The informer sees it go: the tombstone is done with.
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kDeleted, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_FALSE(state.pod("u-a").has_value());
}

// A pod the store never saw (kube-scheduler sent it with filter) was bound;
// a quorum list started after its Binding that lacks it proves it gone.
TEST(ClusterState, AConsistentRelistWithoutABoundPodReleasesItsReservation) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "u-a", "n1", 0);
  state.note_bound("u-a", std::chrono::steady_clock::now() - 1s);
  state.begin_pod_list(/*consistent=*/true);
  state.end_pod_list();  // the pod is not there: deleted after its Binding
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-a"); }), nullptr);
  EXPECT_EQ(state.counters().reconciled_assumptions, 1u);
}

TEST(ClusterState, PodsAreFoundByUidOrName) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_pod(decoded_pod(json_of("a", "")));
  ASSERT_TRUE(state.pod("u-a").has_value());
  ASSERT_TRUE(state.pod_by_name("default", "a").has_value());
  EXPECT_EQ(state.pod_by_name("default", "a")->meta.uid, "u-a");
  EXPECT_FALSE(state.pod_by_name("other", "a").has_value());
  // Finished: gone from the store.
  state.apply_pod(decoded_pod(json_of("a", "", "Succeeded")));
  EXPECT_FALSE(state.pod("u-a").has_value());
}

TEST(ClusterStateCatchUp, KeepsTheReservationWhenItStillFitsBesideTheUnseenPods) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  // Another writer put half a card on card 0 and a whole card 1 in use.
  auto r = reserve_and_catch_up(state, 2, {decoded_pod(bound_share_pod("other", "n1", 0)), decoded_pod(bound_share_pod("whole", "n1", 1, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 2u);
  EXPECT_FALSE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 0);
  EXPECT_EQ(state.counters().fence_caught_up, 2u);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine")->phase, scheduling::PodPhase::kAssumed);
    EXPECT_EQ(l.pod("u-other")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    EXPECT_TRUE(l.check_invariants().ok());
    return 0;
  });
}

TEST(ClusterStateCatchUp, MovesTheReservationOffACardAnotherWriterFilled) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  auto r = reserve_and_catch_up(state, 2, {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine")->allocation.containers[0].cards[0].index, 1);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    return 0;
  });
}

TEST(ClusterStateCatchUp, RefusesWhenTheNodeIsFullAndReleasesTheReservation) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  auto r = reserve_and_catch_up(state, 1, {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("bound by another scheduler"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("no card with room"), std::string::npos) << r.message();
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine"), nullptr);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    return 0;
  });
}

// Found by the failover soak: two binds in flight on one node, both
// reserved on a stale ledger. The first one's fence applies the pod another
// scheduler bound there; the second one's fence then finds nothing new, but
// its reservation no longer fits beside that pod and must move.
TEST(ClusterStateCatchUp, AReservationOverCommittedByAnotherFencesCatchUpIsCheckedToo) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "first", "n1", 1);
  reserve(state, "second", "n1", 0);
  const std::vector<k8s::Pod> fresh = {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))};
  auto first = state.catch_up("n1", fresh, "first", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->applied, 1u);
  auto second = state.catch_up("n1", fresh, "second", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->applied, 0u);
  EXPECT_TRUE(second->rechosen);
  EXPECT_EQ(card_of(second->allocation), 1);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 0);
}

// The API server shows the pod being bound already bound here, with
// another replica's cards: those are what it holds.
TEST(ClusterStateCatchUp, APodAnotherReplicaBoundHoldsTheCardsItsRecordNames) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "u-mine", "n1", 0);
  auto r = state.catch_up("n1", {decoded_pod(bound_share_pod("mine", "n1", 1))}, "u-mine", [](const Ledger&) -> Result<Allocation> {
    return Error{"not called"};
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->rechosen);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("u-mine")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.node("n1")->use()[0].cores, 0);
    return 0;
  });
}

TEST(ClusterStateCatchUp, NothingNewLeavesEverythingAsItWas) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(bound_share_pod("seen", "n1", 1)));
  reserve(state, "mine", "n1", 0);
  const uint64_t version = state.read([](const Ledger& l) { return l.node("n1")->version(); });
  // The read shows what the ledger has, pods on other nodes, terminal pods.
  k8s::Pod done = decoded_pod(bound_share_pod("done", "n1", 0, 100, 16384));
  done.phase = "Succeeded";
  const std::vector<k8s::Pod> fresh = {decoded_pod(bound_share_pod("seen", "n1", 1)), decoded_pod(bound_share_pod("elsewhere", "n2", 0, 100, 16384)), done};
  auto r = state.catch_up("n1", fresh, "mine", [](const Ledger&) -> Result<Allocation> { return Error{"not called"}; });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.node("n1")->version(); }), version);
}

// A read may predate a deletion the watch has already applied: the pod must
// not come back (nothing would ever remove it again).
TEST(ClusterStateCatchUp, APodTheInformerSawDeletedIsNotBroughtBack) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  const k8s::Pod gone = decoded_pod(bound_share_pod("gone", "n1", 0, 100, 16384));
  state.apply_pod(gone);
  state.delete_pod(gone);
  reserve(state, "mine", "n1", 0);
  auto r = state.catch_up("n1", {gone}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-gone"); }), nullptr);
}

TEST(ClusterStateCatchUp, AReservationReleasedMeanwhileIsNotBound) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  auto r = state.catch_up("n1", {}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("released meanwhile"), std::string::npos) << r.message();
}

// The gpushare profile's unhealthy-card ConfigMaps through the store's sink:
// a relist that lacks one drops its marks, an unchanged one is not reported
// again, and /debug/snapshot carries them (a replay of it sees the marks).
TEST(ClusterState, TheContractsConfigMapsFollowListsAndEvents) {
  k8s::SyncOptions options;
  options.contract = std::make_shared<k8s::GpushareContract>();
  k8s::ClusterState state(options);
  auto cm = [](const std::string& name, const std::string& gpus) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" + name + R"(","namespace":"kube-system","resourceVersion":"7"},"data":{"gpus":")" +
           gpus + R"("}})";
  };
  state.begin_node_list();
  ASSERT_TRUE(state.list_node(R"({"metadata":{"name":"n1"},"status":{"capacity":{"aliyun.com/gpu-mem":"30","aliyun.com/gpu-count":"2"}}})").ok());
  state.end_node_list();
  auto schedulable = [&] {
    return state.read([](const Ledger& l) {
      std::vector<bool> out;
      for (const auto& c : l.node("n1")->cards()) out.push_back(c.schedulable());
      return out;
    });
  };
  state.begin_pod_list(true);
  state.end_pod_list();
  EXPECT_FALSE(state.ready()) << "a contract that reads ConfigMaps waits for their list";
  state.begin_config_map_list();
  ASSERT_TRUE(state.list_config_map(cm("unhealthy-gpu-n1", "1,9")).ok());
  ASSERT_TRUE(state.list_config_map(cm("coredns", "0")).ok());  // not the contract's: ignored
  state.end_config_map_list();
  EXPECT_TRUE(state.ready());
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, false}));
  const size_t reported = state.problems().size();
  EXPECT_GE(reported, 1u);
  EXPECT_NE(state.snapshot_json().find("unhealthy-gpu-n1"), std::string::npos);
  auto rv = state.config_map_event(k8s::WatchEventType::kModified, cm("unhealthy-gpu-n1", "1,9"));
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(*rv, "7");
  EXPECT_EQ(state.problems().size(), reported) << "an unchanged ConfigMap is not reported again";
  state.begin_config_map_list();  // a relist without it: the mark goes
  state.end_config_map_list();
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, true}));
  EXPECT_EQ(state.snapshot_json().find("unhealthy-gpu-n1"), std::string::npos);
  ASSERT_TRUE(state.config_map_event(k8s::WatchEventType::kAdded, cm("unhealthy-n1", "0")).ok());
  EXPECT_EQ(schedulable(), (std::vector<bool>{false, true}));
  ASSERT_TRUE(state.config_map_event(k8s::WatchEventType::kDeleted, cm("unhealthy-n1", "0")).ok());
  EXPECT_EQ(schedulable(), (std::vector<bool>{true, true}));
  EXPECT_FALSE(state.config_map_event(k8s::WatchEventType::kAdded, "[]").ok());
  EXPECT_EQ(state.counters().malformed_config_maps, 1u);
  EXPECT_EQ(state.counters().malformed_nodes, 0u);
}

}  // namespace
}  // namespace fracpack::testing
