// The ledger's nodes for a request's NodeNames: resolved by name, repeats
// marked, and the last few lists kept (with their resolution) while the
// ledger's node set stays the same.
#include "server/node_name_cache.h"

#include <gtest/gtest.h>

#include "test/support/testlib.h"

namespace fracpack::server::node_name_cache_test {
namespace {

using fracpack::testing::node;
using scheduling::Ledger;
using scheduling::NodeState;

// A candidate list as a request carries it: its array text and views into
// it (the text on the heap, so the views survive a move of the Request).
struct Request {
  std::shared_ptr<const std::string> body;
  std::string_view text;
  std::vector<std::string_view> names;
};
Request request(const std::vector<std::string>& names) {
  auto text = std::make_shared<std::string>("[");
  std::vector<size_t> at;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) *text += ",";
    *text += "\"";
    at.push_back(text->size());
    *text += names[i] + "\"";
  }
  *text += "]";
  Request r;
  r.body = text;
  r.text = *text;
  for (size_t i = 0; i < names.size(); ++i) r.names.emplace_back(text->data() + at[i], names[i].size());
  return r;
}

struct Resolution {
  std::shared_ptr<const k8s::KnownNodeNames> kept;
  std::vector<const NodeState*> nodes;
  std::vector<uint8_t> repeated;
};
Resolution resolve(NodeNameCache& cache, const Ledger& ledger, const Request& r,
                   const std::shared_ptr<const k8s::KnownNodeNames>& known = nullptr, bool keep_text = true) {
  Resolution out;
  out.kept = cache.resolve(ledger, r.names, keep_text ? r.text : std::string_view(), known, out.nodes,
                           out.repeated);
  return out;
}

TEST(NodeNameCache, ResolvesEachNameToTheLedgersNodeOrNull) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  ledger.upsert_node(node("n2", 2));
  NodeNameCache cache;
  const Request r = request({"n2", "ghost", "n1"});
  for (bool keep : {false, true}) {
    const Resolution got = resolve(cache, ledger, r, nullptr, keep);
    ASSERT_EQ(got.nodes.size(), 3u);
    EXPECT_EQ(got.nodes[0], ledger.node("n2"));
    EXPECT_EQ(got.nodes[1], nullptr);
    EXPECT_EQ(got.nodes[2], ledger.node("n1"));
    EXPECT_TRUE(got.repeated.empty()) << "every name is distinct";
  }
}

TEST(NodeNameCache, MarksTheNamesThatRepeatAnEarlierOne) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  NodeNameCache cache;
  const Request r = request({"n1", "ghost", "n1", "ghost", "n2"});
  const Resolution got = resolve(cache, ledger, r);
  EXPECT_EQ(got.repeated, (std::vector<uint8_t>{0, 0, 1, 1, 0}));
  ASSERT_EQ(got.nodes.size(), 5u);
  EXPECT_EQ(got.nodes[2], ledger.node("n1")) << "a repeat is still resolved";
  // Taken from the kept list, the same marks.
  const Resolution again = resolve(cache, ledger, r);
  ASSERT_NE(again.kept, nullptr);
  EXPECT_EQ(again.repeated, got.repeated);
}

TEST(NodeNameCache, RepeatsIsEmptyWhenEveryNameIsDistinct) {
  EXPECT_TRUE(NodeNameCache::repeats({}).empty());
  EXPECT_TRUE(NodeNameCache::repeats({"a", "b", "c"}).empty());
  EXPECT_EQ(NodeNameCache::repeats({"a", "b", "a", "a"}), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(NodeNameCache::repeats({"b", "b"}), (std::vector<uint8_t>{0, 1}));
}

TEST(NodeNameCache, AListWithoutItsTextIsNotKept) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  NodeNameCache cache;
  const Request r = request({"n1"});
  EXPECT_EQ(resolve(cache, ledger, r, nullptr, false).kept, nullptr);
  EXPECT_TRUE(cache.known().empty());
}

TEST(NodeNameCache, AListLargerThanTheLimitIsNotKept) {
  Ledger ledger;
  NodeNameCache cache;
  // One name long enough to take the list past kMaxListBytes.
  const Request big = request({std::string(NodeNameCache::kMaxListBytes, 'x')});
  ASSERT_GT(big.text.size(), NodeNameCache::kMaxListBytes);
  const Resolution got = resolve(cache, ledger, big);
  EXPECT_EQ(got.kept, nullptr);
  ASSERT_EQ(got.nodes.size(), 1u);
  EXPECT_EQ(got.nodes[0], nullptr);
  EXPECT_TRUE(cache.known().empty());
}

