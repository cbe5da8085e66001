// The namespace GPU quota's adapter (k8s/quota.h): the contract's keys read
// from ResourceQuotas, the ledger's limits kept in step with them through
// list and watch, and the bind path's reservation refused past the quota.
#include "k8s/quota.h"

#include <gtest/gtest.h>

#include "k8s/cluster_state.h"
#include "k8s/contract/fracpack.h"
#include "k8s/contract/hami.h"
#include "scheduling/quantity.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::k8s_quota_test {
namespace {

using namespace std::chrono_literals;
using scheduling::QuotaResource;

k8s::ResourceQuota quota(const std::string& ns, const std::string& name, k8s::StringMap hard) {
  k8s::ResourceQuota q;
  q.meta.namespace_name = ns;
  q.meta.name = name;
  q.meta.uid = "uid-" + name;
  q.hard = std::move(hard);
  return q;
}

TEST(QuotaLimits, ReadsTheContractsKeysAndLeavesKubernetesOwnAlone) {
  k8s::FracpackContract fracpack;
  auto limits = k8s::quota_limits(quota("team-a", "gpu", {{"requests.cpu", "10"},
                                                            {"limits.fracpack.io/gpu", "4"},
                                                            {"limits.fracpack.io/gpu-memory", "163840"},
                                                            {"limits.fracpack.io/gpu-cores", "250"},
                                                            {"requests.fracpack.io/gpu", "8"}}),
                                  fracpack.quota_keys());
  ASSERT_EQ(limits.size(), 3u);
  EXPECT_EQ(limits[0], (scheduling::QuotaLimit{"gpu", "limits.fracpack.io/gpu", QuotaResource::kCards, 4, ""}));
  EXPECT_EQ(limits[1], (scheduling::QuotaLimit{"gpu", "limits.fracpack.io/gpu-memory", QuotaResource::kMemoryMib, 163840, ""}));
  EXPECT_EQ(limits[2], (scheduling::QuotaLimit{"gpu", "limits.fracpack.io/gpu-cores", QuotaResource::kCoresPercent, 250, ""}));
}

TEST(QuotaLimits, HamisMemoryKeyCountsInUnitsOfItsMemoryFactor) {
  k8s::HamiOptions o;
  o.memory_factor = 1024;
  k8s::HamiContract hami({}, o);
  auto limits = k8s::quota_limits(quota("ns", "q", {{"limits.nvidia.com/gpumem", "32"}, {"limits.nvidia.com/gpucores", "400"},
                                                     {"limits.nvidia.com/gpu", "4"}}),
                                  hami.quota_keys());
  ASSERT_EQ(limits.size(), 3u);
  EXPECT_EQ(limits[0].resource, QuotaResource::kMemoryMib);
  EXPECT_EQ(limits[0].hard, 32768);
  EXPECT_EQ(limits[1].hard, 400);
  EXPECT_EQ(limits[2].hard, 4);
}

TEST(QuotaLimits, AValueThatIsNotAWholeNumberIsMalformedAndSaysWhy) {
  k8s::FracpackContract fracpack;
  auto limits = k8s::quota_limits(quota("ns", "q", {{"limits.fracpack.io/gpu", "1500m"}, {"limits.fracpack.io/gpu-memory", "lots"},
                                                     {"limits.fracpack.io/gpu-cores", "99999999999999999999"}}),
                                  fracpack.quota_keys());
  ASSERT_EQ(limits.size(), 3u);
  EXPECT_EQ(limits[0].malformed, "\"1500m\" is not a whole number");
  EXPECT_NE(limits[1].malformed.find("\"lots\" is not a valid quantity"), std::string::npos) << limits[1].malformed;
  EXPECT_EQ(limits[2].malformed, "\"99999999999999999999\" is too large");
}

// "80Gi" is a whole number of bytes, read as MiB it would be no limit at
// all; a scoped ResourceQuota selects pods fracpack does not judge. Both
// fail closed, saying why. A decimal form is the API server's own
// rendering of a plain number (it stores 10000000 as "10M"): read as that
// number.
TEST(QuotaLimits, ABinarySuffixOrAScopeIsMalformedNotReadAsSomethingElse) {
  k8s::FracpackContract fracpack;
  auto suffixed = k8s::quota_limits(quota("ns", "q", {{"limits.fracpack.io/gpu-memory", "80Gi"}, {"limits.fracpack.io/gpu", "2k"},
                                                      {"limits.fracpack.io/gpu-cores", "10M"}}),
                                    fracpack.quota_keys());
  ASSERT_EQ(suffixed.size(), 3u);
  EXPECT_EQ(suffixed[0].malformed, "\"80Gi\" has a binary suffix, which counts bytes: write MiB, cards or percent as a plain number");
  EXPECT_EQ(suffixed[1].malformed, "");
  EXPECT_EQ(suffixed[1].hard, 2000);
  EXPECT_EQ(suffixed[2].malformed, "");
  EXPECT_EQ(suffixed[2].hard, 10000000);
  auto json = k8s::resource_quota_json(quota("ns", "q", {{"limits.fracpack.io/gpu", "2"}}));
  json.insert(json.find("\"hard\""), "\"scopes\":[\"Terminating\"],");
  auto scoped = k8s::parse_resource_quota(json, fracpack.selection());
  ASSERT_TRUE(scoped) << scoped.message() << " " << json;
  EXPECT_TRUE(scoped->scoped);
  auto limits = k8s::quota_limits(*scoped, fracpack.quota_keys());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_NE(limits[0].malformed.find("a scoped ResourceQuota"), std::string::npos);
  EXPECT_FALSE(k8s::parse_resource_quota(k8s::resource_quota_json(quota("ns", "q", {})), fracpack.selection())->scoped);
}

TEST(QuotaBook, EveryObjectOfANamespaceHoldsAndADeletedOneNoLonger) {
  k8s::QuotaBook book(k8s::FracpackContract().quota_keys());
  scheduling::Ledger ledger;
  EXPECT_TRUE(book.apply(quota("ns", "a", {{"limits.fracpack.io/gpu", "4"}}), ledger).empty());
  EXPECT_TRUE(book.apply(quota("ns", "b", {{"limits.fracpack.io/gpu", "2"}}), ledger).empty());
  book.apply(quota("ns-2", "a", {{"limits.fracpack.io/gpu", "1"}}), ledger);
  book.apply(quota("other", "cpu", {{"requests.cpu", "1"}}), ledger);  // none of ours: not kept
  ASSERT_NE(ledger.quota("ns"), nullptr);
  EXPECT_EQ(ledger.quota("ns")->size(), 2u);
  EXPECT_EQ(ledger.quota("other"), nullptr);
  EXPECT_EQ(book.objects().size(), 3u);
  book.remove("ns", "b", ledger);
  ASSERT_EQ(ledger.quota("ns")->size(), 1u);
  EXPECT_EQ(ledger.quota("ns")->at(0).hard, 4);
  // Its keys removed from the object: the namespace has no limits left.
  book.apply(quota("ns", "a", {{"requests.cpu", "1"}}), ledger);
  EXPECT_EQ(ledger.quota("ns"), nullptr);
  EXPECT_EQ(ledger.quota("ns-2")->size(), 1u);
}

TEST(QuotaBook, AMalformedLimitIsReportedOncePerChange) {
  k8s::QuotaBook book(k8s::FracpackContract().quota_keys());
  scheduling::Ledger ledger;
  auto bad = quota("ns", "a", {{"limits.fracpack.io/gpu", "0.5"}});
  EXPECT_EQ(book.apply(bad, ledger).size(), 1u);
  EXPECT_TRUE(book.apply(bad, ledger).empty()) << "a relist reports nothing again";
  EXPECT_TRUE(book.apply(quota("ns", "a", {{"limits.fracpack.io/gpu", "1"}}), ledger).empty());
  EXPECT_EQ(book.apply(bad, ledger).size(), 1u);
}

// The bind path: two binds racing for a namespace's last card, one at a
// time under the store's lock; the second is refused with the quota named.
TEST(QuotaState, AReservationPastTheQuotaIsRefusedAtomically) {
  k8s::ClusterState state(k8s::SyncOptions{});
  state.apply_node(decoded_node("n1", 4));
  state.apply_resource_quota(quota("team", "gpu", {{"limits.fracpack.io/gpu", "1"}}));
  auto half = [](int card) {
    return fixed_choice(scheduling::Allocation{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{card, "", 8192, 500}}}}});
  };
  auto first = state.reservations().reserve({"u1", "team/p1", 0, 0}, half(0), scheduling::Clock::now());
  ASSERT_TRUE(first.ok()) << first.message();
  auto second = state.reservations().reserve({"u2", "team/p2", 0, 0}, half(1), scheduling::Clock::now());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(), "exceeds ResourceQuota team/gpu limits.fracpack.io/gpu: used 1 card, asked 1 card, hard 1 card");
  // Another namespace is not limited by it.
  EXPECT_TRUE(state.reservations().reserve({"u3", "other/p3", 0, 0}, half(1), scheduling::Clock::now()).ok());
  // The first pod's bind failed: its reservation released, the card is the namespace's again.
  EXPECT_TRUE(state.reservations().settle("u1", k8s::Reservations::Settlement::kNotBound));
  EXPECT_TRUE(state.reservations().reserve({"u2", "team/p2", 0, 0}, half(2), scheduling::Clock::now()).ok());
}


