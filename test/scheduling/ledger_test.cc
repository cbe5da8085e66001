#include "scheduling/ledger.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "scheduling/fit.h"
#include "test/support/testlib.h"

namespace fracpack::scheduling::ledger_test {
namespace {

using fracpack::testing::node;

Allocation share(const std::string& node_name, int index, int cores, int64_t memory = 0) {
  Allocation a;
  a.node = node_name;
  a.containers.push_back(ContainerAllocation{"main", false, {CardShare{index, "", memory, cores}}});
  return a;
}

PodFacts facts(const std::string& uid, int64_t cpu = 1000) { return PodFacts{uid, "default/" + uid, cpu, 1 << 20}; }

const auto kFar = Clock::time_point::max();

TEST(Ledger, AssumeConfirmForgetRemove) {
  Ledger l;
  l.upsert_node(node("n1", 2));
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 500, 4096), kFar).ok());
  EXPECT_EQ(l.pod("a")->phase, PodPhase::kAssumed);
  EXPECT_EQ(l.assumed_count(), 1u);
  EXPECT_EQ(l.node("n1")->use()[0], (CardUse{4096, 500, 1}));
  EXPECT_EQ(l.node("n1")->cpu_requested(), 1000);

  // The annotation read back confirms the same reservation without double counting.
  EXPECT_EQ(l.confirm(facts("a"), share("n1", 0, 500, 4096)), 0);
  EXPECT_EQ(l.pod("a")->phase, PodPhase::kConfirmed);
  EXPECT_EQ(l.assumed_count(), 0u);
  EXPECT_EQ(l.node("n1")->use()[0], (CardUse{4096, 500, 1}));

  // forget() only drops assumed reservations.
  EXPECT_FALSE(l.forget("a"));
  EXPECT_TRUE(l.remove("a"));
  EXPECT_EQ(l.node("n1")->use()[0], CardUse{});
  EXPECT_EQ(l.node("n1")->cpu_requested(), 0);
  EXPECT_TRUE(l.check_invariants().ok());
}

// Caches key on versions and index by slots: a version changes with every
// change of a node (cards included, pods or not) and is never seen again,
// even on a node deleted and re-created under the same name and slot.
TEST(Ledger, VersionsAreNeverReusedAndSlotsAre) {
  Ledger l;
  l.upsert_node(node("n1", 2));
  l.upsert_node(node("n2", 2));
  const uint64_t v1 = l.node("n1")->version();
  EXPECT_NE(l.node("n1")->slot(), l.node("n2")->slot());
  EXPECT_EQ(l.slot_bound(), 2u);
  l.upsert_node(node("n1", 4));  // cards change, no pods
  EXPECT_NE(l.node("n1")->version(), v1);
  std::set<uint64_t> seen = {v1, l.node("n1")->version(), l.node("n2")->version()};
  const uint32_t slot = l.node("n1")->slot();
  l.remove_node("n1");  // no pods: dropped
  EXPECT_EQ(l.node("n1"), nullptr);
  l.upsert_node(node("n3", 2));
  EXPECT_EQ(l.node("n3")->slot(), slot) << "the slot is reused";
  EXPECT_TRUE(seen.insert(l.node("n3")->version()).second) << "the version is not";
  l.upsert_node(node("n1", 2));
  EXPECT_TRUE(seen.insert(l.node("n1")->version()).second);
  EXPECT_EQ(l.slot_bound(), 3u);
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 300), kFar).ok());
  EXPECT_TRUE(seen.insert(l.node("n1")->version()).second);
  EXPECT_TRUE(l.check_invariants().ok());
}

