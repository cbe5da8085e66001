#include "scheduling/fit.h"

#include "scheduling/decision_cache.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::scheduling::fit_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;

const BestCardRanker kBest;

PodFacts facts(const PodRequest& p) { return PodFacts{p.uid, p.key(), p.cpu_milli, p.memory_bytes}; }

// Places `p` with the best ranker and commits it; returns the card indices.
std::vector<int> place(Ledger& l, const std::string& node_name, const PodRequest& p) {
  FitResult r = explain_fit(p, *l.node(node_name), FitOptions{}, kBest);
  EXPECT_TRUE(r.fits) << r.reason;
  if (!r.fits) return {};
  Allocation a = materialize(p, *l.node(node_name), r.picks);
  EXPECT_TRUE(l.assume(facts(p), a, Clock::time_point::max()).ok());
  std::vector<int> cards;
  for (const auto& c : a.containers) {
    for (const auto& s : c.cards) cards.push_back(s.index);
  }
  return cards;
}

TEST(Fit, SharesPackOntoTheFullestCardThatFits) {
  Ledger l;
  l.upsert_node(node("n", 4));
  EXPECT_EQ(place(l, "n", pod("a", 1, 600)), std::vector<int>{0});
  EXPECT_EQ(place(l, "n", pod("b", 1, 300)), std::vector<int>{0});  // 400 free on card 0: fits there
  EXPECT_EQ(place(l, "n", pod("c", 1, 200)), std::vector<int>{1});  // only 100 left on 0
  EXPECT_EQ(place(l, "n", pod("d", 2, 1000)), (std::vector<int>{2, 3}));
  FitResult r = explain_fit(pod("e", 1, 900), *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.unresolvable);
  EXPECT_NE(r.reason.find("insufficient GPU"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("90% compute"), std::string::npos) << r.reason;
  EXPECT_FALSE(fits(pod("e", 1, 900), *l.node("n"), FitOptions{}));
  EXPECT_TRUE(fits(pod("f", 1, 800), *l.node("n"), FitOptions{}));
}

TEST(Fit, MemoryIsASecondDimension) {
  Ledger l;
  l.upsert_node(node("n", 1, 16384));
  place(l, "n", pod("a", 1, 100, 12000));
  FitResult r = explain_fit(pod("b", 1, 100, 8192), *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_NE(r.reason.find("8192 MiB"), std::string::npos) << r.reason;
  EXPECT_TRUE(fits(pod("c", 1, 100, 4384), *l.node("n"), FitOptions{}));
  // Memory percent resolves against the card's size (rounded up).
  PodRequest pct = pod("d", 1, 0);
  pct.containers[0].memory_percent = 25;  // 4096 MiB of 16384
  EXPECT_TRUE(fits(pct, *l.node("n"), FitOptions{}));
  pct.containers[0].memory_percent = 27;
  EXPECT_FALSE(fits(pct, *l.node("n"), FitOptions{}));
}

TEST(Fit, UnresolvableReasons) {
  Ledger l;
  l.upsert_node(node("n", 2, 16384, "T4"));
  PodRequest p = pod("a", 1, 500);
  p.allowed_models = {"V100M16", "V100M32"};
  FitResult r = explain_fit(p, *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_EQ(r.reason, "no GPU of model V100M16|V100M32 (node has T4)");

  r = explain_fit(pod("b", 4, 1000), *l.node("n"), FitOptions{}, kBest);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_NE(r.reason.find("needs 4 GPUs, node has 2 GPUs"), std::string::npos) << r.reason;

  r = explain_fit(pod("c", 1, 100, 40000), *l.node("n"), FitOptions{}, kBest);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_NE(r.reason.find("40000 MiB"), std::string::npos) << r.reason;

  l.upsert_node(node("empty", 0));
  r = explain_fit(pod("d", 1, 100), *l.node("empty"), FitOptions{}, kBest);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_EQ(r.reason, "node has no fracpack GPUs");
  // A pod without GPU requests fits a GPU-less node.
  EXPECT_TRUE(explain_fit(pod("e", 0, 0), *l.node("empty"), FitOptions{}, kBest).fits);
}

TEST(Fit, UuidListsAndCordonedOrUnhealthyCards) {
  Ledger l;
  NodeSpec spec = node("n", 3);
  spec.cards[0].healthy = false;
  spec.cards[1].cordoned = true;
  l.upsert_node(spec);
  EXPECT_EQ(place(l, "n", pod("a", 1, 100)), std::vector<int>{2});
  FitResult r = explain_fit(pod("b", 2, 100), *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.unresolvable) << "health and cordons can change";
  EXPECT_NE(r.reason.find("unhealthy or cordoned"), std::string::npos) << r.reason;

  Ledger m;
  m.upsert_node(node("m", 3));
  PodRequest only = pod("c", 1, 100);
  only.uuid_allow = {"GPU-m-2"};
  EXPECT_EQ(place(m, "m", only), std::vector<int>{2});
  PodRequest except = pod("d", 2, 100);
  except.uuid_exclude = {"GPU-m-0"};
  EXPECT_EQ(place(m, "m", except), (std::vector<int>{2, 1}));  // card 2 is fuller: best fit first
}

TEST(Fit, NodeResourcesWhenAsked) {
  Ledger l;
  l.upsert_node(node("n", 1, 16384, "T4", 4000, int64_t{8} << 30));
  PodRequest p = pod("a", 1, 100, 0, 5000);
  FitResult r = explain_fit(p, *l.node("n"), FitOptions{true}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.reason, "insufficient cpu: needs 5000m, 4000m free");
  EXPECT_TRUE(explain_fit(p, *l.node("n"), FitOptions{false}, kBest).fits);
  p.cpu_milli = 100;
  p.memory_bytes = int64_t{9} << 30;
  r = explain_fit(p, *l.node("n"), FitOptions{true}, kBest);
  EXPECT_NE(r.reason.find("insufficient memory"), std::string::npos) << r.reason;
}

TEST(Fit, SingleNumaNode) {
  Ledger l;
  NodeSpec spec = node("n", 4);
  spec.cards[0].numa = 0;
  spec.cards[1].numa = 0;
  spec.cards[2].numa = 1;
  spec.cards[3].numa = 1;
  l.upsert_node(spec);
  place(l, "n", pod("a", 1, 500));  // card 0 (numa 0) half used
  PodRequest p = pod("b", 2, 600);
  p.numa_single = true;
  EXPECT_EQ(place(l, "n", p), (std::vector<int>{2, 3}));  // numa 0 has only one card with 60% free
  PodRequest q = pod("c", 3, 100);
  q.numa_single = true;
  FitResult r = explain_fit(q, *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_NE(r.reason.find("one NUMA node"), std::string::npos) << r.reason;
}

TEST(Fit, SeveralContainersAreAssignedTogether) {
  // Cards with 800 and 700 milli free; shares of 500, 400, 300, 300 fit only
  // as {500, 300} + {400, 300}: best-fit-decreasing alone fails (500 -> 700,
  // 400 -> 800, 300 -> 400, then 300 finds 200 and 100), the search finds it.
  Ledger l;
  l.upsert_node(node("n", 2, 16384));
  Allocation others;
  others.node = "n";
  others.containers.push_back(ContainerAllocation{"x", false, {CardShare{0, "", 0, 200}, CardShare{1, "", 0, 300}}});
  ASSERT_TRUE(l.assume(PodFacts{"o", "d/o", 0, 0}, others, Clock::time_point::max()).ok());
  PodRequest p = pod("a", 1, 500);
  for (int cores : {400, 300, 300}) {
    ContainerRequest c;
    c.name = "c" + std::to_string(cores) + "-" + std::to_string(p.containers.size());
    c.cards = 1;
    c.cores = cores;
    p.containers.push_back(c);
  }
  FitResult r = explain_fit(p, *l.node("n"), FitOptions{}, kBest);
  ASSERT_TRUE(r.fits) << r.reason;
  EXPECT_TRUE(fits(p, *l.node("n"), FitOptions{}));
  ASSERT_TRUE(l.assume(facts(p), materialize(p, *l.node("n"), r.picks), Clock::time_point::max()).ok());
  EXPECT_EQ(l.node("n")->use()[0].cores, 1000);
  EXPECT_EQ(l.node("n")->use()[1].cores, 1000);
  EXPECT_TRUE(l.check_invariants().ok());

  // Two containers that cannot both fit: a clear reason.
  Ledger m;
  m.upsert_node(node("m", 1));
  PodRequest q = pod("b", 1, 600);
  ContainerRequest other;
  other.name = "second";
  other.cards = 1;
  other.cores = 600;
  q.containers.push_back(other);
  r = explain_fit(q, *m.node("m"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_NE(r.reason.find("do not fit together"), std::string::npos) << r.reason;
}

TEST(Fit, InitContainersBorrowTheirPodsShares) {
  Ledger l;
  l.upsert_node(node("n", 2, 16384));
  place(l, "n", pod("other", 1, 500));  // card 0 half used by another pod
  PodRequest p = pod("a", 1, 400);
  ContainerRequest init;
  init.name = "warmup";
  init.init = true;
  init.cards = 1;
  init.cores = 300;
  p.containers.push_back(init);
  FitResult r = explain_fit(p, *l.node("n"), FitOptions{}, kBest);
  ASSERT_TRUE(r.fits) << r.reason;
  Allocation a = materialize(p, *l.node("n"), r.picks);
  // The init container runs on the card the app share already holds, at no extra cost.
  EXPECT_EQ(a.containers[1].cards[0].index, a.containers[0].cards[0].index);
  ASSERT_TRUE(l.assume(facts(p), a, Clock::time_point::max()).ok());
  EXPECT_EQ(l.node("n")->use()[static_cast<size_t>(a.containers[0].cards[0].index)].cores, 900);

  // An init container larger than the app share is charged its max, never the sum.
  Ledger m;
  m.upsert_node(node("m", 1, 16384));
  PodRequest q = pod("b", 1, 200);
  ContainerRequest big_init = init;
  big_init.cores = 700;
  q.containers.push_back(big_init);
  r = explain_fit(q, *m.node("m"), FitOptions{}, kBest);
  ASSERT_TRUE(r.fits) << r.reason;
  ASSERT_TRUE(m.assume(facts(q), materialize(q, *m.node("m"), r.picks), Clock::time_point::max()).ok());
  EXPECT_EQ(m.node("m")->use()[0].cores, 700);
}

TEST(Fit, UnknownNode) {
  Ledger l;
  l.confirm(PodFacts{"u", "d/u", 0, 0}, Allocation{"ghost", {}});
  FitResult r = explain_fit(pod("a", 1, 100), *l.node("ghost"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.reason, "node is not known to fracpack");
}

// HAMi's split count: a card serves at most max_sharers container shares,
// whatever memory and compute it has left.
TEST(Fit, ACardsSharerLimitCountsContainerShares) {
  Ledger l;
  NodeSpec spec = node("n", 2, 16384);
  for (auto& c : spec.cards) c.max_sharers = 2;
  l.upsert_node(spec);
  EXPECT_EQ(place(l, "n", pod("a", 1, 100, 1000)), std::vector<int>{0});
  EXPECT_EQ(place(l, "n", pod("b", 1, 100, 1000)), std::vector<int>{0});
  EXPECT_EQ(place(l, "n", pod("c", 1, 100, 1000)), std::vector<int>{1});  // card 0 serves its 2
  EXPECT_EQ(l.node("n")->use()[0].sharers, 2);
  EXPECT_EQ(place(l, "n", pod("d", 1, 100, 1000)), std::vector<int>{1});
  EXPECT_FALSE(fits(pod("e", 1, 10, 10), *l.node("n"), FitOptions{}));
  FitResult r = explain_fit(pod("e", 1, 10, 10), *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.unresolvable);  // they free up as pods leave
  // The ledger refuses a reservation past the limit, naming it.
  Allocation over{"n", {ContainerAllocation{"main", false, {CardShare{0, "", 10, 10}}}}};
  Status s = l.assume(PodFacts{"x", "d/x", 0, 0}, over, Clock::time_point::max());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("already serves 2 of its 2 shares"), std::string::npos) << s.message();
  ASSERT_TRUE(l.check_invariants().ok());
  // Two containers of one pod on one card are two shares (as HAMi counts them).
  Ledger two;
  NodeSpec one_card = node("m", 1, 16384);
  one_card.cards[0].max_sharers = 3;
  two.upsert_node(one_card);
  PodRequest pair = pod("p", 1, 100, 1000);
  pair.containers.push_back(pair.containers[0]);
  pair.containers[1].name = "second";
  place(two, "m", pair);
  EXPECT_EQ(two.node("m")->use()[0].sharers, 2);
  EXPECT_TRUE(fits(pod("q", 1, 100, 1000), *two.node("m"), FitOptions{}));
  place(two, "m", pod("q", 1, 100, 1000));
  EXPECT_FALSE(fits(pod("r", 1, 100, 1000), *two.node("m"), FitOptions{}));
  EXPECT_TRUE(two.check_invariants().ok());
}

// A share that must be alone (HAMi: 100 % of the cores) takes only an empty
// card, even one whose other sharer asked for no compute.
TEST(Fit, AShareThatMustBeAloneTakesOnlyAnEmptyCard) {
  Ledger l;
  l.upsert_node(node("n", 2, 16384));
  EXPECT_EQ(place(l, "n", pod("a", 1, 0, 2000)), std::vector<int>{0});
  PodRequest alone = pod("b", 1, 1000, 4000);
  alone.containers[0].alone = true;
  EXPECT_EQ(place(l, "n", alone), std::vector<int>{1});
  EXPECT_FALSE(fits(alone, *l.node("n"), FitOptions{}));
  PodRequest not_alone = alone;
  not_alone.containers[0].alone = false;
  not_alone.uid = "uid-c";
  EXPECT_TRUE(fits(not_alone, *l.node("n"), FitOptions{}));  // card 0: no compute used, memory free
  // Card 1 is taken by all of its compute: even a share asking none goes to card 0.
  EXPECT_EQ(place(l, "n", pod("d", 1, 0, 100)), std::vector<int>{0});
}

TEST(Fit, ModelListsMatchWholeNamesOrPartsIgnoringCase) {
  Ledger l;
  NodeSpec spec = node("n", 2, 16384);
  spec.cards[0].model = "NVIDIA-Tesla V100-PCIE-32GB";
  spec.cards[1].model = "NVIDIA A100-SXM4-80GB";
  l.upsert_node(spec);
  PodRequest p = pod("a", 1, 100, 1000);
  p.allowed_models = {"a100"};
  EXPECT_FALSE(fits(p, *l.node("n"), FitOptions{}));  // exact: no card is called "a100"
  p.model_match = PodRequest::ModelMatch::kContainsIgnoringCase;
  EXPECT_EQ(place(l, "n", p), std::vector<int>{1});
  PodRequest q = pod("b", 1, 100, 1000);
  q.model_match = PodRequest::ModelMatch::kContainsIgnoringCase;
  q.excluded_models = {"v100", "H100"};
  EXPECT_EQ(place(l, "n", q), std::vector<int>{1});
  q.excluded_models = {"nvidia"};
  FitResult r = explain_fit(q, *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_NE(r.reason.find("model/UUID constraints"), std::string::npos) << r.reason;
  // The decision cache tells the two matchings and the lists apart.
  EXPECT_NE(demand_key(p), demand_key(q));
  PodRequest exact = p;
  exact.model_match = PodRequest::ModelMatch::kExact;
  EXPECT_NE(demand_key(p), demand_key(exact));
}

TEST(Fit, APercentageRoundsUpOrDownAsTheContractSays) {
  ContainerRequest c;
  c.memory_percent = 33;
  EXPECT_EQ(c.memory_on(40537), 13378);  // fracpack: never less than asked
  c.percent_rounds_down = true;
  EXPECT_EQ(c.memory_on(40537), 13377);  // HAMi: Totalmem * pct / 100
}

// README "Isolation: a share is a limit": a share that must be enforced
// goes only on a card whose limiter holds it (MPS, HAMi-core); a whole card
// goes anywhere.
TEST(Fit, AShareThatMustBeEnforcedTakesOnlyACardThatEnforcesIt) {
  Ledger l;
  auto spec = node("n", 3);
  spec.cards[0].isolation = CardIsolation::kNone;
  spec.cards[1].isolation = CardIsolation::kMig;
  spec.cards[2].isolation = CardIsolation::kMps;
  l.upsert_node(spec);
  PodRequest share = pod("share", 1, 300);
  share.containers[0].needs_enforcement = true;
  EXPECT_EQ(place(l, "n", share), std::vector<int>{2});
  // The MPS card full: the others cannot take it, and say why.
  PodRequest big = pod("big", 1, 800);
  big.containers[0].needs_enforcement = true;
  FitResult r = explain_fit(big, *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.unresolvable) << "the MPS card frees up";
  EXPECT_NE(r.reason.find("2 of the others cannot enforce a share"), std::string::npos) << r.reason;
  // Not asked to be enforced: any card.
  EXPECT_TRUE(fits(pod("loose", 1, 800), *l.node("n"), FitOptions{}));
  // A whole card needs no limiter (the contract never marks it).
  EXPECT_TRUE(fits(pod("whole", 1, 1000), *l.node("n"), FitOptions{}));
}

TEST(Fit, ANodeWithoutEnforcingCardsIsUnresolvableForAnEnforcedShareAndSaysHowToAccept) {
  Ledger l;
  l.upsert_node(node("n", 2));  // isolation none
  PodRequest share = pod("share", 1, 300);
  share.containers[0].needs_enforcement = true;
  share.unenforced_opt_in = "annotation fracpack.io/isolation: none";
  FitResult r = explain_fit(share, *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_NE(r.reason.find("that enforce its share (MPS or HAMi-core)"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("isolation none"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("the pod accepts an unenforced share with annotation fracpack.io/isolation: none"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find('%'), std::string::npos) << "kube-scheduler prints reasons as a format";
}

TEST(Fit, AnExcludedNodeSaysWhy) {
  Ledger l;
  NodeSpec spec = node("n", 0);
  spec.excluded = "node n's GPUs are registered for HAMi (annotation hami.io/node-nvidia-register)";
  l.upsert_node(spec);
  FitResult r = explain_fit(pod("a", 1, 100), *l.node("n"), FitOptions{}, kBest);
  EXPECT_FALSE(r.fits);
  EXPECT_TRUE(r.unresolvable);
  EXPECT_EQ(r.reason, spec.excluded);
  EXPECT_TRUE(fits(pod("cpu-only", 0, 0), *l.node("n"), FitOptions{}));
}

}  // namespace
}  // namespace fracpack::scheduling::fit_test
