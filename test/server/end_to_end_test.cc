// The whole path, as in a cluster, once per profile: the openb default
// trace converted to a snapshot in the profile's terms (fracpack convert
// openb --profile) is loaded into the test API server; fracpack serve syncs
// from it; the test scheduler driver schedules every pending pod in
// creation order through filter -> prioritize -> bind over HTTP; the binds
// go to the API server as Bindings with the profile's annotations. The
// outcome must be exactly what `fracpack replay snapshot --profile` computes
// for the same policy and order, the ledger must equal the annotations, and
// no card may be over-committed. For hami and gpushare, kubelet admits each
// pod right after its bind: the double of the peer's device plugin
// (test/support/peer_agents.h) must find that pod and get exactly the
// ledger's cards, and at the end the peer scheduler's own restart count
// must equal the ledger card by card.
#include <chrono>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "k8s/contract/profiles.h"
#include "k8s/snapshot.h"
#include "server/cmd/convert_openb.h"
#include "scheduling/go_rand.h"
#include "scheduling/replay/experiment.h"
#include "scheduling/replay/openb.h"
#include "scheduling/replay/sequence.h"
#include "test/support/peer_agents.h"
#include "test/support/server_fixture.h"
#include "test/support/soak_profile.h"
#include "test/support/testlib.h"

namespace fracpack::testing::end_to_end_test {
namespace {

using json = nlohmann::json;

// kubelet admitting a just-bound GPU pod on `node`: the peer's device plugin
// double must find this pod and get the cards the ledger holds for it.
void peer_allocate(const std::string& profile, Connected& cluster, const json& pod, const std::string& node) {
  const std::string key = pod["metadata"]["namespace"].get<std::string>() + "/" + pod["metadata"]["name"].get<std::string>();
  const auto chosen = ledger_uuids(cluster.daemon(), pod["metadata"]["uid"]);
  if (profile == "hami") {
    // fracpack has seen this bind's lock (the node watch is ordered): once
    // it then sees no lock, it has seen the release, not a stale view from
    // before the lock was taken.
    ASSERT_TRUE(Cluster::wait_for([&] {
      const auto held = cluster.daemon().state().held_by({node});
      return !held.empty() && held[0] == key;
    })) << node << " never shown locked by " << key;
    auto served = hami_allocate(*cluster.api, node, {static_cast<int>(first_container_limit(pod, "nvidia.com/gpu"))});
    ASSERT_TRUE(served.ok()) << key << ": " << served.message();
    EXPECT_EQ(served->pod, key);
    EXPECT_EQ(served->devices, chosen) << key;
    // The lock released, as fracpack sees it: the next cycle ranks this node as the replay does.
    ASSERT_TRUE(Cluster::wait_for([&] {
      const auto held = cluster.daemon().state().held_by({node});  // empty: no node held at all
      return held.empty() || held[0].empty();
    })) << node;
  } else if (profile == "gpushare") {
    auto served = gpushare_allocate(*cluster.api, node, first_container_limit(pod, "aliyun.com/gpu-mem"));
    ASSERT_TRUE(served.ok()) << key << ": " << served.message();
    EXPECT_EQ(served->pod, key);
    EXPECT_EQ(std::vector<std::vector<std::string>>{{std::to_string(served->index)}}, chosen) << key;
  }
}

// The peer scheduler's count after a restart, from the same annotations,
// equals the ledger card by card.
void expect_peer_count_equals_ledger(const std::string& profile, Connected& cluster) {
  if (profile == "hami") {
    EXPECT_EQ(ledger_as_hami_usage(cluster.daemon()), hami_scheduler_usage(*cluster.api));
  } else if (profile == "gpushare") {
    EXPECT_EQ(ledger_as_gpushare_usage(cluster.daemon()), gpushare_extender_usage(*cluster.api));
  }
}

class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, OpenbThroughHttpEqualsTheReplayAndTheAnnotationsEqualTheLedger) {
  const std::string profile = GetParam();
  auto nodes_csv = read_shared("traces/openb/openb_node_list_gpu_node.csv");
  auto pods_csv = read_shared("traces/openb/openb_pod_list_default.csv");
  ASSERT_TRUE(nodes_csv && pods_csv) << "openb trace not found under " << shared_dir();
  replay::ExperimentOptions eo;
  eo.seed = 42;
  if (auto go = read_file(kDefaultGoRngSource)) {
    eo.go_cooked = std::make_shared<std::vector<int64_t>>(*parse_go_rng_cooked(*go));
  }
  auto setup = replay::prepare_experiment(*replay::parse_openb_nodes(*nodes_csv), *replay::parse_openb_pods(*pods_csv), eo);
  // Under a sanitizer (FRACPACK_TEST_SCALE_DOWN=k): every k-th node and the
  // first 1/k of the arrivals, so the smaller cluster still fills past its
  // capacity (130 % of it arrives) and pods still fail to fit: the same
  // paths, k times fewer HTTP cycles.
  if (const int k = test_scale_down(); k > 1) {
    std::vector<replay::OpenbNode> kept;
    std::vector<std::string> kept_names;
    for (size_t i = 0; i < setup.nodes.size(); i += static_cast<size_t>(k)) {
      kept.push_back(setup.nodes[i]);
      kept_names.push_back(setup.node_names[i]);
    }
    setup.nodes = std::move(kept);
    setup.node_names = std::move(kept_names);
    setup.arrivals.resize(setup.arrivals.size() / static_cast<size_t>(k));
    std::printf("[ scaled   ] FRACPACK_TEST_SCALE_DOWN=%d: %zu nodes, %zu arrivals\n", k, setup.nodes.size(), setup.arrivals.size());
  }
  k8s::ContractConfig cc;
  cc.profile = *k8s::parse_profile(profile);
  auto snapshot = cli::openb_snapshot(setup, cc, 42);
  ASSERT_TRUE(snapshot) << snapshot.message();
  auto made = k8s::make_contract(cc);
  ASSERT_TRUE(made) << made.message();
  const k8s::Contract& contract = **made;

