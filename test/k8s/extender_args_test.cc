// ExtenderArgs decoded as kube-scheduler's Go code encodes it
// (../shared/reference/kubernetes-protocol.md §1): PascalCase keys matched
// case-insensitively, null as absent, names as views into the body, a list
// sent before taken whole, errors naming the field.
#include "k8s/extender_args.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/limits.h"
#include "test/support/extender_args_bodies.h"

namespace fracpack::k8s::extender_args_test {
namespace {

const Selection kSel = FracpackContract{}.selection();
constexpr const char* kPod = fracpack::testing::kExtenderPod;
using fracpack::testing::parse_args;

TEST(ExtenderArgs, NodeNamesAreViewsAndTheirTextIsKept) {
  const std::string body = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":null,"NodeNames":["n1","n2"]})";
  auto a = parse_args(body, kSel);
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_TRUE(a->pod.has_value());
  EXPECT_EQ(a->pod->meta.uid, "u-1");
  EXPECT_FALSE(a->nodes.has_value());
  ASSERT_TRUE(a->node_names.has_value());
  EXPECT_EQ(*a->node_names, (std::vector<std::string_view>{"n1", "n2"}));
  EXPECT_EQ(a->node_names_text, R"(["n1","n2"])") << "the list as the body spells it: the same list, the same text";
  EXPECT_EQ(a->known_names, nullptr);
}

TEST(ExtenderArgs, AListSentBeforeIsTakenWholeAndOnlyByteForByte) {
  const std::string first = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":[ "n1", "n2" ] ,"Nodes":null})";
  auto a = parse_args(first, kSel);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->node_names_text, R"([ "n1", "n2" ])") << "whitespace inside the brackets is the list's";
  std::vector<std::shared_ptr<const KnownNodeNames>> known{KnownNodeNames::copy_of(a->node_names_text, *a->node_names)};
  ASSERT_NE(known[0], nullptr);
  EXPECT_EQ(known[0]->names, (std::vector<std::string_view>{"n1", "n2"}));

  // The same list in another body (another pod, another place): taken whole.
  const std::string again = std::string(R"({"NodeNames":[ "n1", "n2" ],"Pod":)") + kPod + "}";
  auto b = parse_args(again, kSel, known);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->known_names, known[0]);
  EXPECT_EQ(*b->node_names, (std::vector<std::string_view>{"n1", "n2"}));
  ASSERT_TRUE(b->pod.has_value()) << "the fields after the list are still read";

  // A list that only starts like it, or differs in one byte: decoded.
  for (const char* list : {R"([ "n1", "n2" , "n3"])", R"([ "n1", "n3" ])", R"(["n1", "n2" ])"}) {
    const std::string other = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":)" + list + "}";
    auto c = parse_args(other, kSel, known);
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->known_names, nullptr) << list;
    EXPECT_EQ(c->node_names_text, list) << "decoded, with its own text";
  }
  // At the end of the body, as kube-scheduler sends it: the parsers never
  // see its strings; the same answer.
  const std::string last = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":null,"NodeNames":[ "n1", "n2" ]} )";
  auto d = parse_args(last, kSel, known);
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->known_names, known[0]);
  EXPECT_EQ(d->node_names_text, R"([ "n1", "n2" ])");
  ASSERT_TRUE(d->pod.has_value());
  EXPECT_EQ(d->pod->meta.uid, "u-1");
  // The known text ending the body as another field's value: NodeNames is
  // the one sent, decoded.
  const std::string elsewhere = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["x"],"Other":[ "n1", "n2" ]})";
  auto e = parse_args(elsewhere, kSel, known);
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(*e->node_names, (std::vector<std::string_view>{"x"}));
  EXPECT_EQ(e->known_names, nullptr);
  // A body that is not JSON before a trailing known list: refused, naming
  // what the parser names for it without the list.
  const std::string broken = std::string(R"({"Pod":{"metadata":NaN},"NodeNames":[ "n1", "n2" ]})");
  auto f = parse_args(broken, kSel, known);
  auto g = parse_args(broken, kSel);
  ASSERT_FALSE(f.ok());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(f.message(), g.message());
  // Not valid JSON after a matching list: still refused.
  EXPECT_FALSE(parse_args(std::string(R"({"NodeNames":[ "n1", "n2" ],"Pod":nul})"), kSel, known).ok());
  // A name that is not one of the text's: nothing to keep.
  EXPECT_EQ(KnownNodeNames::copy_of(R"(["x"])", {std::string_view("elsewhere")}), nullptr);
}

TEST(ExtenderArgs, KeysMatchAsGoMatchesThem) {
  // Any case, an exact match winning; unknown keys ignored; escapes decoded.
  const std::string body = std::string(R"({"pod":)") + kPod + R"(,"nodenames":["a\u002db"],"NodeNames":["n\"1"],"Extra":1})";
  auto a = parse_args(body, kSel);
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_TRUE(a->pod.has_value());
  ASSERT_TRUE(a->node_names.has_value());
  EXPECT_EQ(*a->node_names, (std::vector<std::string_view>{"n\"1"}));
  EXPECT_TRUE(a->node_names_text.empty()) << "a name with an escape: no text to reuse";
}

