#include "k8s/json_stream.h"

#include <gtest/gtest.h>

#include <random>

namespace fracpack::k8s {
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

}  // namespace
}  // namespace fracpack::k8s
