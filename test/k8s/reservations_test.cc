// The reservations of binds in flight (k8s/reservations.h), every way in
// and out of the Assumed state: reserve, the bind fence's recheck (kept,
// moved, released), each settlement, the store's own exits (a consistent
// relist, a proven-gone pod not resurrected by a late event), the blind
// expiry, and what the reconciler is offered.
#include "k8s/reservations.h"

#include <gtest/gtest.h>

#include "k8s/cluster_state.h"
#include "scheduling/evaluator.h"
#include "scheduling/policy.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::reservations_test {
namespace {

using namespace std::chrono_literals;
using scheduling::Allocation;
using scheduling::Ledger;
using Settlement = k8s::Reservations::Settlement;

// The reservation a bind made on arrival: half of `card` on `node`.
void reserve(k8s::ClusterState& state, const std::string& uid, const std::string& node, int card) {
  Allocation a{node, {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{card, "", 8192, 500}}}}};
  ASSERT_TRUE(state.reservations().reserve(scheduling::PodFacts{uid, "default/" + uid, 0, 0}, fixed_choice(a), scheduling::Clock::now()).ok());
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
Result<k8s::Reservations::Rechecked> reserve_and_recheck(k8s::ClusterState& state, int cards, const std::vector<k8s::Pod>& fresh) {
  state.apply_node(decoded_node("n1", cards));
  reserve(state, "mine", "n1", 0);
  return state.reservations().recheck("n1", fresh, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
}

std::string json_of(const std::string& name, const std::string& node, const std::string& phase = "Running") {
  return pod_object(PodSpec(name, "default", node, phase, half_card(), {}, "u-" + name));
}

bool held(const k8s::ClusterState& state, const std::string& uid) {
  return state.read([&](const Ledger& l) { return l.pod(uid) != nullptr; });
}

// A bind's reserve (CardChoice): the policy's best cards, reserved once; a
// retried bind (its answer lost) reuses them instead of reserving again; a
// node fracpack does not know is refused naming it.
TEST(Reservations, ABindsChoiceIsReservedOnceAndARetryReusesIt) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  auto policy = scheduling::make_policy("fracpack", {});
  ASSERT_TRUE(policy.ok()) << policy.message();
  scheduling::Evaluator evaluator(**policy, scheduling::FitOptions{});
  auto request = state.contract().pod_request(decoded_pod(json_of("p", "", "Pending")));
  ASSERT_TRUE(request.ok()) << request.message();
  const std::string n1 = "n1", n9 = "n9", who = "default/p";
  std::string reason;
  const scheduling::PodFacts facts{"u-p", who, 0, 0};
  auto first = state.reservations().reserve(facts, k8s::Reservations::CardChoice{evaluator, *request, n1, who, &reason}, scheduling::Clock::now());
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_FALSE(first->retried);
  EXPECT_FALSE(first->namespace_quota);
  EXPECT_NE(reason.find("the policy's best cards on the node"), std::string::npos) << reason;
  EXPECT_TRUE(held(state, "u-p"));
  auto retry = state.reservations().reserve(facts, k8s::Reservations::CardChoice{evaluator, *request, n1, who}, scheduling::Clock::now());
  ASSERT_TRUE(retry.ok()) << retry.message();
  EXPECT_TRUE(retry->retried) << "the first attempt's reservation";
  EXPECT_EQ(retry->allocation, first->allocation);
  auto unknown = state.reservations().reserve({"u-q", "default/q", 0, 0}, k8s::Reservations::CardChoice{evaluator, *request, n9, who},
                                              scheduling::Clock::now());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.message(), "node n9 is not known to fracpack");
}

TEST(Reservations, ReserveChoosesAndHoldsUnderTheLockAndRefusesWhatNoLongerFits) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 1));
  auto first = state.reservations().reserve({"u-a", "default/a", 0, 0}, [](const Ledger& l) { return first_fit(l, "n1"); },
                                            scheduling::Clock::now());
  ASSERT_TRUE(first.ok()) << first.message();
  auto second = state.reservations().reserve({"u-b", "default/b", 0, 0}, [](const Ledger& l) { return first_fit(l, "n1"); },
                                             scheduling::Clock::now());
  ASSERT_TRUE(second.ok()) << second.message();
  auto third = state.reservations().reserve({"u-c", "default/c", 0, 0}, [](const Ledger& l) { return first_fit(l, "n1"); },
                                            scheduling::Clock::now());
  EXPECT_FALSE(third.ok()) << "a card holds two halves";
  // A chooser that ignores the ledger cannot over-commit: the ledger refuses.
  Allocation over{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
  EXPECT_FALSE(state.reservations().reserve({"u-d", "default/d", 0, 0}, fixed_choice(over), scheduling::Clock::now()).ok());
  EXPECT_TRUE(held(state, "u-a"));
  EXPECT_FALSE(held(state, "u-c"));
}

