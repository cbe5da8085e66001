// node/devices_and_pods: the matcher behind a lock, waiting for the pod watch.
#include "node/devices_and_pods.h"

#include <gtest/gtest.h>

#include <thread>

#include "test/support/waiting_pods.h"

namespace fracpack::node::devices_and_pods_test {
namespace {

using namespace std::chrono_literals;
using scheduling::CardShare;
using Clock = std::chrono::steady_clock;

WaitingPod two_containers() {
  return test::waiting_pod("p", "2026-01-01T00:00:00Z",
                           {{GpuContainer{"first", false, 1, {}}, {CardShare{0, "GPU-0", 1024, 100}}},
                            {GpuContainer{"second", false, 1, {}}, {CardShare{1, "GPU-1", 1024, 100}}}});
}

// The pod watch delivering `pods` a moment later (a bind kubelet saw first).
std::jthread list_later(DevicesAndPods& state, std::vector<WaitingPod> pods) {
  return std::jthread([&state, pods = std::move(pods)]() mutable {
    std::this_thread::sleep_for(50ms);
    state.set_pods(std::move(pods));
  });
}

TEST(DevicesAndPods, ARestoredAdmissionSurvivesAnAllocateBeforeThePodsAreListed) {
  // The agent restarted while kubelet was between a pod's two containers:
  // the next Allocate comes before the first pod list. It waits, and
  // while it waits nothing forgets which pod kubelet is in.
  DevicesAndPods state;
  const WaitingPod p = two_containers();
  state.restore(AgentState{{{p.uid, 1}}, p.uid, {}});
  std::jthread watch = list_later(state, {p});
  auto a = state.allocate(1, Clock::now() + 5s);
  watch.join();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->container, "second");
}

TEST(DevicesAndPods, AnAllocateWaitsForItsPodAndPersistsOnlyChanges) {
  DevicesAndPods state;
  int writes = 0;
  std::map<std::string, int> last;
  state.set_persist([&](const AgentState& saved) {
    ++writes;
    last = saved.served;
  });
  const WaitingPod p = two_containers();
  std::jthread watch = list_later(state, {p});
  auto a = state.allocate(1, Clock::now() + 5s);
  watch.join();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(last.at(p.uid), 1);
  ASSERT_TRUE(state.allocate(1, Clock::now() + 1s).ok());
  EXPECT_EQ(writes, 2);
  // The pod gone: its count and what it held are dropped at once.
  state.set_pods({});
  EXPECT_EQ(writes, 3);
  EXPECT_TRUE(last.empty());
  // A refusal ends the admission kubelet was in (the last pod is forgotten);
  // refusals with nothing served and no pod begun change nothing to keep.
  EXPECT_FALSE(state.allocate(1, Clock::now() + 10ms).ok());
  EXPECT_EQ(writes, 4);
  EXPECT_FALSE(state.allocate(1, Clock::now() + 10ms).ok());
  EXPECT_EQ(writes, 4);
}

TEST(DevicesAndPods, PreferredAllocationWaitsForThePodWatchToo) {
  DevicesAndPods state;
  std::jthread watch = list_later(state, {two_containers()});
  auto a = state.peek(1, Clock::now() + 5s);
  watch.join();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->container, "first");
}


// --- the agent's own account and the API server's word ---

std::vector<GpuDevice> two_cards() {
  std::vector<GpuDevice> out;
  for (int i = 0; i < 2; ++i) {
    GpuDevice d;
    d.index = i;
    d.uuid = "GPU-" + std::to_string(i);
    d.memory_mib = 40960;
    out.push_back(d);
  }
  return out;
}

WaitingPod one(const std::string& name, const std::string& created, CardShare card) {
  return test::waiting_pod(name, created, {{GpuContainer{"main", false, 1, {}}, {std::move(card)}}});
}

