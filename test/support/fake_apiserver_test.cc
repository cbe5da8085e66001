// The fixture's own fidelity where the reference is specific and the
// informer tests would not notice a slip.
#include "test/support/fake_apiserver.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s/api_client.h"
#include "common/json/stream.h"
#include "test/support/cluster_harness.h"

namespace fracpack::testing::fake_apiserver_test {
namespace {

using json = nlohmann::json;

// Reads watch events from `target` until `count` have come.
std::vector<json> watch_events(FakeApiServer& server, const std::string& target, size_t count) {
  k8s::ApiClient client(client_for(server));
  ObjectSplitter splitter;
  std::vector<json> events;
  auto r = client.stream(target, std::chrono::seconds(5), [](int, const std::string&) { return Status::Ok(); },
                         [&](std::string_view bytes) {
                           return splitter.feed(bytes, [&](std::string_view e) -> Status {
                             events.push_back(json::parse(e));
                             if (events.size() == count) return Error{"enough"};
                             return Status::Ok();
                           });
                         });
  EXPECT_FALSE(r) << "the watch ended before " << count << " events";
  return events;
}

// §4.3: a pod that stops matching the selector leaves as DELETED with its
// previous state, at the resource version of the change that removed it.
TEST(FakeApiServer, SelectorDropOutIsDeletedAtTheChangesVersion) {
  FakeApiServer server;
  server.create("pods", pod_object({"a", "default", "n1", "Running", {{"cpu", "1"}}, {}}));
  const std::string from = std::to_string(server.resource_version());
  server.update("pods", "default", "a", [](const std::string& t) {
    json o = json::parse(t);
    o["status"]["phase"] = "Succeeded";
    return o.dump();
  });
  const auto events = watch_events(
      server, "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded&resourceVersion=" + from + "&watch=true", 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "DELETED");
  EXPECT_EQ(events[0]["object"]["status"]["phase"], "Running") << "the previous state";
  EXPECT_EQ(events[0]["object"]["metadata"]["resourceVersion"], std::to_string(server.resource_version()));
}

// A LIST at resourceVersion 0 comes whole from the "watch cache"; the
// pieces of a large body add up to a valid list.
TEST(FakeApiServer, ListsAtVersionZeroComeWhole) {
  FakeApiServer server;
  for (int i = 0; i < 30; ++i) server.create("pods", pod_object({"p" + std::to_string(i), "default", "n1", "Running", {}, {}}));
  k8s::ApiClient client(client_for(server));
  auto whole = client.request("GET", "/api/v1/pods?limit=10&resourceVersion=0");
  ASSERT_TRUE(whole) << whole.message();
  const json list = json::parse(whole->body);
  EXPECT_EQ(list["items"].size(), 30u);
  EXPECT_FALSE(list["metadata"].contains("continue"));
  auto page = client.request("GET", "/api/v1/pods?limit=10");
  ASSERT_TRUE(page) << page.message();
  EXPECT_EQ(json::parse(page->body)["items"].size(), 10u);
}

}  // namespace
}  // namespace fracpack::testing::fake_apiserver_test