TEST(Reservations, EachSettlementReleasesOrKeepsAndCountsAsDocumented) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 4));
  reserve(state, "u-accepted", "n1", 0);
  reserve(state, "u-refused", "n1", 1);
  reserve(state, "u-elsewhere", "n1", 2);
  reserve(state, "u-unbound", "n1", 3);
  EXPECT_TRUE(state.reservations().settle("u-accepted", Settlement::kBindingAccepted));
  EXPECT_TRUE(held(state, "u-accepted")) << "an accepted Binding waits for the watch";
  EXPECT_TRUE(state.reservations().settle("u-refused", Settlement::kNotBound));
  EXPECT_FALSE(held(state, "u-refused"));
  EXPECT_TRUE(state.reservations().settle("u-elsewhere", Settlement::kBoundElsewhere));
  EXPECT_FALSE(held(state, "u-elsewhere"));
  EXPECT_TRUE(state.reservations().settle("u-unbound", Settlement::kUnboundPastTtl));
  EXPECT_FALSE(held(state, "u-unbound"));
  const k8s::SyncCounters c = state.counters();
  EXPECT_EQ(c.reconciled_assumptions, 1u);
  EXPECT_EQ(c.expired_assumptions, 1u);
  // Nothing left to settle: nothing released.
  EXPECT_FALSE(state.reservations().settle("u-refused", Settlement::kNotBound));
  EXPECT_FALSE(state.reservations().settle("u-nobody", Settlement::kBindingAccepted));
}

TEST(Reservations, AConfirmedPodIsNeverReleasedByASettlementMeantForAReservation) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kAdded, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_FALSE(state.reservations().settle("u-a", Settlement::kNotBound));
  EXPECT_FALSE(state.reservations().settle("u-a", Settlement::kUnboundPastTtl));
  EXPECT_TRUE(held(state, "u-a"));
}

TEST(Reservations, TheReconcilerIsOfferedOnlyOldUnconfirmedReservations) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  const auto t0 = scheduling::Clock::now();
  Allocation a{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
  ASSERT_TRUE(state.reservations().reserve({"u-a", "team/a", 0, 0}, fixed_choice(a), t0).ok());
  EXPECT_TRUE(state.reservations().stale(t0 + 1s, 5s).empty()) << "younger than min_age";
  auto stale = state.reservations().stale(t0 + 10s, 5s);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].uid, "u-a");
  EXPECT_EQ(stale[0].namespace_name, "team");
  EXPECT_EQ(stale[0].name, "a");
  EXPECT_EQ(stale[0].node, "n1");
  EXPECT_FALSE(stale[0].past_ttl);
  EXPECT_TRUE(state.reservations().stale(t0 + 31s, 5s).at(0).past_ttl);
  // Confirmed by the watch: no longer offered.
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kAdded, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_TRUE(state.reservations().stale(t0 + 31s, 5s).empty());
}

TEST(Reservations, TheBlindExpiryReleasesOnlyReservationsPastTheirTtl) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  const auto t0 = scheduling::Clock::now();
  Allocation a{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{1, "", 8192, 500}}}}};
  ASSERT_TRUE(state.reservations().reserve({"u-q", "default/q", 0, 0}, fixed_choice(a), t0).ok());
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kAdded, bound_share_pod("c", "n1", 0)).ok());
  EXPECT_EQ(state.reservations().release_expired(t0 + 29s), 0u);
  EXPECT_EQ(state.reservations().release_expired(t0 + 31s), 1u);
  EXPECT_FALSE(held(state, "u-q"));
  EXPECT_TRUE(held(state, "u-c")) << "confirmed pods never expire";
  EXPECT_EQ(state.counters().expired_assumptions, 1u);
}

TEST(Reservations, APodProvenGoneIsNotBroughtBackByALateEvent) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(json_of("a", "")));
  reserve(state, "u-a", "n1", 0);
  state.reservations().settle("u-a", k8s::Reservations::Settlement::kPodGone);  // the reconciler's GET: 404
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kModified, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-a"); }), nullptr);
  EXPECT_EQ(state.counters().stale_events, 1u);
  // The informer sees it go: the tombstone is done with.
  ASSERT_TRUE(state.pod_event(k8s::WatchEventType::kDeleted, bound_share_pod("a", "n1", 0)).ok());
  EXPECT_FALSE(state.pod("u-a").has_value());
}