TEST(ExtenderArgs, FullNodesKeepTheirText) {
  const std::string node = R"({"metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}})";
  const std::string body = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"metadata":{},"items":[)" + node + R"(]},"NodeNames":null})";
  auto a = parse_args(body, kSel);
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_TRUE(a->nodes.has_value());
  ASSERT_EQ(a->nodes->size(), 1u);
  EXPECT_EQ((*a->nodes)[0].name, "n1");
  EXPECT_EQ((*a->nodes)[0].json, node);
  EXPECT_FALSE(a->node_names.has_value());
}

TEST(ExtenderArgs, AFullNodesNameIsReadAsDecodingWouldReadIt) {
  // Only metadata.name is read from the text (the rest when the ledger
  // does not know the node): it must be the name decoding finds, wherever
  // it is, and each node's text must end where its object does. Small
  // bodies are read by a scan of each node; large ones (over 1 MiB) by the
  // check of the whole body, which leaves the items out of what simdjson
  // parses: both alike.
  struct Case {
    std::string node, name;
  } cases[] = {
      {R"({"metadata":{"name":"n1"}})", "n1"},
      {R"( {"status":{"images":[{"names":["x}\"]"]}]},"metadata":{"labels":{"name":"no"},"name":"n2"}} )", "n2"},
      {R"({"metadata":{"name":"old"},"spec":{"metadata":{"name":"no"}},"metadata":{"uid":"u","name":"n3"}})", "n3"},
      {R"({"meta\u0064ata":{"n\u0061me":"n\u00344"}})", "n44"},
      {R"({"metadata":{"name":"n5","name":"n6"}, "kind" : "Node" , "x":[1,2.5e3,true,null,{}]})", "n6"},
      {R"({"metadata":{"name":"n7"},"metadata":null,"items":[{"metadata":{"name":"no"}}]})", "n7"},
  };
  std::string items;
  for (const auto& c : cases) items += (items.empty() ? "" : " ,\n") + c.node;
  const std::string large = R"(,"Pad":")" + std::string(1100 << 10, 'x') + "\"";
  for (const std::string& pad : {std::string(), large}) {
    const std::string body = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[)" + items + R"(]},"NodeNames":null)" + pad + "}";
    auto a = parse_args(body, kSel);
    ASSERT_TRUE(a.ok()) << a.message();
    ASSERT_EQ(a->nodes->size(), std::size(cases));
    for (size_t i = 0; i < std::size(cases); ++i) {
      const auto& n = (*a->nodes)[i];
      EXPECT_EQ(n.name, cases[i].name) << pad.size();
      const std::string trimmed = cases[i].node.substr(cases[i].node.find('{'), cases[i].node.rfind('}') + 1 - cases[i].node.find('{'));
      EXPECT_EQ(n.json, trimmed) << pad.size();
      auto decoded = parse_node(n.json, kSel);
      ASSERT_TRUE(decoded.ok()) << decoded.message();
      EXPECT_EQ(decoded->meta.name, n.name) << "the scan and the decoder agree";
    }
    // Errors name the item and the field.
    for (const auto& [node, message] : std::vector<std::pair<std::string, std::string>>{
             {R"({"metadata":{"name":5}})", "Nodes.items[1].metadata.name: expected a string"},
             {R"({"metadata":[]})", "Nodes.items[1].metadata: expected an object"},
             {R"({"metadata":null})", "Nodes.items[1].metadata.name: missing"},
             {R"({"metadata":{"name":null}})", "Nodes.items[1].metadata.name: missing"},
             {R"({"metadata":{"name":"a"},"metadata":{"name":null}})", "Nodes.items[1].metadata.name: missing"},
             {R"({"metadata":{"name":")" + std::string(254, 'n') + R"("}})", "Nodes.items[1].metadata.name: 254 bytes"},
             {R"(["n1"])", "Nodes.items[1]: expected a Node object"}}) {
      auto bad = parse_args(std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n0"}},)" + node + "]}" + pad + "}", kSel);
      ASSERT_FALSE(bad.ok()) << node;
      EXPECT_NE(bad.message().find(message), std::string::npos) << node << ": " << bad.message();
    }
  }
  // Large: items arrays the check did not watch (another spelling of the
  // key, a second copy) are read from the parsed text, as they come.
  const std::string twice = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"a"}}],"it\u0065ms":[{"metadata":{"name":"b"}}],"items":[{"metadata":{"name":"c"}}]})" + large + "}";
  auto a = parse_args(twice, kSel);
  ASSERT_TRUE(a.ok()) << a.message();
  std::vector<std::string_view> names;
  for (const auto& n : *a->nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"a", "b", "c"}));
  EXPECT_EQ((*a->nodes)[2].json, R"({"metadata":{"name":"c"}})");
  // UTF-8 inside the items is checked too (simdjson's stage 1 does not see
  // them): a large body is refused as a small one is.
  for (const std::string& pad : {std::string(), large}) {
    const std::string bad_utf8 = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n1","labels":{"a":")" + "\xff" +
                                 R"("}}}]})" + pad + "}";
    auto u = parse_args(bad_utf8, kSel);
    ASSERT_FALSE(u.ok()) << pad.size();
    EXPECT_NE(u.message().find("UTF-8"), std::string::npos) << u.message();
  }
  // More nodes than a request may hold (2.6 MB of them): refused, and the
  // check's records stop at the limit.
  {
    std::string many;
    for (size_t i = 0; i <= kMaxNodesPerRequest; ++i) many += i ? R"(,{"metadata":{"name":"n"}})" : R"({"metadata":{"name":"n"}})";
    auto m = parse_args(std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[)" + many + "]}}", kSel);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.message().find("more than 100000 nodes"), std::string::npos) << m.message();
  }
  // Two copies spelled alike: the last is the one left out of the parse.
  const std::string two = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"c"}}, {"metadata":{"name":"d"}}]})" + large + "}";
  auto b = parse_args(two, kSel);
  ASSERT_TRUE(b.ok()) << b.message();
  names.clear();
  for (const auto& n : *b->nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"a", "c", "d"}));
  EXPECT_EQ((*b->nodes)[2].json, R"({"metadata":{"name":"d"}})");
}