// The bind fence with a namespace's pods (k8s/reservations.h recheck,
// `in_namespace`): another writer's bind on another node, not yet
// delivered by the watch, counts against the quota. Found by the failover
// soak with quotas (test/server/failover_test.cc): the new leader let a
// namespace hold 5 cards of 4.
k8s::Pod bound_in(const std::string& ns, const std::string& name, const std::string& node, int card) {
  return decoded_pod(pod_object(PodSpec(name, ns, node, "Running", half_card(),
                                        {{"fracpack.io/allocation", allocation_annotation(node, {{card, 50}}, 8192)}}, "u-" + name)));
}

// Nodes n1 and n2 of 2 cards, and namespace team's quota of `cards` cards.
void two_nodes_and_a_card_quota(k8s::ClusterState& state, const std::string& cards) {
  state.apply_node(decoded_node("n1", 2));
  state.apply_node(decoded_node("n2", 2));
  state.apply_resource_quota(quota("team", "gpu", {{"limits.fracpack.io/gpu", cards}}));
}

Result<k8s::Reservations::Rechecked> reserve_half_and_recheck(k8s::ClusterState& state, const std::vector<k8s::Pod>& in_namespace) {
  const scheduling::Allocation half{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
  if (auto r = state.reservations().reserve({"u1", "team/p1", 0, 0}, fixed_choice(half), scheduling::Clock::now()); !r) return r.error();
  return state.reservations().recheck("n1", {}, "u1", fixed_choice(half), in_namespace);
}

TEST(QuotaFence, AnotherWritersBindOnAnotherNodeThatTheWatchLacksCountsAgainstTheQuota) {
  k8s::ClusterState state(k8s::SyncOptions{});
  two_nodes_and_a_card_quota(state, "1");
  auto r = reserve_half_and_recheck(state, {bound_in("team", "other", "n2", 0)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "namespace team holds pods bound by another scheduler that fracpack's watch had not delivered yet: exceeds ResourceQuota "
            "team/gpu limits.fracpack.io/gpu: used 1 card, asked 1 card, hard 1 card");
  state.read([](const scheduling::Ledger& l) {
    EXPECT_EQ(l.pod("u1"), nullptr) << "the reservation is released";
    EXPECT_EQ(l.pod("u-other")->phase, scheduling::PodPhase::kConfirmed);
    EXPECT_EQ(l.pod("u-other")->node, "n2");
    EXPECT_EQ(l.namespace_use("team").cards, 1);
    EXPECT_TRUE(l.check_invariants().ok());
    return 0;
  });
  EXPECT_EQ(state.counters().fence_caught_up, 1u);
}

TEST(QuotaFence, KeepsTheReservationWhenTheQuotaHoldsBoth) {
  k8s::ClusterState state(k8s::SyncOptions{});
  two_nodes_and_a_card_quota(state, "2");
  auto r = reserve_half_and_recheck(state, {bound_in("team", "other", "n2", 0)});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 1u);
  EXPECT_FALSE(r->moved);
  EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.namespace_use("team").cards; }), 2);
}

