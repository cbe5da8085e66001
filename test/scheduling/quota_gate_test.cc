// scheduling/quota_gate.h: the one rule for a pod's namespace quota on a
// node, as the replay, the extender's filter and its preempt ask it.
#include "scheduling/quota_gate.h"

#include <gtest/gtest.h>

#include "scheduling/ledger.h"
#include "test/support/testlib.h"

namespace fracpack::scheduling::scheduling_quota_gate_test {
namespace {

PodRequest half_of_a_card(const std::string& ns) {  // half of a card's memory, on one card
  PodRequest pod;
  pod.namespace_name = ns;
  pod.containers.push_back(ContainerRequest{"main", false, 1, 0, 50, 300});
  return pod;
}

QuotaLimit memory_limit(int64_t hard) { return {"q", "limits.fracpack.io/gpu-memory", QuotaResource::kMemoryMib, hard, ""}; }

Picks card(int position) {
  Picks p;
  p.push(position);
  return p;
}

// Before the cards are chosen, a share sized by the card under a memory
// limit is judged once when the ledger's smallest and largest cards agree
// (admitted on both, or refused on both), and per node only in between; the
// bounds follow the nodes as they come and go.
TEST(QuotaGate, AShareSizedByTheCardIsJudgedOnceWhereTheLedgersCardsAgree) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("small", 2, 16384));
  l.upsert_node(fracpack::testing::node("big", 2, 81920, "A100"));
  EXPECT_EQ(l.card_memory_bounds(), (std::pair<int64_t, int64_t>{16384, 81920}));
  const PodRequest half = half_of_a_card("team");
  auto gate = [&](int64_t hard) {
    l.set_quota("team", {memory_limit(hard)});
    return QuotaGate(l, "team", half);
  };
  const QuotaGate roomy = gate(100000);
  EXPECT_TRUE(roomy.everywhere().ok());
  EXPECT_FALSE(roomy.per_node()) << "40960 MiB on the largest card fits: every node admits it";
  const QuotaGate between = gate(20000);
  EXPECT_TRUE(between.everywhere().ok());
  EXPECT_TRUE(between.per_node()) << "8192 MiB on the small card fits, 40960 on the big one does not";
  EXPECT_TRUE(between.admits(*l.node("small"), card(0)).ok());
  EXPECT_EQ(between.admits(*l.node("big"), card(1)).message(),
            "exceeds ResourceQuota team/q limits.fracpack.io/gpu-memory: used 0 MiB, asked 40960 MiB, hard 20000 MiB");
  const QuotaGate tight = gate(4096);
  EXPECT_FALSE(tight.per_node());
  EXPECT_EQ(tight.everywhere().message(), "exceeds ResourceQuota team/q limits.fracpack.io/gpu-memory: used 0 MiB, asked 8192 MiB, hard 4096 MiB")
      << "refused on the smallest card: on every node";
  EXPECT_EQ(tight.admits(*l.node("small"), card(0)).message(), tight.everywhere().message());
  // The big node goes: the bounds follow, and the share is judged once again.
  l.remove_node("big");
  EXPECT_EQ(l.card_memory_bounds(), (std::pair<int64_t, int64_t>{16384, 16384}));
  EXPECT_FALSE(gate(20000).per_node());
  l.upsert_node(fracpack::testing::node("small", 2, 24576));  // its cards replaced
  EXPECT_EQ(l.card_memory_bounds(), (std::pair<int64_t, int64_t>{24576, 24576}));
  EXPECT_TRUE(l.check_invariants().ok()) << l.check_invariants().message();
  // No limit on memory, or none at all: once, admitted.
  l.set_quota("team", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 1, ""}});
  EXPECT_FALSE(QuotaGate(l, "team", half).per_node());
  EXPECT_TRUE(QuotaGate(l, "other", half).everywhere().ok());
}

// A node the ledger does not hold (projected from its Node object) may have
// cards outside the ledger's bounds: its own cards are counted, though the
// pod was judged once for the ledger's nodes.
TEST(QuotaGate, ANodeWithCardsOutsideTheLedgersBoundsIsCountedOnItsOwnCards) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("small", 2, 16384));
  l.set_quota("team", {memory_limit(20000)});
  const PodRequest half = half_of_a_card("team");
  const QuotaGate gate(l, "team", half);
  ASSERT_TRUE(gate.everywhere().ok());
  EXPECT_FALSE(gate.per_node());
  const NodeState big = l.project(fracpack::testing::node("big", 1, 81920, "A100"));
  EXPECT_EQ(gate.admits(big, card(0)).message(),
            "exceeds ResourceQuota team/q limits.fracpack.io/gpu-memory: used 0 MiB, asked 40960 MiB, hard 20000 MiB");
  const NodeState small2 = l.project(fracpack::testing::node("small2", 1, 16384));
  EXPECT_TRUE(gate.admits(small2, card(0)).ok());
}

// What victims of the pod's own namespace hold is given back before the
// count (preempt); the pod itself, judged again while its reservation is
// held, is not counted twice.
TEST(QuotaGate, WhatVictimsOfItsNamespaceHoldIsGivenBackAndThePodItselfNotCountedTwice) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n", 2, 16384));
  l.set_quota("team", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 1, ""}});
  Allocation held;
  held.node = "n";
  held.containers.push_back(ContainerAllocation{"main", false, {{0, "", 8192, 300}}});
  l.confirm(PodFacts{"u-old", "team/old", 100, 100}, held);
  const PodRequest half = half_of_a_card("team");
  const QuotaGate gate(l, "team", half);
  EXPECT_EQ(gate.everywhere().message(), "exceeds ResourceQuota team/q limits.fracpack.io/gpu: used 1 card, asked 1 card, hard 1 card");
  EXPECT_EQ(gate.admits(*l.node("n"), card(1)).message(), gate.everywhere().message());
  EXPECT_TRUE(gate.admits(*l.node("n"), card(1), QuotaUse{1, 8192, 300}).ok()) << "its namespace's victim frees the card";
  EXPECT_TRUE(QuotaGate(l, "team", half, "u-old").everywhere().ok()) << "the pod's own record is not counted against it";
}

// A pod without cards asks nothing of the quota, even one refusing all.
TEST(QuotaGate, APodWithoutCardsIsNeverRefused) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n", 1, 16384));
  l.set_quota("team", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 0, ""}});
  PodRequest cpu_only;
  cpu_only.namespace_name = "team";
  const QuotaGate gate(l, "team", cpu_only);
  EXPECT_TRUE(gate.everywhere().ok());
  EXPECT_TRUE(gate.admits(*l.node("n"), Picks{}).ok());
}

}  // namespace
}  // namespace fracpack::scheduling::scheduling_quota_gate_test