// A pod the store never saw (kube-scheduler sent it with filter) was bound;
// a quorum list started after its Binding that lacks it proves it gone.
TEST(Reservations, AConsistentRelistWithoutABoundPodReleasesItsReservation) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "u-a", "n1", 0);
  state.reservations().settle("u-a", k8s::Reservations::Settlement::kBindingAccepted, std::chrono::steady_clock::now() - 1s);
  state.begin_pod_list(/*consistent=*/true);
  state.end_pod_list();  // the pod is not there: deleted after its Binding
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-a"); }), nullptr);
  EXPECT_EQ(state.counters().reconciled_assumptions, 1u);
}

TEST(ReservationsRecheck, KeepsTheReservationWhenItStillFitsBesideTheUnseenPods) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  // Another writer put half a card on card 0 and a whole card 1 in use.
  auto r = reserve_and_recheck(state, 2, {decoded_pod(bound_share_pod("other", "n1", 0)), decoded_pod(bound_share_pod("whole", "n1", 1, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 2u);
  EXPECT_FALSE(r->moved);
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

TEST(ReservationsRecheck, MovesTheReservationOffACardAnotherWriterFilled) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  auto r = reserve_and_recheck(state, 2, {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->moved);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("mine")->allocation.containers[0].cards[0].index, 1);
    EXPECT_EQ(l.overcommitted_cards(), 0);
    return 0;
  });
}

TEST(ReservationsRecheck, RefusesWhenTheNodeIsFullAndReleasesTheReservation) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  auto r = reserve_and_recheck(state, 1, {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))});
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
TEST(ReservationsRecheck, AReservationOverCommittedByAnotherFencesCatchUpIsCheckedToo) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "first", "n1", 1);
  reserve(state, "second", "n1", 0);
  const std::vector<k8s::Pod> fresh = {decoded_pod(bound_share_pod("other", "n1", 0, 100, 16384))};
  auto first = state.reservations().recheck("n1", fresh, "first", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->applied, 1u);
  auto second = state.reservations().recheck("n1", fresh, "second", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->applied, 0u);
  EXPECT_TRUE(second->moved);
  EXPECT_EQ(card_of(second->allocation), 1);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 0);
}

// The API server shows the pod being bound already bound here, with
// another replica's cards: those are what it holds.
TEST(ReservationsRecheck, APodAnotherReplicaBoundHoldsTheCardsItsRecordNames) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  reserve(state, "u-mine", "n1", 0);
  auto r = state.reservations().recheck("n1", {decoded_pod(bound_share_pod("mine", "n1", 1))}, "u-mine", [](const Ledger&) -> Result<Allocation> {
    return Error{"not called"};
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->moved);
  EXPECT_EQ(card_of(r->allocation), 1);
  state.read([](const Ledger& l) {
    EXPECT_EQ(l.pod("u-mine")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.node("n1")->use()[0].cores, 0);
    return 0;
  });
}

TEST(ReservationsRecheck, NothingNewLeavesEverythingAsItWas) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(bound_share_pod("seen", "n1", 1)));
  reserve(state, "mine", "n1", 0);
  const uint64_t version = state.read([](const Ledger& l) { return l.node("n1")->version(); });
  // The read shows what the ledger has, pods on other nodes, terminal pods.
  k8s::Pod done = decoded_pod(bound_share_pod("done", "n1", 0, 100, 16384));
  done.phase = "Succeeded";
  const std::vector<k8s::Pod> fresh = {decoded_pod(bound_share_pod("seen", "n1", 1)), decoded_pod(bound_share_pod("elsewhere", "n2", 0, 100, 16384)), done};
  auto r = state.reservations().recheck("n1", fresh, "mine", [](const Ledger&) -> Result<Allocation> { return Error{"not called"}; });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.node("n1")->version(); }), version);
}

// A read may predate a deletion the watch has already applied: the pod must
// not come back (nothing would ever remove it again).
TEST(ReservationsRecheck, APodTheInformerSawDeletedIsNotBroughtBack) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  const k8s::Pod gone = decoded_pod(bound_share_pod("gone", "n1", 0, 100, 16384));
  state.apply_pod(gone);
  state.delete_pod(gone);
  reserve(state, "mine", "n1", 0);
  auto r = state.reservations().recheck("n1", {gone}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 0u);
  EXPECT_EQ(state.read([](const Ledger& l) { return l.pod("u-gone"); }), nullptr);
}

