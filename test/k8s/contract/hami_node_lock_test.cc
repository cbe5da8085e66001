// HAMi's node lock as fracpack takes it (k8s/contract/hami_node_lock.h, ../shared/reference/node-side.md §A2.4),
// against the test API server.
#include "k8s/contract/hami_node_lock.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "test/support/cluster_harness.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::k8s::node_lock_test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

struct LockFixture {
  testing::FakeApiServer api;
  ApiClient client{testing::client_for(api)};
  LockFixture() { api.create("nodes", testing::node_object("n1", 2)); }
  std::string lock() const {
    json n = json::parse(*api.get("nodes", "", "n1"));
    const json a = n["metadata"].value("annotations", json::object());
    return a.value("hami.io/mutex.lock", "");
  }
  void set_lock(const std::string& v) {
    api.update("nodes", "", "n1", [&](const std::string& t) {
      json n = json::parse(t);
      n["metadata"]["annotations"]["hami.io/mutex.lock"] = v;
      return n.dump();
    });
  }
  void create_pod(const std::string& name) {
    api.create("pods", testing::pod_object(testing::PodSpec(name, "default", "", "Pending", {{"cpu", "1"}}, {}, "u-" + name)));
  }
};

BindTarget target(const std::string& name) { return BindTarget{"default", name, "u-" + name, "n1", {}, {}}; }

TEST(NodeLock, TheValueIsHamis) {
  const auto t = SystemClock::time_point(std::chrono::seconds(1767225600));
  EXPECT_EQ(format_node_lock(t, "team-a", "train-0"), "2026-01-01T00:00:00Z,team-a,train-0");
  auto v = parse_node_lock("2026-03-01T10:15:30+08:00,team-a,train-0");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->namespace_name, "team-a");
  EXPECT_EQ(v->name, "train-0");
  EXPECT_EQ(SystemClock::to_time_t(v->at), 1772331330);
  v = parse_node_lock("2026-03-01T10:15:30Z");
  ASSERT_TRUE(v) << "a bare time is a lock without an owner";
  EXPECT_TRUE(v->name.empty());
  EXPECT_FALSE(parse_node_lock("yesterday,ns,p"));
  EXPECT_FALSE(parse_node_lock("2026-03-01T10:15:30Z,ns"));
}

TEST(NodeLock, TakenForThePodAndReleasedOnlyByIt) {
  LockFixture f;
  HamiNodeLock lock;
  ASSERT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(2000)).ok());
  auto v = parse_node_lock(f.lock());
  ASSERT_TRUE(v) << f.lock();
  EXPECT_EQ(v->name, "a");
  EXPECT_LT(std::chrono::abs(SystemClock::now() - v->at), std::chrono::seconds(5));
  lock.release(f.client, target("b"));
  EXPECT_FALSE(f.lock().empty()) << "b does not own it";
  // A retried bind of the same pod takes it afresh.
  ASSERT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(2000)).ok());
  lock.release(f.client, target("a"));
  EXPECT_TRUE(f.lock().empty());
}

TEST(NodeLock, ALivePodsLockIsWaitedForThenRefusedNamingIt) {
  LockFixture f;
  f.create_pod("holder");
  f.set_lock(format_node_lock(SystemClock::now(), "default", "holder"));
  HamiNodeLock lock;
  Status s = lock.acquire(f.client, target("a"), Steady::now() + milliseconds(200));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node n1 is locked by pod default/holder"), std::string::npos) << s.message();
  EXPECT_NE(f.lock().find(",default,holder"), std::string::npos);
  // Released by the device plugin meanwhile: taken.
  auto released = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(milliseconds(100));
    f.api.update("nodes", "", "n1", [](const std::string& t) {
      json n = json::parse(t);
      n["metadata"]["annotations"].erase("hami.io/mutex.lock");
      return n.dump();
    });
  });
  ASSERT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(3000)).ok());
  released.get();
  EXPECT_NE(f.lock().find(",default,a"), std::string::npos);
}

TEST(NodeLock, ExpiredDanglingAndUnreadableLocksAreTakenOver) {
  LockFixture f;
  f.create_pod("holder");
  HamiNodeLockOptions o;
  o.expire = milliseconds(1000);
  HamiNodeLock lock(o);
  f.set_lock(format_node_lock(SystemClock::now() - std::chrono::seconds(10), "default", "holder"));
  EXPECT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(500)).ok()) << "expired";
  f.set_lock(format_node_lock(SystemClock::now(), "default", "gone"));
  EXPECT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(500)).ok()) << "its pod does not exist";
  f.set_lock("garbage");
  EXPECT_TRUE(lock.acquire(f.client, target("a"), Steady::now() + milliseconds(500)).ok()) << "unreadable";
  EXPECT_NE(f.lock().find(",default,a"), std::string::npos);
}

TEST(NodeLock, TwoWritersNeverBothHoldIt) {
  for (int round = 0; round < 5; ++round) {
    LockFixture f;
    f.create_pod("a");
    f.create_pod("b");
    HamiNodeLock lock;
    auto deadline = Steady::now() + milliseconds(300);
    auto a = std::async(std::launch::async, [&] { return lock.acquire(f.client, target("a"), deadline).ok(); });
    ApiClient other(testing::client_for(f.api));
    const bool b = lock.acquire(other, target("b"), deadline).ok();
    EXPECT_NE(a.get(), b) << "round " << round << ": exactly one takes it (the resourceVersion precondition)";
  }
}

}  // namespace
}  // namespace fracpack::k8s::node_lock_test
