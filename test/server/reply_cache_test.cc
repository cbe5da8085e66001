// Filter and prioritize replies kept per (candidate list, demand) and redone
// only where the ledger changed: after any sequence of changes, the kept
// reply is the reply written from scratch, byte for byte (and for filter,
// with the same tally).
#include "server/reply_cache.h"

#include <gtest/gtest.h>

#include <random>

#include "test/support/testlib.h"

namespace fracpack::server::reply_cache_test {
namespace {

using fracpack::testing::node;
using fracpack::testing::pod;
using scheduling::Allocation;
using scheduling::CardShare;
using scheduling::ContainerAllocation;
using scheduling::Evaluator;
using scheduling::FitOptions;
using scheduling::Ledger;
using scheduling::NodeState;
using scheduling::PodFacts;
using scheduling::PodRequest;
using scheduling::Verdict;

// The list as a request would send it: names (some unknown, some repeated).
std::shared_ptr<const k8s::KnownNodeNames> list_of(const std::vector<std::string>& names) {
  std::string text = "[";
  std::vector<size_t> at;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) text += ",";
    text += "\"";
    at.push_back(text.size());
    text += names[i] + "\"";
  }
  text += "]";
  std::vector<std::string_view> views;
  for (size_t i = 0; i < names.size(); ++i) views.emplace_back(text.data() + at[i], names[i].size());
  return k8s::KnownNodeNames::copy_of(text, views);
}

struct Resolved {
  std::vector<const NodeState*> nodes;
  std::vector<uint8_t> repeated;
};
Resolved resolve(const Ledger& ledger, const k8s::KnownNodeNames& list) {
  Resolved r;
  for (auto n : list.names) r.nodes.push_back(ledger.node(n));
  r.repeated.assign(list.names.size(), 0);
  for (size_t i = 0; i < list.names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) r.repeated[i] |= list.names[i] == list.names[j];
  }
  return r;
}

// Each distinct listed node's verdict from a fresh evaluator (nothing
// cached), in the list's order.
template <class Visit>
void fresh_verdicts(const Ledger& ledger, const k8s::KnownNodeNames& list, const PodRequest& req, const std::string& policy,
                    Visit visit) {
  auto p = scheduling::make_policy(policy, scheduling::PolicyOptions{}).value();
  Evaluator fresh{*p, FitOptions{}};
  const Resolved r = resolve(ledger, list);
  std::vector<const NodeState*> nodes;
  std::vector<std::string_view> names;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (r.repeated[i]) continue;
    nodes.push_back(r.nodes[i]);
    names.push_back(list.names[i]);
  }
  fresh.evaluate(req, nodes, [&](size_t k, const Verdict& v) { visit(names[k], v); });
}

// The reply written from scratch, every verdict rendered as the uncached
// filter path renders it.
struct Scratch {
  std::string body;  // "" when over budget
  FilterTally tally;
};
Scratch from_scratch(const Ledger& ledger, const k8s::KnownNodeNames& list, const PodRequest& req, const std::string& policy,
                     size_t max_bytes) {
  k8s::FilterReplyWriter w(false, 0, max_bytes);
  Scratch out;
  fresh_verdicts(ledger, list, req, policy, [&](std::string_view name, const Verdict& v) {
    out.tally.add(v);
    if (v.fits) {
      w.pass(name);
    } else {
      w.fail(name, v.reason, v.unresolvable);
    }
  });
  if (!w.over_budget()) out.body = w.finish();
  return out;
}

// The HostPriorityList written from scratch, as the uncached prioritize does.
std::string priorities_from_scratch(const Ledger& ledger, const k8s::KnownNodeNames& list, const PodRequest& req,
                                    const std::string& policy) {
  std::vector<std::optional<int64_t>> raw;
  std::vector<std::string_view> names;
  fresh_verdicts(ledger, list, req, policy, [&](std::string_view name, const Verdict& v) {
    names.push_back(name);
    raw.push_back(v.fits ? std::optional<int64_t>(v.score) : std::nullopt);
  });
  const auto scores = scheduling::extender_scores(raw, names);
  std::vector<k8s::HostPriority> out;
  for (size_t i = 0; i < names.size(); ++i) out.push_back({names[i], scores[i]});
  return k8s::format_host_priorities(out);
}

