// The whole path, as in a cluster: the openb default trace converted to a
// snapshot is loaded into the test API server; fracpack serve syncs from
// it; the test scheduler driver schedules every pending pod in creation
// order through filter -> prioritize -> bind over HTTP; the binds go to the
// API server as Bindings with the allocation annotations. The outcome must
// be exactly what `fracpack replay snapshot` computes for the same policy
// and order, and the ledger must equal the annotations.
#include <chrono>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/snapshot.h"
#include "server/cmd/convert_openb.h"
#include "scheduling/go_rand.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/replay/openb.h"
#include "scheduling/replay/sequence.h"
#include "test/support/server_fixture.h"
#include "test/support/testlib.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;

TEST(EndToEnd, OpenbThroughHttpEqualsTheReplayAndTheAnnotationsEqualTheLedger) {
  auto nodes_csv = read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods_csv = read_shared("traces/openb/openb_pod_list_default.csv");
  ASSERT_TRUE(nodes_csv && pods_csv) << "openb trace not found under " << shared_dir();
  replay::ExperimentOptions eo;
  eo.seed = 42;
  if (auto go = read_file(kDefaultGoRngSource)) {
    eo.go_cooked = std::make_shared<std::vector<int64_t>>(*parse_go_rng_cooked(*go));
  }
  const auto setup = replay::prepare_experiment(*replay::parse_openb_nodes(*nodes_csv), *replay::parse_openb_pods(*pods_csv), eo);
  const k8s::ContractNames names;
  auto snapshot = cli::openb_snapshot_json(setup, names, 42);
  ASSERT_TRUE(snapshot) << snapshot.message();

  // The replay: what `fracpack replay snapshot --policy fracpack` computes.
  const k8s::FracpackContract contract(names);
  auto list = k8s::parse_snapshot(*snapshot, contract);
  ASSERT_TRUE(list) << list.message();
  const k8s::SnapshotState state = k8s::read_snapshot(*list, contract);
  const k8s::SnapshotState* st = &state;
  ASSERT_TRUE(st->workload);
  scheduling::PolicyOptions po;
  po.workload = std::make_shared<scheduling::ShapeCounts>(*st->workload);
  auto policy = scheduling::make_policy("fracpack", po);
  ASSERT_TRUE(policy);
  replay::SequenceOptions so;
  so.fit.check_node_resources = true;
  so.record_placements = true;
  const auto expected = k8s::replay_snapshot(*st, **policy, scheduling::Workload::typical(*st->workload), so);
  std::vector<std::string> order;
  for (const auto& n : st->nodes) order.push_back(n.name);

  // The cluster: the same objects in the API server.
  config::Config c = test_config();
  c.workload.config_map = "fracpack-system/fracpack-target-workload";
  c.cluster.reconcile_interval = std::chrono::seconds(30);
  Connected cluster(c);
  std::map<std::string, std::string> pod_json;  // "ns/name" -> the API server's copy
  std::map<std::string, std::string> node_json;
  const json doc = json::parse(*snapshot);
  for (const auto& item : doc["items"]) {
    const std::string kind = item["kind"];
    if (kind == "Node") node_json[item["metadata"]["name"]] = cluster.api->create("nodes", item.dump());
    if (kind == "ConfigMap") cluster.api->create("configmaps", item.dump());
    if (kind == "Pod") {
      const std::string stored = cluster.api->create("pods", item.dump());
      const json p = json::parse(stored);
      pod_json[p["metadata"]["namespace"].get<std::string>() + "/" + p["metadata"]["name"].get<std::string>()] = stored;
    }
  }
  cluster.start();
  // kube-scheduler's own CPU and memory filter runs first; the extender
  // sees the survivors in the scheduler's node order.
  ResourceFitFilter in_tree;
  for (const auto& n : order) ASSERT_TRUE(in_tree.add_node(node_json.at(n)).ok());

  const auto t0 = std::chrono::steady_clock::now();
  size_t same = 0, failed = 0, prioritized = 0;
  std::vector<std::string> differences;
  ASSERT_EQ(expected.placements.size(), st->pending.size());
  for (size_t i = 0; i < st->pending.size(); ++i) {
    const auto& want = expected.placements[i];
    const std::string& pod = pod_json.at(want.pod);
    const std::vector<CandidateNode> candidates = in_tree.feasible(pod);
    CycleResult cycle = cluster.driver().schedule(pod, candidates);
    ASSERT_TRUE(cycle.error.empty()) << want.pod << ": " << cycle.error;
    prioritized += cycle.prioritized ? 1 : 0;
    if (!cycle.node.empty()) {
      const json p = json::parse(pod);
      Status bound = cluster.driver().bind(p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"], cycle.node);
      ASSERT_TRUE(bound.ok()) << want.pod << ": " << bound.message();
      in_tree.assume(pod, cycle.node);
    } else {
      ++failed;
    }
    if (cycle.node == want.node) {
      ++same;
    } else if (differences.size() < 5) {
      std::string detail;
      if (differences.empty()) {
        auto direct = cluster.driver().prioritize(0, pod, candidates);
        detail = " (prioritized " + std::to_string(cycle.prioritized) + ", feasible " + std::to_string(cycle.filter.nodes.size()) +
                 ", scores " + std::to_string(cycle.scores[want.node]) + " vs " + std::to_string(cycle.scores[cycle.node]) +
                 (direct ? "" : ", prioritize: " + direct.message()) + ")";
      }
      differences.push_back(want.pod + ": replay " + (want.node.empty() ? "(failed)" : want.node) + ", HTTP " +
                            (cycle.node.empty() ? "(failed)" : cycle.node) + detail);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string diffs;
  for (const auto& d : differences) diffs += "\n  " + d;
  EXPECT_EQ(same, expected.placements.size()) << diffs;
  EXPECT_EQ(failed, expected.failed);
  std::printf("[ figures  ] %zu pods through filter/prioritize/bind in %.1f s (%.0f pods/s), %zu prioritized, %zu unplaceable\n",
              st->pending.size(), seconds, static_cast<double>(st->pending.size()) / seconds, prioritized, failed);

  // The annotations the API server holds equal the replay's cards, and the ledger.
  EXPECT_EQ(Cluster::wait_for([&] { return compare_ledger(*cluster.api, cluster.daemon().state()).empty(); }), true)
      << compare_ledger(*cluster.api, cluster.daemon().state());
  size_t cards_equal = 0, bound = 0;
  for (const auto& want : expected.placements) {
    if (want.node.empty()) continue;
    ++bound;
    const size_t slash = want.pod.find('/');
    auto stored = cluster.api->get("pods", want.pod.substr(0, slash), want.pod.substr(slash + 1));
    ASSERT_TRUE(stored);
    const json p = json::parse(*stored);
    ASSERT_EQ(p["spec"].value("nodeName", ""), want.node) << want.pod;
    const json annotations = p["metadata"].value("annotations", json::object());
    if (want.cards.empty()) {  // no cards (CPU only): no allocation record
      EXPECT_FALSE(annotations.contains(names.allocation)) << want.pod;
      ++cards_equal;
      continue;
    }
    ASSERT_TRUE(annotations.contains(names.allocation)) << want.pod;
    auto a = k8s::parse_allocation(annotations[names.allocation].get<std::string>());
    ASSERT_TRUE(a) << a.message();
    std::vector<int> cards;
    for (const auto& ctr : a->containers) {
      for (const auto& share : ctr.cards) cards.push_back(share.index);
    }
    if (cards == want.cards) ++cards_equal;
  }
  EXPECT_EQ(cards_equal, bound);
}

}  // namespace
}  // namespace fracpack::testing