TEST(NodeNameCache, KeepsTheListAndReturnsItWhenItsTextRepeats) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  ledger.upsert_node(node("n2", 1));
  NodeNameCache cache;
  const Request r = request({"n1", "n2", "ghost"});
  const Resolution first = resolve(cache, ledger, r);
  ASSERT_NE(first.kept, nullptr);
  EXPECT_EQ(first.kept->text, r.text);
  ASSERT_EQ(first.kept->names.size(), r.names.size());
  for (size_t i = 0; i < r.names.size(); ++i) EXPECT_EQ(first.kept->names[i], r.names[i]);
  ASSERT_EQ(cache.known().size(), 1u);
  EXPECT_EQ(cache.known()[0], first.kept);
  // The same list in another request's buffer: the kept one, same nodes.
  const Request copy = request({"n1", "n2", "ghost"});
  const Resolution second = resolve(cache, ledger, copy);
  EXPECT_EQ(second.kept, first.kept);
  EXPECT_EQ(second.nodes, first.nodes);
  EXPECT_EQ(cache.known().size(), 1u) << "one entry per list";
}

TEST(NodeNameCache, AListTheParserTookFromTheKeptOnesIsReturnedAsIs) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  NodeNameCache cache;
  const Request r = request({"n1", "ghost"});
  const auto known = k8s::KnownNodeNames::copy_of(r.text, r.names);
  ASSERT_NE(known, nullptr);
  // Not kept yet: the given list becomes the kept one.
  const Resolution first = resolve(cache, ledger, r, known);
  EXPECT_EQ(first.kept, known);
  ASSERT_EQ(cache.known().size(), 1u);
  EXPECT_EQ(cache.known()[0], known);
  // Names as views into the kept list (what the parser gives then).
  Request from_list{nullptr, known->text, known->names};
  const Resolution second = resolve(cache, ledger, from_list, known);
  EXPECT_EQ(second.kept, known);
  EXPECT_EQ(second.nodes, (std::vector<const NodeState*>{ledger.node("n1"), nullptr}));
}

TEST(NodeNameCache, ANodeAddedOrRemovedIsSeenByTheKeptList) {
  Ledger ledger;
  ledger.upsert_node(node("n1", 1));
  NodeNameCache cache;
  const Request r = request({"n1", "n2"});
  const Resolution before = resolve(cache, ledger, r);
  ASSERT_NE(before.kept, nullptr);
  EXPECT_EQ(before.nodes, (std::vector<const NodeState*>{ledger.node("n1"), nullptr}));
  ledger.upsert_node(node("n2", 2));
  const Resolution added = resolve(cache, ledger, r);
  EXPECT_EQ(added.kept, before.kept);
  ASSERT_NE(ledger.node("n2"), nullptr);
  EXPECT_EQ(added.nodes, (std::vector<const NodeState*>{ledger.node("n1"), ledger.node("n2")}));
  ledger.remove_node("n1");
  const Resolution removed = resolve(cache, ledger, r);
  EXPECT_EQ(removed.nodes, (std::vector<const NodeState*>{ledger.node("n1"), ledger.node("n2")}));
}

TEST(NodeNameCache, AnotherLedgerIsResolvedAfresh) {
  Ledger a;
  a.upsert_node(node("n1", 1));
  Ledger b;
  b.upsert_node(node("n1", 1));
  b.upsert_node(node("n2", 1));
  NodeNameCache cache;
  const Request r = request({"n1", "n2"});
  EXPECT_EQ(resolve(cache, a, r).nodes, (std::vector<const NodeState*>{a.node("n1"), nullptr}));
  EXPECT_EQ(resolve(cache, b, r).nodes, (std::vector<const NodeState*>{b.node("n1"), b.node("n2")}));
  EXPECT_EQ(resolve(cache, a, r).nodes, (std::vector<const NodeState*>{a.node("n1"), nullptr}));
}

TEST(NodeNameCache, KeepsTheLastFewListsMostRecentlyUsedFirst) {
  Ledger ledger;
  NodeNameCache cache;
  std::vector<Request> lists;
  for (size_t i = 0; i <= NodeNameCache::kLists; ++i) lists.push_back(request({"n" + std::to_string(i)}));
  std::vector<std::shared_ptr<const k8s::KnownNodeNames>> kept;
  for (size_t i = 0; i < NodeNameCache::kLists; ++i) kept.push_back(resolve(cache, ledger, lists[i]).kept);
  auto texts = [&] {
    std::vector<std::string_view> out;
    for (const auto& k : cache.known()) out.push_back(k->text);
    return out;
  };
  using Texts = std::vector<std::string_view>;
  EXPECT_EQ(texts(), (Texts{lists[3].text, lists[2].text, lists[1].text, lists[0].text}));
  // Using the oldest makes it the most recent...
  EXPECT_EQ(resolve(cache, ledger, lists[0]).kept, kept[0]);
  EXPECT_EQ(texts(), (Texts{lists[0].text, lists[3].text, lists[2].text, lists[1].text}));
  // ...so one more list drops the least recently used instead.
  resolve(cache, ledger, lists[4]);
  ASSERT_EQ(cache.known().size(), NodeNameCache::kLists);
  EXPECT_EQ(texts(), (Texts{lists[4].text, lists[0].text, lists[3].text, lists[2].text}));
  // The dropped one is kept again as a new list.
  const auto again = resolve(cache, ledger, lists[1]).kept;
  ASSERT_NE(again, nullptr);
  EXPECT_NE(again, kept[1]);
  EXPECT_EQ(again->text, lists[1].text);
}

}  // namespace
}  // namespace fracpack::server::node_name_cache_test
