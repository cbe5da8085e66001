#include "k8s/snapshot.h"

#include <gtest/gtest.h>

#include "scheduling/go_rand.h"
#include "scheduling/replay/sequence.h"
#include "test/testlib.h"

namespace fracpack::k8s {
namespace {

const ContractNames kNames;

constexpr const char* kSnapshot = R"({"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"b-node","labels":{"nvidia.com/gpu.count":"2","nvidia.com/gpu.memory":"16384","nvidia.com/gpu.product":"T4"}},
  "status":{"allocatable":{"cpu":"32","memory":"128Gi"}}},
 {"kind":"Node","metadata":{"name":"a-node","labels":{"nvidia.com/gpu.count":"1","nvidia.com/gpu.memory":"16384"}},
  "status":{"allocatable":{"cpu":"32","memory":"128Gi"}}},
 {"kind":"Node","metadata":{"name":"broken","labels":{"nvidia.com/gpu.count":"x"}}},
 {"kind":"Pod","metadata":{"name":"running","namespace":"d","uid":"u-run",
   "annotations":{"fracpack.io/allocation":"{\"node\":\"b-node\",\"containers\":[{\"name\":\"m\",\"cards\":[{\"index\":1,\"uuid\":\"\",\"memoryMiB\":0,\"cores\":60}]}]}"}},
  "spec":{"nodeName":"b-node","containers":[{"name":"m","resources":{"limits":{"fracpack.io/gpu-cores":"60","cpu":"1"}}}]},
  "status":{"phase":"Running"}},
 {"kind":"Pod","metadata":{"name":"legacy","namespace":"d","uid":"u-leg"},
  "spec":{"nodeName":"a-node","containers":[{"name":"m","resources":{"limits":{"fracpack.io/gpu":"1","cpu":"2"}}}]},
  "status":{"phase":"Running"}},
 {"kind":"Pod","metadata":{"name":"done","namespace":"d","uid":"u-done"},"spec":{"nodeName":"a-node","containers":[]},"status":{"phase":"Succeeded"}},
 {"kind":"Pod","metadata":{"name":"second","namespace":"d","uid":"u2","creationTimestamp":"2024-01-01T00:00:02Z"},
  "spec":{"schedulerName":"fracpack","containers":[{"name":"m","resources":{"limits":{"fracpack.io/gpu-cores":"50"}}}]},"status":{"phase":"Pending"}},
 {"kind":"Pod","metadata":{"name":"first","namespace":"d","uid":"u1","creationTimestamp":"2024-01-01T00:00:01Z"},
  "spec":{"schedulerName":"fracpack","containers":[{"name":"m","resources":{"limits":{"fracpack.io/gpu":"1"}}}]},"status":{"phase":"Pending"}},
 {"kind":"Pod","metadata":{"name":"other-sched","namespace":"d","uid":"u3","creationTimestamp":"2024-01-01T00:00:00Z"},
  "spec":{"schedulerName":"default-scheduler","containers":[]},"status":{"phase":"Pending"}},
 {"kind":"Pod","metadata":{"name":"bad","namespace":"d","uid":"u4"},
  "spec":{"containers":[{"name":"m","resources":{"limits":{"fracpack.io/gpu-cores":"300"}}}]},"status":{"phase":"Pending"}}
],"metadata":{"resourceVersion":""}})";

TEST(Snapshot, ReadsBoundPendingAndProblems) {
  auto st = read_snapshot(kSnapshot, kNames, "fracpack");
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(st->nodes.size(), 2u);
  EXPECT_EQ(st->nodes[0].name, "a-node");  // sorted by name
  EXPECT_EQ(st->terminal_pods, 1u);
  ASSERT_EQ(st->bound.size(), 2u);
  ASSERT_EQ(st->pending.size(), 2u);
  EXPECT_EQ(st->pending[0].name, "first");  // creation order
  EXPECT_EQ(st->pending[1].name, "second");
  std::vector<std::string> problems;
  for (const auto& p : st->problems) problems.push_back(p.message);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("node broken: label nvidia.com/gpu.count"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("pod d/legacy: bound to a-node without annotation fracpack.io/allocation"), std::string::npos)
      << problems[1];
  EXPECT_NE(problems[2].find("pod d/bad: container m: resources.limits[fracpack.io/gpu-cores]"),
            std::string::npos)
      << problems[2];

  scheduling::Ledger ledger;
  load_ledger(*st, ledger);
  EXPECT_EQ(ledger.node("b-node")->use()[1].cores, 600);
  EXPECT_EQ(ledger.node("a-node")->cpu_requested(), 2000);  // the legacy pod's CPU still counts
  EXPECT_TRUE(ledger.check_invariants().ok());
}

