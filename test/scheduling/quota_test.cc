#include "scheduling/quota.h"

#include <gtest/gtest.h>

#include "scheduling/ledger.h"
#include "test/support/testlib.h"

namespace fracpack::scheduling::scheduling_quota_test {
namespace {

ContainerAllocation container(std::string name, bool init, std::vector<CardShare> cards) {
  return ContainerAllocation{std::move(name), init, std::move(cards)};
}

TEST(QuotaUse, CountsEveryCardHeldWithItsMemoryAndCompute) {
  Allocation a;
  a.node = "n";
  // Two cards of 8 GiB each plus a whole 40 GiB card in a second container.
  a.containers.push_back(container("a", false, {{0, "", 8192, 300}, {1, "", 8192, 300}}));
  a.containers.push_back(container("b", false, {{2, "", 40960, 1000}}));
  EXPECT_EQ(quota_use(a), (QuotaUse{3, 8192 * 2 + 40960, 1600}));
}

TEST(QuotaUse, InitContainersCountAsKubernetesCountsEffectiveRequests) {
  Allocation a;
  a.node = "n";
  a.containers.push_back(container("init-big", true, {{0, "", 30000, 1000}, {1, "", 30000, 1000}, {2, "", 1000, 100}}));
  a.containers.push_back(container("init-small", true, {{0, "", 500, 50}}));
  a.containers.push_back(container("app", false, {{0, "", 4096, 250}}));
  a.containers.push_back(container("sidecar", false, {{1, "", 4096, 250}}));
  // Per dimension: max(sum of app, each init): cards max(2, 3), memory
  // max(8192, 61000), cores max(500, 2100).
  EXPECT_EQ(quota_use(a), (QuotaUse{3, 61000, 2100}));
}

TEST(QuotaUse, ARequestSizedByTheCardIsNotKnownBeforeTheCardIsChosen) {
  PodRequest pod;
  pod.namespace_name = "team-a";
  pod.containers.push_back(ContainerRequest{"main", false, 2, 4096, 0, 300});
  const std::vector<QuotaLimit> memory{{"q", "limits.fracpack.io/gpu-memory", QuotaResource::kMemoryMib, 100000, ""}};
  const std::vector<QuotaLimit> cards{{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 4, ""}};
  EXPECT_FALSE(quota_depends_on_card(memory, pod));
  EXPECT_EQ(quota_use(pod), (QuotaUse{2, 8192, 600}));
  pod.containers[0].memory_percent = 50;
  EXPECT_TRUE(quota_depends_on_card(memory, pod));
  EXPECT_FALSE(quota_depends_on_card(cards, pod)) << "cards do not depend on the card chosen";
  // The same share on a 16 GiB and on an 80 GiB card.
  Allocation small, big;
  small.containers.push_back(container("main", false, {{0, "", 4096 + 8192, 300}, {1, "", 4096 + 8192, 300}}));
  big.containers.push_back(container("main", false, {{0, "", 4096 + 40960, 300}, {1, "", 4096 + 40960, 300}}));
  EXPECT_EQ(quota_use(small).memory_mib, 24576);
  EXPECT_EQ(quota_use(big).memory_mib, 90112);
}

TEST(QuotaAdmits, NamesTheObjectTheKeyUsedAskedAndHard) {
  const std::vector<QuotaLimit> limits{
      {"gpu-quota", "limits.fracpack.io/gpu", QuotaResource::kCards, 4, ""},
      {"gpu-quota", "limits.fracpack.io/gpu-memory", QuotaResource::kMemoryMib, 65536, ""},
      {"compute", "limits.fracpack.io/gpu-cores", QuotaResource::kCoresPercent, 150, ""},
  };
  EXPECT_TRUE(quota_admits("team-a", limits, QuotaUse{2, 32768, 1000}, QuotaUse{1, 16384, 500}).ok());
  auto memory = quota_admits("team-a", limits, QuotaUse{2, 32768, 1000}, QuotaUse{1, 40000, 100});
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.message(),
            "exceeds ResourceQuota team-a/gpu-quota limits.fracpack.io/gpu-memory: used 32768 MiB, asked 40000 MiB, hard 65536 MiB");
  auto cores = quota_admits("team-a", limits, QuotaUse{1, 0, 1000}, QuotaUse{1, 0, 501});
  ASSERT_FALSE(cores.ok());
  EXPECT_EQ(cores.message(),
            "exceeds ResourceQuota team-a/compute limits.fracpack.io/gpu-cores: used 100 percent of a card, asked 51 percent of a card, "
            "hard 150 percent of a card");
  EXPECT_EQ(cores.message().find('%'), std::string::npos);
  // Exactly at hard is within it.
  EXPECT_TRUE(quota_admits("team-a", limits, QuotaUse{3, 0, 0}, QuotaUse{1, 0, 0}).ok());
  EXPECT_FALSE(quota_admits("team-a", limits, QuotaUse{4, 0, 0}, QuotaUse{1, 0, 0}).ok());
}

TEST(QuotaAdmits, ALoweredQuotaKeepsWhatRunsAndRefusesWhatIsNew) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n1", 4));
  auto card = [](int index) {
    Allocation a;
    a.node = "n1";
    a.containers.push_back(ContainerAllocation{"main", false, {CardShare{index, "", 1024, 100}}});
    return a;
  };
  for (int i = 0; i < 3; ++i) l.confirm(PodFacts{"u" + std::to_string(i), "ns/p" + std::to_string(i), 0, 0}, card(i));
  // The quota lowered below what runs: the running pods stay (and a record
  // read back again is still followed) ...
  l.set_quota("ns", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 1, ""}});
  EXPECT_EQ(l.namespace_use("ns").cards, 3);
  EXPECT_EQ(l.confirm(PodFacts{"u0", "ns/p0", 0, 0}, card(0)), 0);
  EXPECT_NE(l.pod("u0"), nullptr);
  // ... a new card is refused, and a pod asking none is not.
  auto refused = l.assume(PodFacts{"u3", "ns/p3", 0, 0}, card(3), Clock::time_point::max());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), "exceeds ResourceQuota ns/q limits.fracpack.io/gpu: used 3 cards, asked 1 card, hard 1 card");
  Allocation none;
  none.node = "n1";
  EXPECT_TRUE(l.assume(PodFacts{"u4", "ns/p4", 100, 100}, none, Clock::time_point::max()).ok());
}

