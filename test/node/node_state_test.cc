// node/node_state: the matcher behind a lock, waiting for the pod watch.
#include "node/node_state.h"

#include <gtest/gtest.h>

#include <thread>

#include "test/support/waiting_pods.h"

namespace fracpack::node {
namespace {

using namespace std::chrono_literals;
using scheduling::CardShare;
using Clock = std::chrono::steady_clock;

WaitingPod two_containers() {
  return test::waiting_pod("p", "2026-01-01T00:00:00Z",
                           {{GpuContainer{"first", false, 1}, {CardShare{0, "GPU-0", 1024, 100}}},
                            {GpuContainer{"second", false, 1}, {CardShare{1, "GPU-1", 1024, 100}}}});
}

// The pod watch delivering `pods` a moment later (a bind kubelet saw first).
std::jthread list_later(NodeState& state, std::vector<WaitingPod> pods) {
  return std::jthread([&state, pods = std::move(pods)]() mutable {
    std::this_thread::sleep_for(50ms);
    state.set_pods(std::move(pods));
  });
}

TEST(NodeState, ARestoredAdmissionSurvivesAnAllocateBeforeThePodsAreListed) {
  // The agent restarted while kubelet was between a pod's two containers:
  // the next Allocate comes before the first pod list. It waits, and
  // while it waits nothing forgets which pod kubelet is in.
  NodeState state;
  const WaitingPod p = two_containers();
  state.restore({{p.uid, 1}}, p.uid);
  std::jthread watch = list_later(state, {p});
  auto a = state.allocate(1, Clock::now() + 5s);
  watch.join();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->container, "second");
}

TEST(NodeState, AnAllocateWaitsForItsPodAndPersistsOnlyChanges) {
  NodeState state;
  int writes = 0;
  std::map<std::string, int> last;
  state.set_persist([&](const std::map<std::string, int>& served, const std::string&) {
    ++writes;
    last = served;
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
  // Refusals with nothing served and no pod begun change nothing to keep.
  state.set_pods({});
  EXPECT_FALSE(state.allocate(1, Clock::now() + 10ms).ok());
  EXPECT_EQ(writes, 3);  // the pod is gone: its count is dropped
  EXPECT_FALSE(state.allocate(1, Clock::now() + 10ms).ok());
  EXPECT_EQ(writes, 3);
}

TEST(NodeState, PreferredAllocationWaitsForThePodWatchToo) {
  NodeState state;
  std::jthread watch = list_later(state, {two_containers()});
  auto a = state.peek(1, Clock::now() + 5s);
  watch.join();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->container, "first");
}

}  // namespace
}  // namespace fracpack::node
