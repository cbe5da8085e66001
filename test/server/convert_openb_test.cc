#include "server/cmd/convert_openb.h"

#include <gtest/gtest.h>

#include "k8s/snapshot.h"
#include "scheduling/go_rand.h"
#include "scheduling/replay/openb.h"
#include "scheduling/replay/sequence.h"
#include "test/support/testlib.h"

namespace fracpack {
namespace {

// fracpack convert + replay snapshot gives the same placements as replay
// openb for the same seed: both paths run the same core.
TEST(ConvertOpenb, TheSnapshotReplaysAsTheExperimentDoes) {
  auto nodes = testing::read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods = testing::read_shared("traces/openb/openb_pod_list_default.csv");
  auto go = testing::read_file(kDefaultGoRngSource);
  ASSERT_TRUE(nodes && pods) << "openb trace not found under " << testing::shared_dir();
  ASSERT_TRUE(go) << "apt-get install golang-1.19-src";
  replay::ExperimentOptions eo;
  eo.seed = 42;
  eo.go_cooked = std::make_shared<std::vector<int64_t>>(*parse_go_rng_cooked(*go));
  const auto setup = replay::prepare_experiment(*replay::parse_openb_nodes(*nodes), *replay::parse_openb_pods(*pods), eo);
  auto json = cli::openb_snapshot_json(setup, k8s::ContractNames{}, 42);
  ASSERT_TRUE(json.ok()) << json.message();
  const k8s::FracpackContract contract;
  auto list = k8s::parse_snapshot(*json, contract);
  ASSERT_TRUE(list.ok()) << list.message();
  const k8s::SnapshotState state = k8s::read_snapshot(*list, contract);
  const k8s::SnapshotState* st = &state;
  EXPECT_TRUE(st->problems.empty());
  ASSERT_TRUE(st->workload.has_value());
  ASSERT_EQ(st->pending.size(), setup.arrivals.size());

  for (const std::string policy : {"fgd", "fracpack"}) {
    replay::RunOptions ro;
    ro.record_placements = true;
    auto direct = replay::run_experiment(setup, policy, 42, ro);
    ASSERT_TRUE(direct.ok());

    scheduling::PolicyOptions po;
    po.workload = std::make_shared<scheduling::ShapeCounts>(*st->workload);
    auto pol = scheduling::make_policy(policy, po);
    ASSERT_TRUE(pol.ok());
    replay::SequenceOptions so;
    so.record_placements = true;
    auto via_snapshot = k8s::replay_snapshot(*st, **pol, scheduling::Workload::typical(*st->workload), so);

    ASSERT_EQ(via_snapshot.placements.size(), direct->placements.size());
    size_t same = 0;
    for (size_t i = 0; i < direct->placements.size(); ++i) {
      const auto& a = direct->placements[i];
      const auto& b = via_snapshot.placements[i];
      if (a.pod == b.pod && a.node == b.node && a.cards == b.cards) ++same;
    }
    EXPECT_EQ(same, direct->placements.size()) << policy;
    EXPECT_EQ(via_snapshot.failed, direct->failed) << policy;
    EXPECT_EQ(via_snapshot.curves.alloc, direct->curves.alloc) << policy;
  }
}

}  // namespace
}  // namespace fracpack