  // The replay: what `fracpack replay snapshot --profile P --policy fracpack` computes.
  auto list = k8s::parse_snapshot(snapshot->json, contract);
  ASSERT_TRUE(list) << list.message();
  const k8s::SnapshotState state = k8s::read_snapshot(*list, contract);
  const k8s::SnapshotState* st = &state;
  EXPECT_TRUE(st->problems.empty()) << st->problems.front().message;
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
  c.contract.profile = *k8s::parse_profile(profile);
  c.workload.config_map = "fracpack-system/fracpack-target-workload";
  c.cluster.reconcile_interval = std::chrono::seconds(30);
  Connected cluster(c);
  std::map<std::string, std::string> pod_json;  // "ns/name" -> the API server's copy
  std::map<std::string, std::string> node_json;
  const json doc = json::parse(snapshot->json);
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
      if (!want.cards.empty()) {
        ASSERT_NO_FATAL_FAILURE(peer_allocate(profile, cluster, p, cycle.node));
      }
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
  std::printf("[ figures  ] %s profile: %zu pods through filter/prioritize/bind in %.1f s (%.0f pods/s), %zu prioritized, %zu unplaceable\n",
              profile.c_str(), st->pending.size(), seconds, static_cast<double>(st->pending.size()) / seconds, prioritized, failed);

  // The annotations the API server holds equal the replay's cards, and the ledger.
  EXPECT_EQ(Cluster::wait_for([&] { return compare_ledger(*cluster.api, cluster.daemon().state()).empty(); }), true)
      << compare_ledger(*cluster.api, cluster.daemon().state());
  size_t cards_equal = 0, bound = 0;
  std::map<std::string, k8s::RecordedAllocation> records;  // namespace/name -> what its annotations say
  for (RecordedPod& r : recorded_pods(*cluster.api, contract)) records[r.pod.key()] = std::move(r.record);
  for (const auto& want : expected.placements) {
    if (want.node.empty()) continue;
    ++bound;
    auto it = records.find(want.pod);
    ASSERT_NE(it, records.end()) << want.pod << " is not bound";
    const k8s::RecordedAllocation& record = it->second;
    if (want.cards.empty()) {  // no cards (CPU only): no allocation record
      EXPECT_EQ(record.kind, k8s::RecordedAllocation::Kind::kNone) << want.pod;
      ++cards_equal;
      continue;
    }
    ASSERT_EQ(record.kind, k8s::RecordedAllocation::Kind::kAllocation) << want.pod << ": " << record.problem;
    ASSERT_EQ(record.allocation.node, want.node) << want.pod;
    std::vector<int> cards;
    for (const auto& ctr : record.allocation.containers) {
      for (const auto& share : ctr.cards) cards.push_back(share.index);
    }
    if (cards == want.cards) ++cards_equal;
  }
  EXPECT_EQ(cards_equal, bound);

  // No card over-committed, and the peer's own count agrees.
  const std::string invariants = cluster.daemon().state().read(
      [](const scheduling::Ledger& l) { return l.check_invariants(/*capacity=*/true).message(); });
  EXPECT_EQ(invariants, "");
  expect_peer_count_equals_ledger(profile, cluster);
}

INSTANTIATE_TEST_SUITE_P(Profiles, EndToEnd, ::testing::Values("fracpack", "hami", "gpushare"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace fracpack::testing::end_to_end_test