TEST(Snapshot, WritersRoundTripThroughTheReader) {
  Pod p;
  p.meta.name = "x";
  p.meta.namespace_name = "ns";
  p.meta.uid = "u";
  p.meta.creation_timestamp = "2024-01-01T00:00:00Z";
  p.meta.annotations = {{"fracpack.io/gpu-model", "A|B"}};
  p.scheduler_name = "fracpack";
  p.phase = "Pending";
  Container c;
  c.name = "m";
  c.limits = {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-memory", "4096"}};
  p.containers.push_back(c);
  Node n;
  n.meta.name = "n";
  n.meta.labels = {{"nvidia.com/gpu.count", "1"}, {"nvidia.com/gpu.memory", "8192"}};
  n.allocatable = {{"cpu", "4"}, {"memory", "8Gi"}};
  auto st = read_snapshot(list_json({node_json(n), pod_json(p)}), kNames);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(st->nodes.size(), 1u);
  ASSERT_EQ(st->pending.size(), 1u);
  EXPECT_EQ(st->pending[0].allowed_models, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(st->pending[0].containers[0].memory_mib, 4096);
  EXPECT_TRUE(st->problems.empty());
}

TEST(Snapshot, WorkloadConfigMap) {
  scheduling::ShapeCounts w;
  w.add(scheduling::PodShape{3152, 810, 1, 0, 0, ""}, 1047);
  w.add(scheduling::PodShape{12000, 1000, 2, 0, 25, "V100M16|V100M32"}, 3);
  auto back = parse_workload(format_workload(w));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->counts(), w.counts());
  EXPECT_EQ(back->total(), 1050);
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"shapes":[{"cpuMilli":1,"cards":1,"count":0}]})", "count must be positive"},
           {R"({"shapes":[{"cards":1,"count":1}]})", "cpuMilli is required"},
           {R"({"shapes":[{"cpuMilli":1,"cards":1,"cores":150,"count":1}]})", "cores is out of range"},
           {R"({"shapes":[]})", "no shapes"},
           {"nope", "invalid JSON"}}) {
    auto r = parse_workload(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find(why), std::string::npos) << r.message();
  }
}

TEST(Snapshot, Rfc3339) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T10:00:00Z"), 1714557600.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00+02:00"), 1714557600.0);
  EXPECT_EQ(parse_rfc3339("2024-05-01T10:00:00.5Z"), 1714557600.5);
  EXPECT_FALSE(parse_rfc3339("2024-05-01 10:00:00"));
  EXPECT_FALSE(parse_rfc3339("2024-13-01T10:00:00Z"));
  EXPECT_EQ(format_rfc3339(1714557600), "2024-05-01T10:00:00Z");
  EXPECT_EQ(format_rfc3339(951782400), "2000-02-29T00:00:00Z");
}

// fracpack convert + replay snapshot gives the same placements as replay
// openb for the same seed: both paths run the same core.
TEST(Snapshot, ConvertedOpenbReplaysIdentically) {
  auto nodes = testing::read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods = testing::read_shared("traces/openb/openb_pod_list_default.csv");
  auto go = testing::read_file(kDefaultGoRngSource);
  ASSERT_TRUE(nodes && pods) << "openb trace not found under " << testing::shared_dir();
  ASSERT_TRUE(go) << "apt-get install golang-1.19-src";
  replay::ExperimentOptions eo;
  eo.seed = 42;
  eo.go_cooked = std::make_shared<std::vector<int64_t>>(*parse_go_rng_cooked(*go));
  const auto setup = replay::prepare_experiment(*replay::parse_openb_nodes(*nodes), *replay::parse_openb_pods(*pods), eo);
  auto json = openb_snapshot_json(setup, kNames, 42);
  ASSERT_TRUE(json.ok()) << json.message();
  auto st = read_snapshot(*json, kNames);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(st->problems.empty());
  ASSERT_TRUE(st->workload.has_value());
  ASSERT_EQ(st->pending.size(), setup.arrivals.size());

  for (const std::string policy : {"fgd", "fracpack"}) {
    replay::RunOptions ro;
    ro.record_placements = true;
    auto direct = replay::run_experiment(setup, policy, 42, ro);
    ASSERT_TRUE(direct.ok());

    scheduling::Ledger ledger;
    load_ledger(*st, ledger);
    std::vector<std::string> order;
    for (const auto& n : st->nodes) order.push_back(n.name);
    scheduling::PolicyOptions po;
    po.workload = std::make_shared<scheduling::ShapeCounts>(*st->workload);
    auto pol = scheduling::make_policy(policy, po);
    ASSERT_TRUE(pol.ok());
    replay::SequenceOptions so;
    so.record_placements = true;
    auto via_snapshot =
        replay::place_in_order(ledger, order, **pol, st->pending, scheduling::Workload::typical(*st->workload), so);

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
}  // namespace fracpack::k8s