void expect_same_tally(const FilterTally& a, const FilterTally& b) {
  EXPECT_EQ(a.passed, b.passed);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.unresolvable, b.unresolvable);
  for (const auto& [c, n] : b.by_class) {
    auto it = a.by_class.find(c);
    EXPECT_EQ(it == a.by_class.end() ? 0.0 : it->second, n) << c;
  }
  for (const auto& [c, n] : a.by_class) {
    if (!b.by_class.count(c)) {
      EXPECT_EQ(n, 0.0) << c;
    }
  }
}

class FilterReplyCacheTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FilterReplyCacheTest, KeptRepliesAreTheRepliesWrittenFromScratch) {
  const std::string policy_name = GetParam();
  auto policy = scheduling::make_policy(policy_name, scheduling::PolicyOptions{}).value();
  Evaluator evaluator{*policy, FitOptions{}};
  Ledger ledger;
  std::mt19937 rng(7);
  const std::vector<std::string> models = {"T4", "A100", "V100"};
  for (int i = 0; i < 40; ++i) {
    ledger.upsert_node(node("n" + std::to_string(i), 1 + i % 4, 16384, models[i % 3], 8000));
  }
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("n" + std::to_string(i));
  names.push_back("ghost");  // unknown to the ledger
  names.push_back("n3");     // repeated
  names.push_back("n41");    // unknown until it is added
  const auto list = list_of(names);
  const std::vector<PodRequest> demands = {pod("a", 1, 500, 4096), pod("b", 2, 1000), pod("c", 1, 300, 0, 7000)};

  FilterReplyCache cache;
  PrioritizeReplyCache priorities;
  int uid = 0;
  std::vector<std::string> placed;
  for (int step = 0; step < 400; ++step) {
    const int op = static_cast<int>(rng() % 10);
    const std::string n = "n" + std::to_string(rng() % 40);
    if (op < 5) {  // a pod reserved on one card, or removed
      Allocation a;
      a.node = n;
      a.containers.push_back(ContainerAllocation{"m", false, {CardShare{0, "", 1024, static_cast<int>(100 + rng() % 600)}}});
      const std::string u = "u" + std::to_string(uid++);
      if (ledger.assume(PodFacts{u, "d/" + u, 500, 1 << 30}, a, scheduling::Clock::time_point::max()).ok()) placed.push_back(u);
    } else if (op < 8 && !placed.empty()) {
      const size_t k = rng() % placed.size();
      ledger.remove(placed[k]);
      placed.erase(placed.begin() + static_cast<long>(k));
    } else if (op == 8) {  // a node's cards change
      ledger.upsert_node(node(n, 1 + static_cast<int>(rng() % 4), 16384, models[rng() % 3], 8000));
    } else if (ledger.node("n41") == nullptr) {  // the node set changes
      ledger.upsert_node(node("n41", 2));
    } else {
      ledger.remove_node("n41");
    }
    const PodRequest& req = demands[rng() % demands.size()];
    const auto generation = evaluator.cache_generation();
    ASSERT_TRUE(generation.has_value());
    const Resolved r = resolve(ledger, *list);
    auto kept = cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, *generation, SIZE_MAX);
    const Scratch want = from_scratch(ledger, *list, req, policy_name, SIZE_MAX);
    ASSERT_NE(kept.body, nullptr);
    ASSERT_EQ(*kept.body, want.body) << "step " << step;
    expect_same_tally(kept.tally, want.tally);
    auto ranked = priorities.answer(list, r.repeated, r.nodes, req, ledger, evaluator, *generation);
    ASSERT_NE(ranked, nullptr);
    ASSERT_EQ(*ranked, priorities_from_scratch(ledger, *list, req, policy_name)) << "step " << step;
  }
  for (const auto& stats : {cache.stats(), priorities.stats()}) {
  EXPECT_GT(stats.reused, 0u) << "a change elsewhere leaves the reply as it was";
  EXPECT_GT(stats.refreshed, 0u) << "a change on a listed node redoes that node";
  EXPECT_GT(stats.rebuilt, 3u) << "each demand's first reply, and node set changes";
  EXPECT_LT(stats.rebuilt, 200u);
  }
}

