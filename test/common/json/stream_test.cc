#include "common/json/stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "common/json/check.h"

namespace fracpack::k8s::stream_test {
namespace {

std::vector<std::string> split_objects(const std::string& text, const std::vector<size_t>& cuts, Status* status = nullptr) {
  ObjectSplitter s;
  std::vector<std::string> out;
  size_t prev = 0;
  std::vector<size_t> all = cuts;
  all.push_back(text.size());
  for (size_t c : all) {
    Status st = s.feed(std::string_view(text).substr(prev, c - prev), [&](std::string_view o) {
      out.emplace_back(o);
      return Status::Ok();
    });
    if (!st.ok()) {
      if (status) *status = st;
      return out;
    }
    prev = c;
  }
  if (status) *status = s.idle() ? Status::Ok() : Status(Error{"partial"});
  return out;
}

const std::string kEvents =
    R"({"type":"ADDED","object":{"metadata":{"name":"a\"}{","annotations":{"x":"[{\\\"}]"}}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}{"type":"DELETED","object":{"k":[1,{"n":[]}]}})"
    "\n\n";

TEST(ObjectSplitter, EverySplitPointYieldsTheSameObjects) {
  const auto whole = split_objects(kEvents, {});
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[0].substr(0, 16), R"({"type":"ADDED",)");
  EXPECT_EQ(whole[2].back(), '}');
  for (size_t cut = 0; cut <= kEvents.size(); ++cut) {
    EXPECT_EQ(split_objects(kEvents, {cut}), whole) << "cut at " << cut;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 0; i < kEvents.size(); ++i) {
      if (rng() % 4 == 0) cuts.push_back(i);
    }
    Status st;
    EXPECT_EQ(split_objects(kEvents, cuts, &st), whole);
    EXPECT_TRUE(st.ok());
  }
}

// Random JSON whose strings are dense in what makes splitting hard: quotes,
// backslash runs (dumped as \\ and \"), brackets, control characters,
// multi-byte UTF-8; values long enough to span many 64-byte blocks and
// every feed boundary.
nlohmann::json random_value(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto random_string = [&] {
    static const char* const kPieces[] = {"\\", "\"", "{", "}", "[", "]", "a", " ", "\n", "\\\\\"", "\u00e9", "x:y,", "\\\\"};
    std::string s;
    const int n = pick(3) == 0 ? pick(80) : pick(8);
    for (int i = 0; i < n; ++i) s += kPieces[pick(13)];
    return s;
  };
  const int kind = depth > 4 ? pick(3) : pick(6);
  switch (kind) {
    case 0:
      return random_string();
    case 1:
      return pick(1000000) - 500000;
    case 2:
      return pick(2) == 0 ? nlohmann::json(nullptr) : nlohmann::json(true);
    case 3: {
      nlohmann::json a = nlohmann::json::array();
      for (int i = pick(6); i > 0; --i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (int i = pick(7); i > 0; --i) o[random_string()] = random_value(rng, depth + 1);
      return o;
    }
  }
}

std::vector<size_t> random_cuts(std::mt19937& rng, size_t size) {
  std::vector<size_t> cuts;
  size_t at = 0;
  while (true) {
    at += 1 + rng() % (rng() % 2 == 0 ? 7 : 300);
    if (at >= size) return cuts;
    cuts.push_back(at);
  }
}

// The block scanner against the byte-at-a-time one, state by state.
TEST(JsonScanner, BlocksAgreeWithBytes) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    nlohmann::json doc = nlohmann::json::object();
    doc["v"] = random_value(rng, 0);
    doc["w"] = random_value(rng, 0);
    const std::string text = doc.dump() + doc.dump();  // two top-level objects
    JsonScanner fast, slow;
    size_t at = 0;
    for (size_t cut : random_cuts(rng, text.size())) {
      if (cut <= at) continue;
      const std::string_view piece = std::string_view(text).substr(at, cut - at);
      // Consume the piece, stopping at each return to depth 0 as a splitter does.
      size_t f = 0, s = 0;
      while (f < piece.size() || s < piece.size()) {
        if (fast.depth() == 0 && f < piece.size()) {
          ASSERT_TRUE(fast.step(piece[f++]));
          continue;
        }
        if (slow.depth() == 0 && s < piece.size()) {
          ASSERT_TRUE(slow.step(piece[s++]));
          continue;
        }
        f += fast.skip_to_depth(piece.substr(f), 0);
        s += slow.skip_to_depth_scalar(piece.substr(s), 0);
        ASSERT_EQ(f, s) << "trial " << trial << " at " << at;
        ASSERT_EQ(fast.depth(), slow.depth());
        ASSERT_EQ(fast.in_string(), slow.in_string());
      }
      at = cut;
    }
  }
}

TEST(ObjectSplitter, RandomEventsAtRandomCuts) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::string> want;
    std::string stream;
    for (int e = 0; e < 30; ++e) {
      nlohmann::json ev = {{"type", "MODIFIED"}, {"object", random_value(rng, 1)}};
      want.push_back(ev.dump());
      stream += want.back() + (e % 3 == 0 ? "\n" : "");
    }
    Status st;
    EXPECT_EQ(split_objects(stream, random_cuts(rng, stream.size()), &st), want) << "trial " << trial;
    EXPECT_TRUE(st.ok());
    EXPECT_EQ(split_objects(stream, {}, &st), want);
  }
}

