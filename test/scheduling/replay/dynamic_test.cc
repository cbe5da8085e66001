// The replay with departures (scheduling/replay/dynamic.h): the window and
// compression, waiting and first-come-first-served retries, the measures.
#include "scheduling/replay/dynamic.h"

#include <gtest/gtest.h>

#include <cmath>

#include "scheduling/go_rand.h"
#include "test/support/testlib.h"

namespace fracpack::replay::dynamic_test {
namespace {

OpenbPod timed(const std::string& name, int num_gpu, int milli, int64_t created, int64_t deleted, int64_t cpu = 1000) {
  OpenbPod p;
  p.name = name;
  p.cpu_milli = cpu;
  p.memory_mib = 1024;
  p.num_gpu = num_gpu;
  p.gpu_milli = num_gpu > 0 ? milli : 0;
  p.creation_time = created;
  p.deletion_time = deleted;
  return p;
}

// A prepared experiment without tuning or shuffling: the pods in the given
// order on `gpus` one-card nodes.
ExperimentSetup setup_of(std::vector<OpenbPod> pods, int gpus) {
  ExperimentSetup s;
  for (int i = 0; i < gpus; ++i) {
    s.nodes.push_back(OpenbNode{"n" + std::to_string(i), 64000, 262144, 1, "T4"});
    s.node_names.push_back("n" + std::to_string(i));
  }
  s.total_gpus = gpus;
  auto shapes = std::make_shared<scheduling::ShapeCounts>();
  for (const OpenbPod& p : pods) shapes->add(scheduling::shape_of(to_pod_request(p)));
  s.typical = std::make_shared<scheduling::Workload>(scheduling::Workload::typical(*shapes));
  s.shapes = std::move(shapes);
  s.arrivals = std::move(pods);
  return s;
}

TEST(DynamicReplay, TheWindowIsWhereTheTraceIsCompleteAndLongPodsStand) {
  // First deletion at 100, last creation at 1100: the window is 1000 s.
  // "early" (created at 0) is running at its start with 500 s left; "gone"
  // ends as it starts; "last" runs to the trace's end (5000): it never
  // leaves, so it stands from the start.
  auto s = setup_of({timed("early", 1, 500, 0, 600), timed("a", 1, 500, 100, 150), timed("b", 1, 1000, 600, 700),
                     timed("last", 1, 1000, 1100, 5000), timed("gone", 1, 500, 50, 100)},
                    4);
  auto plan = plan_dynamic(s, std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_DOUBLE_EQ(plan->compression, 1);
  EXPECT_DOUBLE_EQ(plan->window_seconds, 1000);
  ASSERT_EQ(plan->pods.size(), 5u);
  EXPECT_EQ(plan->standing, 3u);
  // By arrival, then the experiment's order: early, a, last, gone at 0; b at 500.
  std::vector<size_t> order;
  for (const auto& p : plan->pods) order.push_back(p.index);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 3, 4, 2}));
  EXPECT_DOUBLE_EQ(plan->pods[0].departure, 500);  // early: 600 - 100 left
  EXPECT_DOUBLE_EQ(plan->pods[1].departure, 50);
  EXPECT_TRUE(std::isinf(plan->pods[2].departure)) << "running when the trace ended: never leaves";
  EXPECT_DOUBLE_EQ(plan->pods[4].arrival, 500);
  // Offered load: early 500 x 500 s, a 500 x 50, b 1000 x 100, last 1000 x 1000, gone 0.
  EXPECT_NEAR(plan->offered_load, (500.0 * 500 + 500.0 * 50 + 1000.0 * 100 + 1000.0 * 1000) / (4000.0 * 1000), 1e-12);
  EXPECT_DOUBLE_EQ(plan->max_load, (500.0 + 500 + 1000 + 1000 + 500) / 4000);

  // A target load picks the compression; past every pod standing it is refused.
  auto loaded = plan_dynamic(s, 0.5);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_NEAR(loaded->offered_load, 0.5, 1e-6);
  EXPECT_GT(loaded->compression, 1);
  auto too_much = plan_dynamic(s, 0.9);
  ASSERT_FALSE(too_much.ok());
  EXPECT_NE(too_much.message().find("at most 0.875"), std::string::npos) << too_much.message();
  EXPECT_NE(too_much.message().find("--tune"), std::string::npos);
}