// The journal behind changed_since: every node changed after a stamp, and
// an honest "too far back" once the ring has moved past it.
TEST(Ledger, ChangedSinceNamesEveryChangedNodeOrSaysItCannot) {
  Ledger l;
  l.upsert_node(node("n1", 2));
  l.upsert_node(node("n2", 2));
  l.upsert_node(node("n3", 2));
  const uint64_t stamp = l.change_stamp();
  EXPECT_EQ(stamp, l.node("n3")->version());
  std::vector<uint32_t> changed;
  ASSERT_TRUE(l.changed_since(stamp, changed));
  EXPECT_TRUE(changed.empty());

  ASSERT_TRUE(l.assume(facts("a"), share("n2", 0, 300), kFar).ok());
  EXPECT_TRUE(l.forget("a"));
  ASSERT_TRUE(l.changed_since(stamp, changed));
  EXPECT_EQ(std::set<uint32_t>(changed.begin(), changed.end()), std::set<uint32_t>{l.node("n2")->slot()});
  changed.clear();
  ASSERT_TRUE(l.changed_since(0, changed)) << "the ring is not full: every change is remembered";
  EXPECT_EQ(std::set<uint32_t>(changed.begin(), changed.end()),
            (std::set<uint32_t>{l.node("n1")->slot(), l.node("n2")->slot(), l.node("n3")->slot()}));

  // Past the ring: changes at or before the oldest kept are forgotten.
  uint64_t recent = 0;
  for (size_t i = 0; i < Ledger::kJournal; ++i) {
    if (i == Ledger::kJournal - 10) recent = l.change_stamp();
    ASSERT_TRUE(l.assume(facts("b"), share("n1", 1, 100), kFar).ok());
    ASSERT_TRUE(l.forget("b"));
  }
  changed.clear();
  EXPECT_FALSE(l.changed_since(stamp, changed));
  changed.clear();
  ASSERT_TRUE(l.changed_since(recent, changed)) << "the latest changes are kept";
  EXPECT_GE(changed.size(), 20u);
  EXPECT_EQ(std::set<uint32_t>(changed.begin(), changed.end()), std::set<uint32_t>{l.node("n1")->slot()});
}

TEST(Ledger, AssumeRefusesWhatNoLongerFits) {
  Ledger l;
  l.upsert_node(node("n1", 1, 16384));
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 600), kFar).ok());
  Status s = l.assume(facts("b"), share("n1", 0, 500), kFar);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("compute free"), std::string::npos) << s.message();
  s = l.assume(facts("c"), share("n1", 0, 100, 20000), kFar);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("MiB free"), std::string::npos) << s.message();
  EXPECT_FALSE(l.assume(facts("a"), share("n1", 0, 100), kFar).ok()) << "same UID twice";
  EXPECT_FALSE(l.assume(facts("d"), share("nx", 0, 100), kFar).ok()) << "unknown node";
  EXPECT_FALSE(l.assume(facts("e"), share("n1", 7, 100), kFar).ok()) << "unknown card";
  EXPECT_TRUE(l.check_invariants().ok());
}

TEST(Ledger, FullyTakenCardAcceptsNothingMore) {
  Ledger l;
  l.upsert_node(node("n1", 1));
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 1000), kFar).ok());
  Status s = l.assume(facts("b"), share("n1", 0, 0, 1024), kFar);  // memory only, no compute
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exclusively"), std::string::npos) << s.message();
}

TEST(Ledger, ConfirmReplacesADifferentReservation) {
  Ledger l;
  l.upsert_node(node("n1", 2));
  l.upsert_node(node("n2", 2));
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 500), kFar).ok());
  // Another replica bound it elsewhere: the annotation wins.
  l.confirm(facts("a"), share("n2", 1, 300));
  EXPECT_EQ(l.node("n1")->use()[0], CardUse{});
  EXPECT_EQ(l.node("n2")->use()[1], (CardUse{0, 300, 1}));
  EXPECT_EQ(l.pod("a")->phase, PodPhase::kConfirmed);
  EXPECT_TRUE(l.check_invariants().ok());
}