TEST(ObjectSplitter, ErrorsAndPartialEnds) {
  Status st;
  split_objects("[1,2]", {}, &st);
  EXPECT_FALSE(st.ok());
  split_objects(R"({"a":1}})", {}, &st);
  EXPECT_FALSE(st.ok());
  auto got = split_objects(R"({"a":1}{"b":)", {}, &st);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_FALSE(st.ok()) << "a half event at the end is not idle";
}

struct ListResult {
  std::vector<std::string> items;
  std::string metadata;
  Status status;
};

ListResult split_list(const std::string& text, const std::vector<size_t>& cuts) {
  ListSplitter s;
  ListResult r;
  size_t prev = 0;
  std::vector<size_t> all = cuts;
  all.push_back(text.size());
  for (size_t c : all) {
    Status st = s.feed(std::string_view(text).substr(prev, c - prev), [&](std::string_view item) {
      r.items.emplace_back(item);
      return Status::Ok();
    });
    if (!st.ok()) {
      r.status = st;
      return r;
    }
    prev = c;
  }
  r.status = s.finish();
  r.metadata = s.metadata();
  return r;
}

TEST(ListSplitter, ItemsAndMetadataAtAnySplit) {
  const std::string list =
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"a\"b"},)"
      R"("items":[{"metadata":{"name":"p1","x":"]}"}},)"
      "\n "
      R"({"metadata":{"name":"p2"},"spec":{"containers":[{"name":"c","args":["[","{"]}]}}]})";
  const ListResult whole = split_list(list, {});
  ASSERT_TRUE(whole.status.ok()) << whole.status.message();
  ASSERT_EQ(whole.items.size(), 2u);
  EXPECT_EQ(whole.items[0], R"({"metadata":{"name":"p1","x":"]}"}})");
  EXPECT_EQ(whole.metadata, R"({"resourceVersion":"77","continue":"a\"b"})");
  for (size_t cut = 0; cut <= list.size(); ++cut) {
    const ListResult r = split_list(list, {cut});
    ASSERT_TRUE(r.status.ok()) << cut << ": " << r.status.message();
    EXPECT_EQ(r.items, whole.items) << cut;
    EXPECT_EQ(r.metadata, whole.metadata) << cut;
  }
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 0; i < list.size(); ++i) {
      if (rng() % 3 == 0) cuts.push_back(i);
    }
    const ListResult r = split_list(list, cuts);
    EXPECT_EQ(r.items, whole.items);
    EXPECT_EQ(r.metadata, whole.metadata);
  }
}

TEST(ListSplitter, RandomItemsAtRandomCuts) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    nlohmann::json list = {{"kind", "PodList"}, {"apiVersion", "v1"}};
    list["metadata"] = {{"resourceVersion", std::to_string(trial)}, {"continue", random_value(rng, 3)}};
    list["items"] = nlohmann::json::array();
    for (int i = 0; i < 25; ++i) {
      nlohmann::json item = {{"metadata", {{"name", "p" + std::to_string(i)}}}, {"spec", random_value(rng, 1)}};
      list["items"].push_back(item);
    }
    list["other"] = random_value(rng, 2);
    const std::string text = list.dump(trial % 2 == 0 ? -1 : 1);
    const ListResult r = split_list(text, random_cuts(rng, text.size()));
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.items.size(), 25u);
    for (size_t i = 0; i < r.items.size(); ++i) EXPECT_EQ(nlohmann::json::parse(r.items[i]), list["items"][i]);
    EXPECT_EQ(nlohmann::json::parse(r.metadata), list["metadata"]);
  }
}

TEST(ListSplitter, KubectlOrderNullItemsAndErrors) {
  // kubectl sorts keys: items before kind and metadata.
  ListResult r = split_list(R"({"apiVersion":"v1","items":[{"a":1}],"kind":"List","metadata":{"resourceVersion":""}})", {});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.items.size(), 1u);
  EXPECT_EQ(r.metadata, R"({"resourceVersion":""})");
  r = split_list(R"({"kind":"PodList","metadata":null,"items":null})", {});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(r.items.empty());
  EXPECT_TRUE(r.metadata.empty());
  r = split_list(R"({"items":[{"a":1},)", {});
  EXPECT_FALSE(r.status.ok()) << "a truncated body";
  r = split_list(R"({"items":[1,2]})", {});
  EXPECT_FALSE(r.status.ok()) << "items must be objects";
  r = split_list(R"([{"a":1}])", {});
  EXPECT_FALSE(r.status.ok());
}

// Found by review (issue 42): check_json_text refused a lone low surrogate
// ("\udc00") while the extender's own unescaper decoded it into bytes that
// are not UTF-8. One rule: JSON spells UTF-16, a surrogate only in a
// high-low pair; anything else is malformed.
TEST(UnescapeJsonString, ASurrogateOnlyInAHighLowPairAsTheCheckerSays) {
  std::string out;
  EXPECT_FALSE(check_json_text(R"("a\udc00b")", "t").ok());
  EXPECT_FALSE(unescape_json_string(R"(a\udc00b)", out)) << "decoded to " << out.size() << " bytes";
  EXPECT_FALSE(unescape_json_string(R"(\udfff)", out));
  EXPECT_FALSE(unescape_json_string(R"(a\ud83d)", out)) << "a high surrogate without its low half";
  ASSERT_TRUE(unescape_json_string(R"(\ud83d\ude00 \u00e9\n)", out));
  EXPECT_EQ(out, "\xF0\x9F\x98\x80 \xC3\xA9\n");
}

}  // namespace
}  // namespace fracpack::k8s::stream_test
