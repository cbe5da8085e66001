// Kubernetes Events (k8s/events.h): posted from a background thread, one per
// (pod, reason) per interval with the repeats counted into the next one, a
// global token bucket, a bounded queue; against the fake API server.
#include "k8s/events.h"

#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::testing::events_test {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

TEST(Events, PostedInTheBackgroundAndRateLimited) {
  FakeApiServer s;
  k8s::EventOptions o;
  o.instance = "fracpack-0";
  k8s::EventRecorder rec(client_for(s), o);
  std::jthread worker([&](std::stop_token st) { rec.run(st); });
  const k8s::EventRef pod{"ml", "train-0", "u-1"};
  rec.record(pod, "Warning", "FailedScheduling", "0/3 nodes are available: 3 insufficient GPU");
  rec.record(pod, "Warning", "FailedScheduling", "again");  // within the interval: suppressed
  rec.record(pod, "Warning", "BindFailed", "conflict");
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().posted == 2; }));
  const auto events = s.list("events");
  ASSERT_EQ(events.size(), 2u);
  json e = json::parse(events[0]);
  EXPECT_EQ(e["involvedObject"]["name"], "train-0");
  EXPECT_EQ(e["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(e["source"]["component"], "fracpack");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(rec.stats().suppressed, 1u);
  // The global bucket: a burst beyond it is dropped, not queued forever.
  for (int i = 0; i < 100; ++i) rec.record({"ml", "p" + std::to_string(i), "u" + std::to_string(i)}, "Warning", "X", "m");
  EXPECT_GE(rec.stats().suppressed, 60u);
}

TEST(Events, EventBodyFollowsTheReference) {
  k8s::EventOptions o;
  o.component = "fracpack";
  o.instance = "host-1";
  const auto first = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  const auto last = first + 90s;
  const std::string body = k8s::EventRecorder::event_json({"ml", "train-0", "u-1"}, "Warning", "FailedScheduling",
                                                          "no \"node\" fits", 3, first, last, o);
  EXPECT_EQ(body, R"({"apiVersion":"v1","kind":"Event","metadata":{"generateName":"train-0.","namespace":"ml"},)"
                  R"("involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"train-0","uid":"u-1"},)"
                  R"("reason":"FailedScheduling","message":"no \"node\" fits","type":"Warning",)"
                  R"("source":{"component":"fracpack"},"reportingComponent":"fracpack","reportingInstance":"host-1",)"
                  R"("count":3,"firstTimestamp":")" +
                      format_rfc3339(first) + R"(","lastTimestamp":")" + format_rfc3339(last) + R"("})");
  EXPECT_EQ(format_rfc3339(first), "2023-11-14T22:13:20Z");
}

TEST(Events, LongMessagesAreCutTo1024Bytes) {
  const auto now = std::chrono::system_clock::now();
  k8s::EventOptions o;
  for (size_t size : {1023u, 1024u, 1025u, 5000u}) {
    const std::string message(size, 'm');
    json e = json::parse(k8s::EventRecorder::event_json({"ns", "p", "u"}, "Normal", "R", message, 1, now, now, o));
    const std::string got = e["message"];
    if (size <= 1024) {
      EXPECT_EQ(got, message) << size;
    } else {
      EXPECT_EQ(got.size(), 1024u) << size;
      EXPECT_EQ(got, std::string(1021, 'm') + "...") << size;
    }
  }
}

TEST(Events, RepeatsWithinTheIntervalAreCountedIntoTheNextEvent) {
  FakeApiServer s;
  k8s::EventOptions o;
  o.per_object_interval = 1000ms;  // the three records below fall well within it, even on a loaded machine
  k8s::EventRecorder rec(client_for(s), o);
  std::jthread worker([&](std::stop_token st) { rec.run(st); });
  const k8s::EventRef pod{"ml", "train-0", "u-1"};
  rec.record(pod, "Warning", "FailedScheduling", "first");
  rec.record(pod, "Warning", "FailedScheduling", "second");
  rec.record(pod, "Warning", "FailedScheduling", "third");
  // Another reason, or another pod with the same reason, is its own event.
  rec.record(pod, "Warning", "BindFailed", "x");
  rec.record({"ml", "train-1", "u-2"}, "Warning", "FailedScheduling", "y");
  EXPECT_EQ(rec.stats().queued, 3u);
  EXPECT_EQ(rec.stats().suppressed, 2u);
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().posted == 3; }));
  std::this_thread::sleep_for(1100ms);
  rec.record(pod, "Warning", "FailedScheduling", "fourth");
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().posted == 4; }));
  int counted = 0;
  for (const std::string& text : s.list("events")) {
    json e = json::parse(text);
    if (e["message"] == "first") {
      EXPECT_EQ(e["count"], 1);
    }
    if (e["message"] == "fourth") {
      EXPECT_EQ(e["count"], 3) << "itself and the two suppressed before it";
      EXPECT_EQ(e["involvedObject"]["uid"], "u-1");
      ++counted;
    }
  }
  EXPECT_EQ(counted, 1);
  EXPECT_EQ(rec.stats().failed, 0u);
}

TEST(Events, TheTokenBucketAllowsABurstThenTheRate) {
  FakeApiServer s;
  k8s::EventOptions o;
  o.burst = 3;
  o.qps = 0.001;  // no token back within the test
  k8s::EventRecorder rec(client_for(s), o);  // no worker: nothing is posted
  for (int i = 0; i < 10; ++i) rec.record({"ns", "p" + std::to_string(i), "u" + std::to_string(i)}, "Normal", "R", "m");
  EXPECT_EQ(rec.stats().queued, 3u);
  EXPECT_EQ(rec.stats().suppressed, 7u);
  EXPECT_EQ(rec.stats().posted, 0u);
}

TEST(Events, AFullQueueDropsRatherThanBlocks) {
  FakeApiServer s;
  k8s::EventOptions o;
  o.queue_limit = 4;
  k8s::EventRecorder rec(client_for(s), o);  // no worker: the queue fills
  for (int i = 0; i < 10; ++i) rec.record({"ns", "p" + std::to_string(i), "u" + std::to_string(i)}, "Normal", "R", "m");
  EXPECT_EQ(rec.stats().queued, 4u);
  EXPECT_EQ(rec.stats().suppressed, 6u);
  // The queued ones go out once a worker runs.
  std::jthread worker([&](std::stop_token st) { rec.run(st); });
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().posted == 4; }));
  EXPECT_EQ(s.list("events").size(), 4u);
}

TEST(Events, AnEventTheApiServerRefusesIsCountedAsFailed) {
  FakeApiServer s;
  s.faults().unauthorized = 1;
  k8s::EventRecorder rec(client_for(s), {});
  std::jthread worker([&](std::stop_token st) { rec.run(st); });
  rec.record({"ns", "a", "u-a"}, "Normal", "R", "refused");
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().failed == 1; }));
  rec.record({"ns", "b", "u-b"}, "Normal", "R", "accepted");
  ASSERT_TRUE(Cluster::wait_for([&] { return rec.stats().posted == 1; }));
  const auto events = s.list("events");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(json::parse(events[0])["message"], "accepted");
}

TEST(Events, StoppingTheWorkerEndsItPromptly) {
  FakeApiServer s;
  k8s::EventRecorder rec(client_for(s), {});
  const auto started = std::chrono::steady_clock::now();
  {
    std::jthread worker([&](std::stop_token st) { rec.run(st); });
    std::this_thread::sleep_for(50ms);
  }  // request_stop() and join: the worker waiting for events must wake
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

}  // namespace
}  // namespace fracpack::testing::events_test
