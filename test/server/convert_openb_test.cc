#include "server/cmd/convert_openb.h"

#include <gtest/gtest.h>

#include "k8s/contract/profiles.h"
#include "k8s/snapshot.h"
#include "scheduling/go_rand.h"
#include "scheduling/replay/openb.h"
#include "scheduling/replay/sequence.h"
#include "test/support/testlib.h"

namespace fracpack::convert_openb_test {
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
  auto snapshot = cli::openb_snapshot(setup, k8s::ContractConfig{}, 42);
  ASSERT_TRUE(snapshot.ok()) << snapshot.message();
  EXPECT_EQ(snapshot->left_out, 0u);
  const k8s::FracpackContract contract;
  auto list = k8s::parse_snapshot(snapshot->json, contract);
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

// The peers' formats: every node and pod reads back through the profile's
// contract without a problem; gpushare leaves out exactly the pods of
// several cards (one card per pod), HAMi none; the split count reaches the
// register; an unknown profile is refused by name.
TEST(ConvertOpenb, EachProfilesSnapshotReadsBackThroughItsContract) {
  auto nodes = testing::read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods = testing::read_shared("traces/openb/openb_pod_list_multigpu20.csv");
  ASSERT_TRUE(nodes && pods) << "openb trace not found under " << testing::shared_dir();
  replay::ExperimentOptions eo;
  eo.seed = 7;
  const auto setup = replay::prepare_experiment(*replay::parse_openb_nodes(*nodes), *replay::parse_openb_pods(*pods), eo);
  size_t several_cards = 0;
  for (const auto& a : setup.arrivals) several_cards += a.num_gpu > 1 && a.gpu_milli > 0 ? 1 : 0;
  ASSERT_GT(several_cards, 0u);

  for (const std::string profile : {"hami", "gpushare"}) {
    k8s::ContractConfig cc;
    cc.profile = *k8s::parse_profile(profile);
    cli::OpenbConversion conversion;
    conversion.hami_split_count = 4;
    auto snapshot = cli::openb_snapshot(setup, cc, 7, conversion);
    ASSERT_TRUE(snapshot.ok()) << snapshot.message();
    EXPECT_EQ(snapshot->left_out, profile == "gpushare" ? several_cards : 0u) << profile;
    auto contract = k8s::make_contract(cc);
    ASSERT_TRUE(contract.ok());
    auto list = k8s::parse_snapshot(snapshot->json, **contract);
    ASSERT_TRUE(list.ok()) << list.message();
    const k8s::SnapshotState state = k8s::read_snapshot(*list, **contract);
    EXPECT_TRUE(state.problems.empty()) << profile << ": " << state.problems.front().message;
    EXPECT_EQ(state.pending.size() + snapshot->left_out, setup.arrivals.size()) << profile;
    ASSERT_EQ(state.nodes.size(), setup.nodes.size());
    size_t cards = 0;
    for (const auto& n : state.nodes) {
      cards += n.cards.size();
      for (const auto& c : n.cards) {
        EXPECT_EQ(c.max_sharers, profile == "hami" ? 4 : 0) << n.name;
        EXPECT_TRUE(c.healthy) << n.name;
      }
    }
    EXPECT_EQ(static_cast<int64_t>(cards), setup.total_gpus) << profile;
    ASSERT_TRUE(state.workload.has_value());
    EXPECT_GT(state.workload->total(), 0) << profile;
  }

  k8s::ContractConfig unknown;
  unknown.profile = k8s::Profile::kTke;  // no OpenB writer
  auto refused = cli::openb_snapshot(setup, unknown, 7);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("tke"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace fracpack::convert_openb_test