// A lone surrogate (\udc00 without a high half before it, \ud800 without
// a low one after it) is no character, and its bytes would not be UTF-8:
// refused in a name as common/json/check.cc refuses it in any string,
// whichever way the body is read (small bodies, large ones, names with
// escapes decoded by hand); a pair is one character.
TEST(ExtenderArgs, ALoneSurrogateIsRefusedAsTheCheckerRefusesIt) {
  const std::string large = R"(,"Pad":")" + std::string(1100 << 10, 'x') + "\"";
  for (const std::string& pad : {std::string(), large}) {
    for (const char* name : {R"(n\udc00)", R"(\uDC00n)", R"(n\ud800)", R"(n\udc00\ud800)", R"(n\ud800\u0041)"}) {
      const std::string names = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["n1",")" + name + R"("])" + pad + "}";
      auto a = parse_args(names, kSel);
      EXPECT_FALSE(a.ok()) << name << " in NodeNames, after " << pad.size() << " bytes: decoded to "
                           << (a.ok() && a->node_names ? std::string(a->node_names->back()) : std::string());
      const std::string nodes = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":")" + name + R"("}}]})" + pad + "}";
      auto b = parse_args(nodes, kSel);
      EXPECT_FALSE(b.ok()) << name << " in Nodes.items, after " << pad.size() << " bytes: decoded to "
                           << (b.ok() && b->nodes ? std::string(b->nodes->back().name) : std::string());
    }
    const std::string pair = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["n\ud83d\ude00"])" + pad + "}";
    auto c = parse_args(pair, kSel);
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->node_names->front(), "n\xf0\x9f\x98\x80") << "U+1F600 in UTF-8";
  }
}

TEST(ExtenderArgs, ErrorsNameTheField) {
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"Pod":5})", "Pod"}, {R"({"NodeNames":"n1"})", "NodeNames"}, {R"({"NodeNames":[1]})", "NodeNames"}, {"[]", ""}, {"{", ""}}) {
    auto a = parse_args(body, kSel);
    ASSERT_FALSE(a.ok()) << body;
    EXPECT_NE(a.message().find(field), std::string::npos) << body << ": " << a.message();
  }
}

TEST(ExtenderArgs, KubernetesSizeLimitsAreCheckedByField) {
  const std::string long_name(254, 'n');
  struct Case {
    std::string body, field;
  } cases[] = {
      {std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["n1",")" + long_name + R"("]})", "NodeNames[1]: 254 bytes"},
      {std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["n1",")" + std::string(253, 'n') + R"(\u0041"]})", "NodeNames[1]: 254 bytes"},
      {std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":")" + long_name + R"("}}]}})",
       "Nodes.items[0].metadata.name: 254 bytes"},
      {R"({"Pod":{"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"name":")" + std::string(64, 'c') + R"("}]}}})",
       "Pod.spec.containers[0].name: 64 bytes"},
  };
  for (const auto& c : cases) {
    auto a = parse_args(c.body, kSel);
    ASSERT_FALSE(a.ok()) << c.field;
    EXPECT_NE(a.message().find(c.field), std::string::npos) << a.message();
  }
}

}  // namespace
}  // namespace fracpack::k8s::extender_args_test