TEST(ReservationsRecheck, AReservationReleasedMeanwhileIsNotBound) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  auto r = state.reservations().recheck("n1", {}, "mine", [](const Ledger& l) { return first_fit(l, "n1"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("released meanwhile"), std::string::npos) << r.message();
}

// Which exit a reservation takes is decided by Reservations alone, from
// what the bind or the reconciler learned: the Binding's outcome, a read
// after an unknown outcome, the reconciler's GET.
TEST(Reservations, TheBindsOutcomeDecidesTheExit) {
  using Exit = k8s::Reservations::Exit;
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 4));
  k8s::Reservations& r = state.reservations();
  reserve(state, "u-bound", "n1", 0);
  reserve(state, "u-refused", "n1", 1);
  reserve(state, "u-unknown", "n1", 2);
  reserve(state, "u-gone", "n1", 3);
  EXPECT_EQ(r.bind_finished("u-bound", {true, false, false}), Exit::kAccepted);
  EXPECT_EQ(r.bind_finished("u-refused", {false, false, false}), Exit::kReleased);
  EXPECT_EQ(r.bind_finished("u-unknown", {false, false, true}), Exit::kKept) << "the pod may hold its cards";
  EXPECT_EQ(r.bind_finished("u-gone", {false, true, true}), Exit::kReleased) << "a gone pod holds nothing, known or not";
  EXPECT_TRUE(held(state, "u-bound"));
  EXPECT_FALSE(held(state, "u-refused"));
  EXPECT_TRUE(held(state, "u-unknown"));
  EXPECT_FALSE(held(state, "u-gone"));
  EXPECT_EQ(r.bind_finished("u-refused", {false, false, false}), Exit::kNone) << "released already";
}

// A read after an unknown outcome that finds the pod unbound releases its
// reservation, unless kube-scheduler's retry of the bind is in flight: the
// retry reuses it and settles it itself.
TEST(Reservations, AnUnboundReadLeavesARetryInFlightItsReservation) {
  using Exit = k8s::Reservations::Exit;
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  k8s::Reservations& r = state.reservations();
  reserve(state, "u-p", "n1", 0);
  r.bind_started("u-p", "n1", /*holds_node=*/true);
  EXPECT_TRUE(r.any_binding());
  EXPECT_EQ(r.binding_to({"n1", "n2"}), (std::vector<bool>{true, false}));
  EXPECT_EQ(r.bind_settled("u-p", k8s::Presence::kNotThere), Exit::kKept);
  EXPECT_TRUE(held(state, "u-p"));
  r.bind_ended("u-p", "n1", true);
  EXPECT_FALSE(r.any_binding());
  EXPECT_TRUE(r.binding_to({"n1"}).empty()) << "none in flight at all";
  EXPECT_EQ(r.bind_settled("u-p", k8s::Presence::kUnknown), Exit::kKept);
  EXPECT_EQ(r.bind_settled("u-p", k8s::Presence::kNotThere), Exit::kReleased);
  EXPECT_FALSE(held(state, "u-p"));
}

// The reconciler's GET: gone, another UID, finished or bound elsewhere
// release; pending within its TTL or bound here keep; pending past it releases.
TEST(Reservations, TheReconcilersReadDecidesTheExit) {
  using Exit = k8s::Reservations::Exit;
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 4));
  k8s::Reservations& r = state.reservations();
  for (const char* uid : {"u-a", "u-b", "u-c", "u-d"}) reserve(state, uid, "n1", uid[2] - 'a');
  auto stale = [](const std::string& uid, bool past_ttl) { return k8s::Reservations::Stale{uid, "default", uid.substr(2), "n1", past_ttl}; };
  EXPECT_EQ(r.pod_read(stale("u-a", false), nullptr), Exit::kReleased) << "404";
  const k8s::Pod pending = decoded_pod(json_of("b", ""));
  EXPECT_EQ(r.pod_read(stale("u-b", false), &pending), Exit::kKept) << "within its TTL";
  EXPECT_EQ(r.pod_read(stale("u-b", true), &pending), Exit::kReleased) << "past its TTL, unbound";
  const k8s::Pod elsewhere = decoded_pod(json_of("c", "n2"));
  EXPECT_EQ(r.pod_read(stale("u-c", false), &elsewhere), Exit::kReleased);
  const k8s::Pod here = decoded_pod(json_of("d", "n1"));
  EXPECT_EQ(r.pod_read(stale("u-d", true), &here), Exit::kKept) << "bound here: the watch confirms it";
  EXPECT_TRUE(held(state, "u-d"));
  EXPECT_FALSE(held(state, "u-a"));
  EXPECT_FALSE(held(state, "u-b"));
  EXPECT_FALSE(held(state, "u-c"));
}

}  // namespace
}  // namespace fracpack::testing::reservations_test