TEST(Ledger, ExpireDropsOnlyOverdueAssumptions) {
  Ledger l;
  l.upsert_node(node("n1", 2));
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  ASSERT_TRUE(l.assume(facts("a"), share("n1", 0, 100), t0 + std::chrono::seconds(30)).ok());
  ASSERT_TRUE(l.assume(facts("b"), share("n1", 1, 100), t0 + std::chrono::seconds(90)).ok());
  l.confirm(facts("c"), share("n1", 0, 100));
  EXPECT_TRUE(l.expire(t0 + std::chrono::seconds(29)).empty());
  auto gone = l.expire(t0 + std::chrono::seconds(60));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].uid, "a");
  EXPECT_EQ(l.pod("a"), nullptr);
  EXPECT_NE(l.pod("b"), nullptr);
  EXPECT_NE(l.pod("c"), nullptr);
  EXPECT_TRUE(l.check_invariants().ok());
}

TEST(Ledger, PodsBeforeTheirNodeAndNodeChanges) {
  Ledger l;
  // A bound pod seen before its node: kept, charged once the node appears.
  l.confirm(facts("a"), share("n1", 1, 400, 1000));
  EXPECT_FALSE(l.node("n1")->present());
  l.upsert_node(node("n1", 2));
  EXPECT_EQ(l.node("n1")->use()[1], (CardUse{1000, 400, 1}));
  EXPECT_EQ(l.total_cores_used(), 400);
  // The node loses card 1: the charge has nowhere to go, and comes back with it.
  l.upsert_node(node("n1", 1));
  EXPECT_EQ(l.total_cores_used(), 0);
  l.upsert_node(node("n1", 2));
  EXPECT_EQ(l.node("n1")->use()[1], (CardUse{1000, 400, 1}));
  // A status-only update keeps usage and bumps the version.
  const uint64_t v = l.node("n1")->version();
  NodeSpec spec = node("n1", 2);
  spec.cpu_milli = 1;
  l.upsert_node(spec);
  EXPECT_GT(l.node("n1")->version(), v);
  EXPECT_EQ(l.node("n1")->use()[1], (CardUse{1000, 400, 1}));
  // Node deleted, pod still there; pod deleted: the node entry goes.
  l.remove_node("n1");
  EXPECT_FALSE(l.node("n1")->present());
  EXPECT_TRUE(l.remove("a"));
  EXPECT_EQ(l.node("n1"), nullptr);
  EXPECT_TRUE(l.check_invariants().ok());
}

TEST(Ledger, ConfirmReportsExternalOvercommit) {
  Ledger l;
  l.upsert_node(node("n1", 1));
  EXPECT_EQ(l.confirm(facts("a"), share("n1", 0, 700)), 0);
  EXPECT_EQ(l.confirm(facts("b"), share("n1", 0, 700)), 1);
  EXPECT_EQ(l.overcommitted_cards(), 1);
  Status s = l.check_invariants();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("over-committed"), std::string::npos);
  EXPECT_TRUE(l.check_invariants(/*capacity=*/false).ok());
}

TEST(Ledger, InitContainersChargeTheMaxCardByCard) {
  Allocation a;
  a.node = "n1";
  a.containers.push_back(ContainerAllocation{"app1", false, {CardShare{0, "", 1000, 200}, CardShare{1, "", 1000, 200}}});
  a.containers.push_back(ContainerAllocation{"app2", false, {CardShare{0, "", 500, 100}}});
  a.containers.push_back(ContainerAllocation{"init", true, {CardShare{0, "", 4000, 100}, CardShare{2, "", 100, 900}}});
  const auto charges = charges_of(a);
  ASSERT_EQ(charges.size(), 3u);
  EXPECT_EQ(charges[0], (CardCharge{0, 4000, 300, 2}));  // max(1500, 4000) MiB, max(300, 100) milli, 2 app shares
  EXPECT_EQ(charges[1], (CardCharge{1, 1000, 200, 1}));
  EXPECT_EQ(charges[2], (CardCharge{2, 100, 900, 1}));  // the init container's alone
}