// A pod without cards keeps its CPU and memory reservation in a namespace
// whose quota cannot be read; a GPU pod does not get one.
TEST(QuotaAdmits, AMalformedLimitRefusesCardsButNotAPodWithout) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n1", 1));
  l.set_quota("ns", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 0, "\"x\" is not a valid quantity"}});
  Allocation none;
  none.node = "n1";
  EXPECT_TRUE(l.assume(PodFacts{"cpu", "ns/cpu", 100, 100}, none, Clock::time_point::max()).ok());
  Allocation gpu = none;
  gpu.containers.push_back(ContainerAllocation{"main", false, {CardShare{0, "", 1024, 100}}});
  EXPECT_FALSE(l.assume(PodFacts{"gpu", "ns/gpu", 0, 0}, gpu, Clock::time_point::max()).ok());
}

// A pod judged again while its own reservation is held (its bind's outcome
// unknown) is not counted twice against its namespace.
TEST(QuotaAdmits, APodsOwnReservationIsNotCountedTwice) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n1", 2));
  l.set_quota("ns", {{"q", "limits.fracpack.io/gpu", QuotaResource::kCards, 1, ""}});
  Allocation a;
  a.node = "n1";
  a.containers.push_back(ContainerAllocation{"main", false, {CardShare{0, "", 1024, 100}}});
  ASSERT_TRUE(l.assume(PodFacts{"u", "ns/p", 0, 0}, a, Clock::time_point::max()).ok());
  EXPECT_FALSE(l.quota_admits("ns", QuotaUse{1, 0, 0}).ok());
  EXPECT_TRUE(l.quota_admits("ns", QuotaUse{1, 0, 0}, "u").ok());
  EXPECT_FALSE(l.quota_admits("ns", QuotaUse{1, 0, 0}, "someone-else").ok());
}