TEST(DevicesAndPods, TheAgentsAccountRefusesACardAnotherLivePodHolds) {
  // A running pod holds card 0 whole (the agent served it, or its signed
  // record says so); a record naming card 0 for another pod — an extender
  // that lost track after a tampered record and a restart — is refused,
  // and the message names no other pod (kubelet shows it to this pod's owner).
  DevicesAndPods state;
  state.set_devices(two_cards());
  std::map<std::string, LivePod> live = {{"uid-r", LivePod{"team-a/trainer", std::vector<scheduling::CardCharge>{{0, 40960, 1000, 1}}}}};
  state.set_pods({one("p", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500})}, live);
  auto refused = state.allocate(1, Clock::now() + 100ms);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("card 0 (GPU-0) is already held by other pods on this node (100% compute, 40960 MiB)"),
            std::string::npos) << refused.message();
  EXPECT_EQ(refused.message().find("trainer"), std::string::npos) << "another team's pod is not named";
  // A card no one holds is served; once the running pod is gone, card 0 too.
  state.set_pods({one("q", "2026-01-01T00:00:01Z", CardShare{1, "GPU-1", 8192, 500})}, live);
  ASSERT_TRUE(state.allocate(1, Clock::now() + 100ms).ok());
  state.set_pods({one("p", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500})}, {});
  EXPECT_TRUE(state.allocate(1, Clock::now() + 100ms).ok());
}

// Found by review (issue 42): the agent's account judged a card by compute
// and memory only, while the extender's rule (scheduling::share_within_capacity)
// also counts the card's sharers against its maxSharers (the agent's device
// IDs per card) and keeps a share that must be alone (HAMi's 100 % cores)
// off a card another pod shares. One rule now: the scheduling one.
TEST(DevicesAndPods, TheAgentsAccountJudgesACardByTheExtendersRule) {
  DevicesAndPods state;
  state.set_devices(two_cards());
  state.set_card_slots(2);
  // Two containers of a running pod share card 0, which serves two at once.
  std::map<std::string, LivePod> two_sharers = {{"uid-r", LivePod{"team-a/pair", std::vector<scheduling::CardCharge>{{0, 2048, 200, 2}}}}};
  state.set_pods({one("p", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 1024, 100})}, two_sharers);
  auto third = state.allocate(1, Clock::now() + 100ms);
  ASSERT_FALSE(third.ok()) << "a third container on a card of two slots";
  EXPECT_NE(third.message().find("card 0 (GPU-0) is already held by other pods on this node"), std::string::npos) << third.message();
  EXPECT_NE(third.message().find("at most 2"), std::string::npos) << third.message();

  // A memory-only share of another pod on card 0; a container that must
  // have its cards alone is refused there, though compute and memory add up.
  std::map<std::string, LivePod> memory_only = {{"uid-s", LivePod{"team-a/cache", std::vector<scheduling::CardCharge>{{0, 1024, 0, 1}}}}};
  WaitingPod alone = test::waiting_pod("q", "2026-01-01T00:00:01Z", {{GpuContainer{"main", false, 1, {}, true}, {CardShare{0, "GPU-0", 1024, 1000}}}});
  state.set_pods({alone}, memory_only);
  auto shared = state.allocate(1, Clock::now() + 100ms);
  ASSERT_FALSE(shared.ok()) << "a share that must be alone, beside another pod's";
  EXPECT_NE(shared.message().find("alone"), std::string::npos) << shared.message();
  // Alone on card 1, which no one holds, it is served.
  WaitingPod alone_free = test::waiting_pod("t", "2026-01-01T00:00:02Z", {{GpuContainer{"main", false, 1, {}, true}, {CardShare{1, "GPU-1", 1024, 1000}}}});
  state.set_pods({alone_free}, memory_only);
  EXPECT_TRUE(state.allocate(1, Clock::now() + 100ms).ok());
}

TEST(DevicesAndPods, WhatItServedCountsUntilThePodIsGoneWhateverItsRecordSaysLater) {
  DevicesAndPods state;
  state.set_devices(two_cards());
  const WaitingPod first = one("first", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 30000, 600});
  state.set_pods({first});
  ASSERT_TRUE(state.allocate(1, Clock::now() + 100ms).ok());
  // Running now, and its record was patched (not signed: no charges known).
  std::map<std::string, LivePod> live = {{first.uid, LivePod{first.key, std::nullopt}}};
  state.set_pods({one("second", "2026-01-01T00:00:01Z", CardShare{0, "GPU-0", 20000, 500})}, live);
  auto refused = state.allocate(1, Clock::now() + 100ms);
  ASSERT_FALSE(refused.ok()) << "60% and 30000 MiB served to `first` still count";
  EXPECT_NE(refused.message().find("card 0"), std::string::npos) << refused.message();
  // It survives the agent's restart: the state file keeps it.
  AgentState saved;
  state.set_persist([&](const AgentState& a) { saved = a; });
  state.set_pods({}, live);
  ASSERT_EQ(saved.holdings.count(first.uid), 1u);
  EXPECT_EQ(saved.holdings.at(first.uid).charges.at(0).cores, 600);
}