// Random operation sequences through the public API; the invariants hold
// after every step and no card is ever over-committed by assume().
TEST(Ledger, RandomOperationsKeepInvariants) {
  std::mt19937_64 rng(12345);
  Ledger l;
  for (int n = 0; n < 6; ++n) l.upsert_node(node("n" + std::to_string(n), 1 + n % 4, 8192 * (1 + n % 3)));
  std::vector<std::string> live;
  int placed = 0, refused = 0;
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 100);
    if (op < 45) {  // assume a random share on a random card
      const std::string uid = "p" + std::to_string(step);
      const std::string nn = "n" + std::to_string(rng() % 6);
      const NodeState* ns = l.node(nn);
      if (ns == nullptr || ns->cards().empty()) continue;
      const int index = static_cast<int>(rng() % ns->cards().size());
      const int cores = static_cast<int>(rng() % 11) * 100;
      const int64_t mem = static_cast<int64_t>(rng() % 9) * 1024;
      Status s = l.assume(facts(uid), share(nn, index, cores, mem), t0 + std::chrono::seconds(rng() % 120));
      if (s.ok()) {
        live.push_back(uid);
        ++placed;
      } else {
        ++refused;
      }
    } else if (op < 60 && !live.empty()) {  // confirm an assumed one as is
      const std::string& uid = live[rng() % live.size()];
      if (const PodRecord* r = l.pod(uid); r != nullptr && r->phase == PodPhase::kAssumed) {
        l.confirm(PodFacts{uid, r->key, r->cpu_milli, r->memory_bytes}, r->allocation);
      }
    } else if (op < 75 && !live.empty()) {  // delete
      const size_t i = rng() % live.size();
      l.remove(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 85 && !live.empty()) {  // bind failed
      l.forget(live[rng() % live.size()]);
    } else if (op < 92) {  // time passes
      l.expire(t0 + std::chrono::seconds(rng() % 200));
    } else if (op < 96) {  // a node's status heartbeat, same cards
      const std::string nn = "n" + std::to_string(rng() % 6);
      if (const NodeState* ns = l.node(nn); ns != nullptr && ns->present()) {
        NodeSpec spec = ns->spec();
        spec.cpu_milli += 1;
        l.upsert_node(spec);
      }
    } else {  // a node gains or loses cards
      const int n = static_cast<int>(rng() % 6);
      l.upsert_node(node("n" + std::to_string(n), 1 + static_cast<int>(rng() % 4), 8192 * (1 + n % 3)));
    }
    Status inv = l.check_invariants(/*capacity=*/false);
    ASSERT_TRUE(inv.ok()) << "step " << step << ": " << inv.message();
    // Capacity can only be exceeded when a node shrinks under confirmed pods;
    // assume() itself never exceeds it.
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused, 100);
}

// With only assume/confirm/forget/remove/expire (no external changes), no
// card is ever over capacity.
TEST(Ledger, AssumeNeverOvercommits) {
  std::mt19937_64 rng(777);
  Ledger l;
  for (int n = 0; n < 4; ++n) l.upsert_node(node("n" + std::to_string(n), 2, 16384));
  std::vector<std::string> live;
  for (int step = 0; step < 20000; ++step) {
    const std::string uid = "p" + std::to_string(step);
    const std::string nn = "n" + std::to_string(rng() % 4);
    if (rng() % 3 != 0) {
      Status s = l.assume(facts(uid), share(nn, static_cast<int>(rng() % 2), static_cast<int>(rng() % 6) * 100,
                                            static_cast<int64_t>(rng() % 5) * 2048),
                          Clock::time_point::max());
      if (s.ok()) live.push_back(uid);
    } else if (!live.empty()) {
      const size_t i = rng() % live.size();
      l.remove(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    ASSERT_EQ(l.overcommitted_cards(), 0) << "step " << step;
  }
  EXPECT_TRUE(l.check_invariants().ok());
}

}  // namespace
}  // namespace fracpack::scheduling::ledger_test