TEST(QuotaAdmits, AMalformedKeyRefusesEveryNewPlacementAndSaysWhy) {
  const std::vector<QuotaLimit> limits{{"q", "limits.fracpack.io/gpu-memory", QuotaResource::kMemoryMib, 0, "\"lots\" is not a quantity"}};
  auto s = quota_admits("ns", limits, QuotaUse{}, QuotaUse{1, 0, 100});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ResourceQuota ns/q limits.fracpack.io/gpu-memory cannot be read (\"lots\" is not a quantity)"),
            std::string::npos)
      << s.message();
}

TEST(QuotaAdmits, EveryObjectOfTheNamespaceHolds) {
  const std::vector<QuotaLimit> limits{{"loose", "limits.fracpack.io/gpu", QuotaResource::kCards, 10, ""},
                                       {"tight", "limits.fracpack.io/gpu", QuotaResource::kCards, 2, ""}};
  auto s = quota_admits("ns", limits, QuotaUse{2, 0, 0}, QuotaUse{1, 0, 0});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ns/tight"), std::string::npos) << s.message();
}

TEST(LedgerQuota, TheNamespacesUseFollowsItsPodsAssumedConfirmedAndGone) {
  Ledger l;
  l.upsert_node(fracpack::testing::node("n1", 4));
  auto alloc = [](int index, int64_t mib, int cores) {
    Allocation a;
    a.node = "n1";
    a.containers.push_back(ContainerAllocation{"main", false, {CardShare{index, "", mib, cores}}});
    return a;
  };
  const auto far = Clock::time_point::max();
  ASSERT_TRUE(l.assume(PodFacts{"a", "team-a/a", 0, 0}, alloc(0, 4096, 250), far).ok());
  ASSERT_TRUE(l.assume(PodFacts{"b", "team-b/b", 0, 0}, alloc(1, 2048, 100), far).ok());
  EXPECT_EQ(l.namespace_use("team-a"), (QuotaUse{1, 4096, 250}));
  l.confirm(PodFacts{"a", "team-a/a", 0, 0}, alloc(0, 4096, 250));
  l.confirm(PodFacts{"c", "team-a/c", 0, 0}, alloc(2, 1024, 100));
  EXPECT_EQ(l.namespace_use("team-a"), (QuotaUse{2, 5120, 350}));
  // A record that changed replaces what the pod counted.
  l.confirm(PodFacts{"c", "team-a/c", 0, 0}, alloc(2, 2048, 100));
  EXPECT_EQ(l.namespace_use("team-a"), (QuotaUse{2, 6144, 350}));
  EXPECT_TRUE(l.forget("b"));
  EXPECT_EQ(l.namespace_use("team-b"), QuotaUse{});
  l.remove("a");
  l.remove("c");
  EXPECT_TRUE(l.namespace_uses().empty());
  // A pod without cards counts nothing.
  Allocation none;
  none.node = "n1";
  l.confirm(PodFacts{"d", "team-a/d", 100, 100}, none);
  EXPECT_TRUE(l.namespace_uses().empty());
  EXPECT_TRUE(l.check_invariants().ok());
}

// The pod's use were its cards of a given size (the ledger's smallest and
// largest cards bound it: scheduling/quota_gate.h); init containers counted
// as effective requests.
TEST(QuotaUse, OnACardOfAGivenSizeCountsTheShareSizedByIt) {
  PodRequest pod;
  pod.containers.push_back(ContainerRequest{"init", true, 3, 0, 100, 1000});
  pod.containers.push_back(ContainerRequest{"main", false, 2, 1024, 25, 500});
  // App: 2 cards x (1024 + 4096); init: 3 x 16384.
  EXPECT_EQ(quota_use(pod, 16384), (QuotaUse{3, 49152, 3000}));
  EXPECT_EQ(quota_use(pod, 0), quota_use(pod)) << "without a card: the absolute part alone";
}

}  // namespace
}  // namespace fracpack::scheduling::scheduling_quota_test