// A reply being written (a holder outside the cache) is never changed under
// it: the kept body is copied before a score is written over.
// A bestfit evaluator over a ledger of two 2-card nodes, and their list.
struct TwoNodes {
  std::unique_ptr<scheduling::Policy> policy = scheduling::make_policy("bestfit", scheduling::PolicyOptions{}).value();
  Evaluator evaluator{*policy, FitOptions{}};
  Ledger ledger;
  std::shared_ptr<const k8s::KnownNodeNames> list = list_of({"n1", "n2"});
  TwoNodes() {
    ledger.upsert_node(node("n1", 2));
    ledger.upsert_node(node("n2", 2));
  }
  // Pod d/x assumed on n2's card `card`, half its compute.
  bool assume_x_on_n2(int card) {
    Allocation a;
    a.node = "n2";
    a.containers.push_back(ContainerAllocation{"m", false, {CardShare{card, "", 0, 500}}});
    return ledger.assume(PodFacts{"x", "d/x", 0, 0}, a, scheduling::Clock::time_point::max()).ok();
  }
};

TEST(PrioritizeReplyCache, RepliesInFlightAreNotWrittenOver) {
  TwoNodes t;
  Evaluator& evaluator = t.evaluator;  // (references, not a structured binding: clang 14 cannot capture one)
  Ledger& ledger = t.ledger;
  const auto& list = t.list;
  const PodRequest req = pod("p", 1, 500);
  PrioritizeReplyCache cache;
  const Resolved r = resolve(ledger, *list);
  auto first = cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, 0);
  const std::string before = *first;
  ASSERT_TRUE(t.assume_x_on_n2(0));
  auto second = cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, 0);
  EXPECT_EQ(*first, before) << "the reply held elsewhere is unchanged";
  EXPECT_NE(*second, before) << "bestfit now prefers n2 (fuller)";
  EXPECT_EQ(*second, priorities_from_scratch(ledger, *list, req, "bestfit"));
  EXPECT_EQ(cache.stats().refreshed, 1u);
}

INSTANTIATE_TEST_SUITE_P(Policies, FilterReplyCacheTest, ::testing::Values("bestfit", "fracpack"));

TEST(FilterReplyCache, TooManyChangesOrAnotherPolicyGenerationRebuild) {
  TwoNodes t;
  Evaluator& evaluator = t.evaluator;  // (references, not a structured binding: clang 14 cannot capture one)
  Ledger& ledger = t.ledger;
  const auto& list = t.list;
  const PodRequest req = pod("p", 1, 600);
  FilterReplyCache cache;
  auto ask = [&](uint64_t generation) {
    const Resolved r = resolve(ledger, *list);
    return *cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, generation, SIZE_MAX).body;
  };
  ask(0);
  ask(0);
  EXPECT_EQ(cache.stats().rebuilt, 1u);
  EXPECT_EQ(cache.stats().reused, 1u);
  // More changes than the ledger remembers: everything is redone.
  for (size_t i = 0; i <= Ledger::kJournal; ++i) {
    ASSERT_TRUE(t.assume_x_on_n2(1));
    ASSERT_TRUE(ledger.forget("x"));
  }
  ask(0);
  EXPECT_EQ(cache.stats().rebuilt, 2u);
  ask(1);  // the policy learned: its verdicts may differ
  EXPECT_EQ(cache.stats().rebuilt, 3u);
  EXPECT_EQ(ask(1), from_scratch(ledger, *list, req, "bestfit", SIZE_MAX).body);
}

TEST(FilterReplyCache, AReplyOverItsBudgetIsRefusedAndNotKept) {
  auto policy = scheduling::make_policy("bestfit", scheduling::PolicyOptions{}).value();
  Evaluator evaluator{*policy, FitOptions{}};
  Ledger ledger;
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) {
    names.push_back("node-with-a-long-name-" + std::to_string(i));
    ledger.upsert_node(node(names.back(), 1));
  }
  const auto list = list_of(names);
  const PodRequest req = pod("p", 2, 600);  // fits nowhere: 50 reasons
  FilterReplyCache cache;
  const Resolved r = resolve(ledger, *list);
  auto kept = cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, 0, 1000);
  EXPECT_EQ(kept.body, nullptr);
  EXPECT_EQ(from_scratch(ledger, *list, req, "bestfit", 1000).body, "") << "the uncached writer refuses it too";
  kept = cache.answer(list, r.repeated, r.nodes, req, ledger, evaluator, 0, SIZE_MAX);
  ASSERT_NE(kept.body, nullptr);
  EXPECT_EQ(cache.stats().rebuilt, 2u) << "the refused reply was not kept";
}

}  // namespace
}  // namespace fracpack::server::reply_cache_test