TEST(DevicesAndPods, APodTheApiServerShowsGoneOrChangedIsPassedOver) {
  // The watch still shows `a` (deleted, or failed by kubelet, a moment
  // ago); the API server does not: the Allocate goes to `b`.
  DevicesAndPods state;
  state.set_devices(two_cards());
  std::vector<std::string> asked;
  state.set_pod_check([&](const Assignment& a) {
    asked.push_back(a.pod_key);
    if (a.pod_uid == "uid-a") return DevicesAndPods::PodCheck{Error{"pod default/a no longer exists"}, true};
    return DevicesAndPods::PodCheck{Status::Ok(), true};
  });
  WaitingPod a = one("a", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500});
  WaitingPod b = one("b", "2026-01-01T00:00:01Z", CardShare{1, "GPU-1", 8192, 500});
  a.arrival = 1;
  b.arrival = 2;
  state.set_pods({a, b});
  auto served = state.allocate(1, Clock::now() + 1s);
  ASSERT_TRUE(served.ok()) << served.message();
  EXPECT_EQ(served->pod_key, "default/b");
  EXPECT_EQ(asked, (std::vector<std::string>{"default/a", "default/b"}));
}

TEST(DevicesAndPods, APodKubeletRejectedHalfwayIsNotContinued) {
  // kubelet allocated `half`'s first container, then rejected the pod (its
  // topology manager); the next Allocate of one device is `next`'s, not
  // half's second container.
  DevicesAndPods state;
  state.set_devices(two_cards());
  bool rejected = false;
  state.set_pod_check([&](const Assignment& a) {
    if (a.pod_uid == "uid-half" && rejected) return DevicesAndPods::PodCheck{Error{"pod default/half has finished (phase Failed)"}, true};
    return DevicesAndPods::PodCheck{Status::Ok(), true};
  });
  WaitingPod half = test::waiting_pod("half", "2026-01-01T00:00:00Z",
                                      {{GpuContainer{"one", false, 1, {}}, {CardShare{0, "GPU-0", 1024, 100}}},
                                       {GpuContainer{"two", false, 1, {}}, {CardShare{0, "GPU-0", 1024, 100}}}});
  WaitingPod next = one("next", "2026-01-01T00:00:01Z", CardShare{1, "GPU-1", 8192, 500});
  half.arrival = 1;
  next.arrival = 2;
  state.set_pods({half, next});
  auto first = state.allocate(1, Clock::now() + 1s);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->container, "one");
  rejected = true;  // the watch has not seen the Failed status yet; the API server has
  auto second = state.allocate(1, Clock::now() + 1s);
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->pod_key, "default/next");
}

// A pod whose record cannot serve (a tenant's forged one) takes its turn
// and is refused — unless the API server says it no longer waits (deleted,
// or rejected by kubelet before its Allocate): then the turn is the next
// pod's, which the stale pod must not block.
TEST(DevicesAndPods, AnUnservablePodIsRefusedInItsTurnUnlessItNoLongerWaits) {
  DevicesAndPods state;
  state.set_devices(two_cards());
  std::vector<std::string> asked;
  state.set_pod_check([&](const Assignment& a) {
    asked.push_back(a.pod_key + (a.container.empty() ? " (alive?)" : ""));
    return DevicesAndPods::PodCheck{Status::Ok(), true};
  });
  WaitingPod forged = one("forged", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500});
  forged.key = "team-b/forged";
  forged.cards = Error{"annotation fracpack.io/allocation is not fracpack's"};
  WaitingPod next = one("next", "2026-01-01T00:00:01Z", CardShare{1, "GPU-1", 8192, 500});
  forged.arrival = 1;
  next.arrival = 2;
  state.set_pods({forged, next});
  auto refused = state.allocate(1, Clock::now() + 1s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("is not fracpack's"), std::string::npos) << refused.message();
  EXPECT_EQ(refused.message().find("team-b/forged"), std::string::npos) << "names no pod: " << refused.message();
  EXPECT_EQ(asked, (std::vector<std::string>{"team-b/forged (alive?)"}));
  // The same pods on another node state, the forged pod gone at the API
  // server (the watch behind).
  asked.clear();
  DevicesAndPods fresh;
  fresh.set_devices(two_cards());
  fresh.set_pod_check([&](const Assignment& a) {
    asked.push_back(a.pod_key + (a.container.empty() ? " (alive?)" : ""));
    if (a.pod_uid == "uid-forged") return DevicesAndPods::PodCheck{Error{"pod team-b/forged no longer exists"}, true};
    return DevicesAndPods::PodCheck{Status::Ok(), true};
  });
  fresh.set_pods({forged, next});
  auto served = fresh.allocate(1, Clock::now() + 1s);
  ASSERT_TRUE(served.ok()) << served.message();
  EXPECT_EQ(served->pod_key, "default/next");
  EXPECT_EQ(asked, (std::vector<std::string>{"team-b/forged (alive?)", "default/next"}));
}