TEST(DynamicReplay, PodsWithoutTimesAndEmptyWindowsAreRefusedWithTheReason) {
  auto untimed = setup_of({timed("a", 1, 500, 0, 10)}, 1);
  untimed.arrivals[0].creation_time = -1;
  auto r = plan_dynamic(untimed, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("pod a has no creation_time"), std::string::npos) << r.message();
  auto empty = setup_of({timed("a", 1, 500, 0, 10), timed("b", 1, 500, 5, 20)}, 1);  // last creation 5, first deletion 10
  r = plan_dynamic(empty, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no window"), std::string::npos) << r.message();
}

TEST(DynamicReplay, APodThatDoesNotFitWaitsAndIsPlacedFirstComeFirstServed) {
  // One card; the window is [5, 500] ("gone" is deleted at 5, "end" created
  // at 500). "hold" holds the card until 105; "first" and "second" arrive at
  // 15 and 25 (listed the other way round) and each need it whole; "never"
  // needs two cards. "tick" (CPU only) runs past the window: it stands.
  auto s = setup_of({timed("hold", 1, 1000, 0, 110), timed("second", 1, 1000, 30, 60), timed("first", 1, 1000, 20, 80),
                     timed("never", 2, 1000, 40, 45), timed("tick", 0, 0, 10, 1000), timed("gone", 0, 0, 0, 5),
                     timed("end", 0, 0, 500, 2000)},
                    1);
  auto plan = plan_dynamic(s, std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_DOUBLE_EQ(plan->window_seconds, 495);
  auto r = run_dynamic(s, *plan, "bestfit", 1);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->arrivals, 7u);
  EXPECT_EQ(r->never_placed, 1u) << "two cards on a one-card cluster";
  EXPECT_EQ(r->waited, 2u);
  // first (arrived at 15) gets the card when hold leaves at 105: 90 s; it
  // runs 60 s, then second (arrived at 25) gets it at 165: 140 s.
  EXPECT_DOUBLE_EQ(r->pending_seconds_p99, 140);
  EXPECT_DOUBLE_EQ(r->pending_seconds_mean, (90.0 + 140) / 6);
  EXPECT_DOUBLE_EQ(r->pending_seconds_p50, 0);
  // The card is busy [0, 195] of the 495 s window.
  EXPECT_NEAR(r->unallocated_gpu_time_percent, 100.0 * (1 - 195.0 / 495), 1e-9);
  ASSERT_EQ(r->samples.size(), 200u);
  EXPECT_DOUBLE_EQ(r->samples.front().allocated_percent, 100);
  EXPECT_DOUBLE_EQ(r->samples.back().allocated_percent, 0);
  EXPECT_DOUBLE_EQ(r->samples[8].waiting_percent, 100) << "at ~20 s, first waits";

  auto again = run_dynamic(s, *plan, "bestfit", 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pending_seconds_mean, r->pending_seconds_mean) << "deterministic";
}

// The openb default trace at load 1.0: the load is met, every pod is placed
// or counted, and fracpack leaves no more GPU-time idle than FGD.
TEST(DynamicReplay, TheDefaultTraceAtFullLoad) {
  auto nodes = testing::read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods = testing::read_shared("traces/openb/openb_pod_list_default.csv");
  ASSERT_TRUE(nodes && pods) << "openb trace not found under " << testing::shared_dir();
  ExperimentOptions o;
  o.seed = 42;
  ExperimentSetup s = prepare_experiment(*parse_openb_nodes(*nodes), *parse_openb_pods(*pods), o);
  auto plan = plan_dynamic(s, 1.0);
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_NEAR(plan->offered_load, 1.0, 2e-3) << "pods turn standing one at a time: the load moves in small steps";
  auto fgd = run_dynamic(s, *plan, "fgd", 42);
  auto ours = run_dynamic(s, *plan, "fracpack", 42);
  ASSERT_TRUE(fgd.ok() && ours.ok());
  EXPECT_EQ(ours->placed + ours->never_placed, s.arrivals.size());
  EXPECT_GT(ours->waited, 0u) << "at full load some pods wait";
  EXPECT_LE(ours->unallocated_gpu_time_percent, fgd->unallocated_gpu_time_percent);
}

}  // namespace
}  // namespace fracpack::replay::dynamic_test
