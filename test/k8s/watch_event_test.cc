// k8s/watch_event.cc: a watch event's envelope, scanned.
#include "k8s/objects.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::watch_event_test {
namespace {

// The envelope is scanned, not decoded: the object comes back as a view of
// the text, whatever its contents, key order or spacing.
TEST(WatchEvent, EnvelopesOfEveryOrderAndTheirErrors) {
  const std::string added = R"({"type":"ADDED","object":{"metadata":{"name":"a}\"{"},"x":[1,{"y":"]"}]}})";
  auto ev = parse_watch_event(added);
  ASSERT_TRUE(ev.ok()) << ev.message();
  EXPECT_EQ(ev->type, "ADDED");
  EXPECT_EQ(ev->object, R"({"metadata":{"name":"a}\"{"},"x":[1,{"y":"]"}]})");
  EXPECT_EQ(ev->object.data(), added.data() + 25) << "a view, not a copy";

  const std::string reordered = " {\n \"object\" : {\"k\":\"v\"} ,\t\"type\" : \"DELETED\" }\n";
  ev = parse_watch_event(reordered);
  ASSERT_TRUE(ev.ok()) << ev.message();
  EXPECT_EQ(ev->type, "DELETED");
  EXPECT_EQ(ev->object, R"({"k":"v"})");

  ev = parse_watch_event(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"4711"}}})");
  ASSERT_TRUE(ev.ok()) << ev.message();
  EXPECT_EQ(ev->resource_version, "4711");

  struct Bad {
    const char* text;
    const char* says;
  };
  for (const Bad& b : {Bad{R"({"type":"ADDED"})", "without an object"}, Bad{R"({"object":{}})", "without a type"},
                       Bad{R"({"type":"ADDED","object":[1]})", "not an object"},
                       Bad{R"({"type":"ADDED","object":{"a":1})", "truncated"},
                       Bad{R"({"type":"ADDED","object":{}} x)", "trailing"}, Bad{R"({"type":7,"object":{}})", "plain string"},
                       Bad{R"({"type":"ADDED" "object":{}})", "expected ','"}, Bad{"[1]", "not a JSON object"},
                       Bad{R"({"type":"ADD)", "unterminated"}, Bad{"", "not a JSON object"}}) {
    auto r = parse_watch_event(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.message().find(b.says), std::string::npos) << b.text << " -> " << r.message();
  }
}

}  // namespace
}  // namespace fracpack::k8s::watch_event_test