TEST(DevicesAndPods, AnAllocateThatCannotBeConfirmedIsRefusedAtItsDeadline) {
  DevicesAndPods state;
  state.set_devices(two_cards());
  int tries = 0;
  state.set_pod_check([&](const Assignment&) {
    ++tries;
    return DevicesAndPods::PodCheck{Error{"connection refused"}, false};
  });
  state.set_pods({one("a", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500})});
  const auto start = Clock::now();
  auto refused = state.allocate(1, start + 500ms);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("cannot confirm pod default/a with the API server: connection refused"), std::string::npos)
      << refused.message();
  EXPECT_GE(Clock::now() - start, 450ms);
  EXPECT_GE(tries, 2) << "retried until the deadline";
  EXPECT_LE(tries, 5) << "not in a busy loop";
}

// Found on the real tier (issue 40's test, kube-apiserver restarted with
// pods in flight): the agent refused `a`'s Allocate, unable to confirm it
// while the API server was down, so kubelet failed `a`. Its Failed status
// could not reach the API server either, so the watch still showed `a`
// waiting — and the next Allocate, `b`'s, was matched to `a`: `b` ran on
// `a`'s card, and each pod after it on the one before's. A pod the agent
// refused is kubelet's failure: it is never a candidate again.
TEST(DevicesAndPods, APodWhoseAllocateWasRefusedIsNeverMatchedAgain) {
  for (const bool over_capacity : {false, true}) {
    DevicesAndPods state;
    state.set_devices(two_cards());
    bool api_down = !over_capacity;
    state.set_pod_check([&](const Assignment&) {
      if (api_down) return DevicesAndPods::PodCheck{Error{"connection refused"}, false};
      return DevicesAndPods::PodCheck{Status::Ok(), true};
    });
    WaitingPod a = one("a", "2026-01-01T00:00:00Z", CardShare{0, "GPU-0", 8192, 500});
    WaitingPod b = one("b", "2026-01-01T00:00:01Z", CardShare{1, "GPU-1", 8192, 500});
    a.arrival = 1;
    b.arrival = 2;
    std::map<std::string, LivePod> live;
    if (over_capacity) {  // another pod holds all of card 0: a's Allocate is refused by the account
      live["uid-full"] = LivePod{"default/full", std::vector<scheduling::CardCharge>{{0, 16384, 1000, 1}}};
    }
    state.set_pods({a, b}, live);
    auto refused = state.allocate(1, Clock::now() + 300ms);
    ASSERT_FALSE(refused.ok()) << (over_capacity ? "over capacity" : "API server down");
    api_down = false;  // back; a's Failed status has not reached the watch
    auto served = state.allocate(1, Clock::now() + 1s);
    ASSERT_TRUE(served.ok()) << served.message();
    EXPECT_EQ(served->pod_key, "default/b") << (over_capacity ? "over capacity" : "API server down");
    ASSERT_EQ(served->cards.size(), 1u);
    EXPECT_EQ(served->cards[0].index, 1);
    // The watch brings the pods again (another pod's event): still passed over.
    state.set_pods({a, b}, live);
    EXPECT_FALSE(state.peek(1, Clock::now() + 10ms).ok()) << "b is served; a must not be its successor";
  }
}

}  // namespace
}  // namespace fracpack::node::devices_and_pods_test