// The watch delivered another writer's pod after this bind reserved
// (confirm records a bound pod even past the quota): the fence's recheck
// finds the namespace over its quota with nothing missing, and refuses.
TEST(QuotaFence, ANamespacePutOverItsQuotaSinceTheReservationRefusesTheBind) {
  k8s::ClusterState state(k8s::SyncOptions{});
  two_nodes_and_a_card_quota(state, "1");
  const scheduling::Allocation half{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
  ASSERT_TRUE(state.reservations().reserve({"u1", "team/p1", 0, 0}, fixed_choice(half), scheduling::Clock::now()).ok());
  state.apply_pod(bound_in("team", "other", "n2", 0));
  auto r = state.reservations().recheck("n1", {}, "u1", fixed_choice(half), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "namespace team is at its GPU quota: exceeds ResourceQuota team/gpu limits.fracpack.io/gpu: used 1 card, asked 1 card, "
            "hard 1 card");
  EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.pod("u1"); }), nullptr);
}

// A quota lowered (or made unreadable) while the bind was in flight: the
// reservation is a new placement, refused with the quota's own reason.
TEST(QuotaFence, AQuotaLoweredOrMadeUnreadableSinceTheReservationRefusesTheBindWithItsReason) {
  for (const std::string hard : {"0", "1.5"}) {
    k8s::ClusterState state(k8s::SyncOptions{});
    state.apply_node(decoded_node("n1", 2));
    state.apply_resource_quota(quota("team", "gpu", {{"limits.fracpack.io/gpu", "2"}}));
    const scheduling::Allocation half{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
    ASSERT_TRUE(state.reservations().reserve({"u1", "team/p1", 0, 0}, fixed_choice(half), scheduling::Clock::now()).ok());
    state.apply_resource_quota(quota("team", "gpu", {{"limits.fracpack.io/gpu", hard}}));
    auto r = state.reservations().recheck("n1", {}, "u1", fixed_choice(half), {});
    ASSERT_FALSE(r.ok()) << hard;
    EXPECT_TRUE(r.message().starts_with("namespace team is at its GPU quota: ")) << r.message();
    EXPECT_NE(r.message().find(hard == "0" ? "hard 0 cards" : "cannot be read"), std::string::npos) << r.message();
    EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.pod("u1"); }), nullptr);
  }
}

// A namespace pod on this very node that the node's read lacked (bound
// between the two reads) counts for the cards too, once.
TEST(QuotaFence, ANamespacePodOnThisNodeIsAppliedOnce) {
  k8s::ClusterState state(k8s::SyncOptions{});
  state.apply_node(decoded_node("n1", 2));
  state.apply_resource_quota(quota("team", "gpu", {{"limits.fracpack.io/gpu", "4"}}));
  const k8s::Pod other = bound_in("team", "other", "n1", 0);
  const scheduling::Allocation half{"n1", {scheduling::ContainerAllocation{"main", false, {scheduling::CardShare{0, "", 8192, 500}}}}};
  ASSERT_TRUE(state.reservations().reserve({"u1", "team/p1", 0, 0}, fixed_choice(half), scheduling::Clock::now()).ok());
  auto r = state.reservations().recheck("n1", {other}, "u1", fixed_choice(half), {other});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->applied, 1u) << "seen in both reads, applied once";
  EXPECT_EQ(state.counters().fence_caught_up, 1u);
  EXPECT_EQ(state.read([](const scheduling::Ledger& l) { return l.namespace_use("team").cards; }), 2);
}

}  // namespace
}  // namespace fracpack::testing::k8s_quota_test
