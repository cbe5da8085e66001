#include "k8s/snapshot.h"

#include "k8s/contract/fracpack.h"
#include "scheduling/policy.h"

#include <gtest/gtest.h>


namespace fracpack::k8s::snapshot_test {
namespace {

const FracpackContract kContract;

SnapshotState read(std::string text, const std::string& scheduler = "") {
  auto list = parse_snapshot(std::move(text), kContract);
  EXPECT_TRUE(list.ok()) << list.message();
  return list ? read_snapshot(*list, kContract, scheduler) : SnapshotState{};
}

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

// A snapshot goes through the watch's own pod-to-ledger path: a malformed
// node is kept without cards, cordoned; a bound GPU pod without a record is
// charged the cards its request would take (fail closed, as the server does).
TEST(Snapshot, ReadsBoundPendingAndProblems) {
  const SnapshotState st = read(kSnapshot, "fracpack");
  ASSERT_EQ(st.nodes.size(), 3u);
  EXPECT_EQ(st.nodes[0].name, "a-node");  // sorted by name
  EXPECT_EQ(st.nodes[2].name, "broken");
  EXPECT_TRUE(st.nodes[2].cards.empty());
  EXPECT_EQ(st.terminal_pods, 1u);
  ASSERT_EQ(st.bound.size(), 2u);
  ASSERT_EQ(st.pending.size(), 2u);
  EXPECT_EQ(st.pending[0].name, "first");  // creation order
  EXPECT_EQ(st.pending[1].name, "second");
  std::vector<std::string> problems;
  for (const auto& p : st.problems) problems.push_back(p.message);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  EXPECT_NE(problems[0].find("node broken: label nvidia.com/gpu.count"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("pod d/legacy: no valid allocation record: cards inferred"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("pod d/bad: container m: resources.limits[fracpack.io/gpu-cores]"),
            std::string::npos)
      << problems[2];

  scheduling::Ledger ledger;
  load_ledger(st, ledger);
  EXPECT_EQ(ledger.node("b-node")->use()[1].cores, 600);
  EXPECT_EQ(ledger.node("a-node")->cpu_requested(), 2000);  // the legacy pod's CPU counts...
  EXPECT_EQ(ledger.node("a-node")->use()[0].cores, 1000);   // ...and, inferred, its card
  EXPECT_TRUE(ledger.check_invariants().ok());
}

// `replay snapshot` honours the snapshot's ResourceQuotas, so a quota can
// be tried offline before it is applied: namespace d holds 2 cards (one by
// its record, one inferred), so under a 2-card quota neither pending pod is
// placed, each refused naming the quota; under 3 cards, one is.
TEST(Snapshot, AReplayHonoursTheSnapshotsQuotas) {
  auto run = [](const std::string& hard) {
    std::string text = kSnapshot;
    const std::string quota = R"({"kind":"ResourceQuota","metadata":{"name":"gpu","namespace":"d"},"spec":{"hard":{"limits.fracpack.io/gpu":")" +
                              hard + R"("}}},)";
    text.insert(text.find("[") + 1, quota);
    const SnapshotState st = read(text, "fracpack");
    EXPECT_EQ(st.quotas.size(), 1u);
    auto policy = scheduling::make_policy("fracpack", {});
    replay::SequenceOptions o;
    o.record_placements = true;
    return replay_snapshot(st, **policy, scheduling::Workload::typical(st.shapes), o);
  };
  auto tight = run("2");
  ASSERT_EQ(tight.placements.size(), 2u);
  EXPECT_EQ(tight.failed, 2u);
  EXPECT_EQ(tight.placements[0].reason, "exceeds ResourceQuota d/gpu limits.fracpack.io/gpu: used 2 cards, asked 1 card, hard 2 cards");
  auto roomier = run("3");
  EXPECT_EQ(roomier.failed, 1u);
  EXPECT_NE(roomier.placements[0].node, "");
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
  const SnapshotState st = read(list_json({node_json(n), pod_json(p)}));
  ASSERT_EQ(st.nodes.size(), 1u);
  ASSERT_EQ(st.pending.size(), 1u);
  EXPECT_EQ(st.pending[0].allowed_models, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(st.pending[0].containers[0].memory_mib, 4096);
  EXPECT_TRUE(st.problems.empty());
}

}  // namespace
}  // namespace fracpack::k8s::snapshot_test
