// The bind fence (k8s/bind_fence.h) against the test API server, and the
// reconciler's over-commit check (confirm_overcommitted), which reads as the
// fence reads and reports only what the API server confirms. What a fence's
// read does to the ledger is Reservations::recheck (reservations_test.cc).
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "k8s/bind_fence.h"
#include "k8s/binding.h"
#include "k8s/reconciler.h"
#include "k8s/contract/fracpack.h"
#include "scheduling/fit.h"
#include "test/support/cluster_harness.h"
#include "test/support/record_keys.h"

namespace fracpack::testing::bind_fence_test {
namespace {

using namespace std::chrono_literals;
using scheduling::Ledger;


class BindFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.create("nodes", node_object("n1", 2));
    server_.create("nodes", node_object("n2", 2));
    server_.create("pods", bound_share_pod("a", "n1", 0));
    server_.create("pods", bound_share_pod("b", "n2", 0));
    server_.create("pods", pod_object(PodSpec("pending", "default", "", "Pending", half_card(), {}, "u-pending")));
    server_.create("pods", pod_object(PodSpec("finished", "default", "n1", "Succeeded", half_card(), {}, "u-finished")));
    server_.create("pods", bind_fence_marker_pod());
  }
  FakeApiServer server_;
  k8s::BindFence fence_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kConsistent};
  k8s::BindFence versioned_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kResourceVersion};
  k8s::BindFence marked_{k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kMarker, kMarker};
  static inline const k8s::BindFence::Marker kMarker{"fracpack-system", "fracpack-bind-fence"};
};

const std::string kNodeRead = "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";

// The marker's resourceVersion as the server has it now.
std::string marker_version(const FakeApiServer& server) {
  auto pod = k8s::parse_pod(*server.get("pods", "fracpack-system", "fracpack-bind-fence"), k8s::Selection{});
  return pod ? pod->meta.resource_version : "";
}

// Each way of reading returns the node's live pods, records included: one
// consistent list; a consistent read of the version, then the node's pods
// not older than it; a write to the marker pod, then the node's pods not
// older than the write.
TEST_F(BindFenceTest, ReadsTheNodesLivePodsEachWay) {
  const std::string& node_read = kNodeRead;
  for (k8s::BindFence* fence : {&fence_, &versioned_, &marked_}) {
    k8s::ApiClient client(client_for(server_));
    const auto now = k8s::BindFence::Clock::now();
    auto pods = fence->node_pods(client, "n1", now, now + 5s);
    ASSERT_TRUE(pods.ok()) << pods.message();
    ASSERT_EQ(pods->size(), 1u);
    EXPECT_EQ((*pods)[0].meta.name, "a");
    EXPECT_NE((*pods)[0].meta.annotation("fracpack.io/allocation"), nullptr);
  }
  const auto log = server_.request_log();
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[0], node_read) << "no resourceVersion: a consistent read";
  EXPECT_EQ(log[1], "GET /api/v1/pods?limit=1") << "a quorum read of one item";
  EXPECT_EQ(log[2], node_read + "&resourceVersion=" + std::to_string(server_.resource_version() - 1))
      << "the node's pods, not older than that version";
  EXPECT_EQ(log[3], "PATCH /api/v1/namespaces/fracpack-system/pods/fracpack-bind-fence") << "a write to the marker";
  EXPECT_EQ(log[4], node_read + "&resourceVersion=" + marker_version(server_)) << "the node's pods, not older than the write";
  EXPECT_EQ(marker_version(server_), std::to_string(server_.resource_version()));
  EXPECT_EQ(fence_.stats().version_reads, 0u);
  EXPECT_EQ(versioned_.stats().version_reads, 1u);
  EXPECT_EQ(marked_.stats().version_reads, 1u);
  // Each write changes the marker (an unchanged object keeps its old
  // resourceVersion, which may predate the bind).
  const auto before = server_.resource_version();
  k8s::ApiClient client(client_for(server_));
  const auto later = k8s::BindFence::Clock::now();
  ASSERT_TRUE(marked_.node_pods(client, "n1", later, later + 5s).ok());
  EXPECT_EQ(marker_version(server_), std::to_string(before + 1));
}

// Found on a real 1.20 API server (issue 31): its pods cache learns of no
// progress but pod writes, so a read at the current (global) resourceVersion
// waits for the next pod write; in a quiet cluster every bind timed out.
// A write to the marker is a pod write: the read after it is served at once.
// For a namespace with a GPU quota: the namespace's bound live pods on
// every node, read at the node read's version (one marker write per bind).
TEST_F(BindFenceTest, ReadsANamespacesLivePodsAtTheVersionOfTheNodesRead) {
  server_.create("pods", pod_object(PodSpec("t1", "team", "n2", "Running", half_card(), {}, "u-t1")));
  server_.create("pods", pod_object(PodSpec("t2", "team", "", "Pending", half_card(), {}, "u-t2")));
  server_.create("pods", pod_object(PodSpec("t3", "team", "n1", "Failed", half_card(), {}, "u-t3")));
  k8s::ApiClient client(client_for(server_));
  const auto now = k8s::BindFence::Clock::now();
  k8s::BindFence::ReadAt at;
  ASSERT_TRUE(marked_.node_pods(client, "n1", now, now + 5s, &at).ok());
  EXPECT_EQ(at.version, marker_version(server_));
  EXPECT_FALSE(at.marker_value.empty());
  auto pods = marked_.namespace_pods(client, "team", at, now + 5s);
  ASSERT_TRUE(pods.ok()) << pods.message();
  std::vector<std::string> names;
  for (const auto& p : *pods) names.push_back(p.meta.name);
  EXPECT_EQ(names, (std::vector<std::string>{"t1"})) << "bound live pods only, of that namespace";
  const auto log = server_.request_log();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], "PATCH /api/v1/namespaces/fracpack-system/pods/fracpack-bind-fence");
  EXPECT_EQ(log[2], "GET /api/v1/namespaces/team/pods?fieldSelector=spec.nodeName%21%3D%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&resourceVersion=" +
                        marker_version(server_));
  EXPECT_EQ(marked_.stats().version_reads, 1u);
  EXPECT_EQ(marked_.stats().shared, 0u) << "the namespace's read reuses the node read's version: one fence per bind";
}

TEST(BindFenceQuietCluster, TheMarkersWriteLetsTheCacheServeWhereTheVersionWaits) {
  FakeApiServerOptions o;
  o.minor_version = "20";
  o.watch_cache_progress = false;
  FakeApiServer server(o);
  server.create("nodes", node_object("n1", 2));
  server.create("pods", bound_share_pod("a", "n1", 0));
  server.create("pods", bind_fence_marker_pod());
  server.create("nodes", node_object("n2", 2));  // another kind's write: the pods cache is behind the store now
  k8s::ApiClient client(client_for(server));
  k8s::BindFence versioned(k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kResourceVersion);
  auto now = k8s::BindFence::Clock::now();
  auto r = versioned.node_pods(client, "n1", now, now + 1500ms);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("deadline passed before the pods of node n1"), std::string::npos) << r.message();
  k8s::BindFence fence(k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kAuto,
                       {"fracpack-system", "fracpack-bind-fence"});
  now = k8s::BindFence::Clock::now();
  r = fence.node_pods(client, "n1", now, now + 1500ms);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_LT(k8s::BindFence::Clock::now() - now, 500ms) << "no wait for the cache";
  EXPECT_EQ(fence.mode(), k8s::BindFence::Read::kMarker);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].meta.name, "a");
}

// Without the marker pod (or the right to write it) binds still read
// freshly: consistently, said once, and the write is not tried again for a
// while.
TEST_F(BindFenceTest, WithoutTheMarkerBindsReadConsistentlyAndSaySo) {
  server_.remove("pods", "fracpack-system", "fracpack-bind-fence");
  k8s::ApiClient client(client_for(server_));
  EXPECT_EQ(marked_.marker_problem(), "");
  for (int i = 0; i < 3; ++i) {
    const auto now = k8s::BindFence::Clock::now();
    auto r = marked_.node_pods(client, "n1", now, now + 5s);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->size(), 1u);
  }
  const auto log = server_.request_log();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0], "PATCH /api/v1/namespaces/fracpack-system/pods/fracpack-bind-fence");
  for (int i = 1; i < 4; ++i) EXPECT_EQ(log[i], kNodeRead) << "a consistent read";
  EXPECT_EQ(marked_.stats().marker_fallbacks, 3u);
  EXPECT_NE(marked_.marker_problem().find("fracpack-system/fracpack-bind-fence"), std::string::npos) << marked_.marker_problem();
  EXPECT_NE(marked_.marker_problem().find("manifests/bind-fence.yaml"), std::string::npos) << marked_.marker_problem();
  // No marker configured: consistent reads, no write.
  k8s::BindFence unmarked(k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kMarker);
  const auto now = k8s::BindFence::Clock::now();
  ASSERT_TRUE(unmarked.node_pods(client, "n1", now, now + 5s).ok());
  EXPECT_EQ(server_.request_log().back(), kNodeRead);
  EXPECT_EQ(unmarked.stats().marker_fallbacks, 1u);
}

// One version read serves every bind that arrived before it started; a bind
// that arrives after a read started needs a later one.
TEST_F(BindFenceTest, OneVersionReadServesTheBindsThatArrivedBeforeIt) {
  for (k8s::BindFence* each : {&versioned_, &marked_}) {
  k8s::BindFence& fence = *each;
  k8s::ApiClient client(client_for(server_));
  const auto arrived = k8s::BindFence::Clock::now();
  ASSERT_TRUE(fence.node_pods(client, "n1", arrived, arrived + 5s).ok());
  ASSERT_TRUE(fence.node_pods(client, "n2", arrived, arrived + 5s).ok());
  EXPECT_EQ(fence.stats().version_reads, 1u);
  EXPECT_EQ(fence.stats().shared, 1u);
  EXPECT_EQ(fence.stats().node_reads, 2u);
  const auto later = k8s::BindFence::Clock::now();
  ASSERT_TRUE(fence.node_pods(client, "n1", later, later + 5s).ok());
  EXPECT_EQ(fence.stats().version_reads, 2u);
  // Concurrent binds on eight threads, each with its own client: the reads
  // they share are fewer than the binds.
  server_.faults().slow_ms = 20;
  const auto together = k8s::BindFence::Clock::now();
  std::vector<std::future<bool>> binds;
  for (int i = 0; i < 8; ++i) {
    binds.push_back(std::async(std::launch::async, [&] {
      k8s::ApiClient own(client_for(server_));
      return fence.node_pods(own, "n1", together, together + 5s).ok();
    }));
  }
  for (auto& b : binds) EXPECT_TRUE(b.get());
  EXPECT_LT(fence.stats().version_reads, 2u + 8u);
  EXPECT_GE(fence.stats().shared, 1u + 1u);
  server_.faults().slow_ms = 0;
  }
}

TEST_F(BindFenceTest, FailsWithTheReasonWhenTheApiServerCannotAnswerInTime) {
  k8s::ApiClient client(client_for(server_));
  server_.faults().throttle = 1;
  auto now = k8s::BindFence::Clock::now();
  auto r = fence_.node_pods(client, "n1", now, now + 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("reading the pods of node n1"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("Too many requests"), std::string::npos) << r.message();
  server_.faults().throttle = 1;
  r = versioned_.node_pods(client, "n1", now, now + 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("current resourceVersion"), std::string::npos) << r.message();
  server_.faults().slow_ms = 300;
  now = k8s::BindFence::Clock::now();
  r = fence_.node_pods(client, "n1", now, now + 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(k8s::BindFence::Clock::now() - now, 1s) << "gives up at the bind's deadline";
  EXPECT_EQ(fence_.stats().failures, 2u);
}

// Found on a real 1.20 API server (issue 31): a consistent list per bind is
// read from etcd there, and a burst's binds failed on it. By default the
// API server's version picks the read: consistent only where the watch
// cache serves it (1.31 on), the marker's write before.
TEST(BindFenceAuto, TheApiServersVersionPicksTheRead) {
  for (const auto& [minor, want] : std::vector<std::pair<std::string, k8s::BindFence::Read>>{
           {"20", k8s::BindFence::Read::kMarker}, {"30", k8s::BindFence::Read::kMarker},
           {"31", k8s::BindFence::Read::kConsistent}, {"34+", k8s::BindFence::Read::kConsistent}}) {
    FakeApiServerOptions o;
    o.minor_version = minor;
    FakeApiServer server(o);
    server.create("nodes", node_object("n1", 2));
    server.create("pods", bind_fence_marker_pod());
    k8s::BindFence fence(k8s::kLivePodsSelector, fracpack_contract().selection(), k8s::BindFence::Read::kAuto,
                         {"fracpack-system", "fracpack-bind-fence"});
    EXPECT_EQ(fence.mode(), k8s::BindFence::Read::kAuto);
    k8s::ApiClient client(client_for(server));
    const auto now = k8s::BindFence::Clock::now();
    ASSERT_TRUE(fence.node_pods(client, "n1", now, now + 5s).ok());
    ASSERT_TRUE(fence.node_pods(client, "n1", now, now + 5s).ok());
    EXPECT_EQ(fence.mode(), want) << minor;
    EXPECT_EQ(server.requests("GET /version"), 1) << "read once";
    EXPECT_EQ(fence.stats().version_reads > 0, want == k8s::BindFence::Read::kMarker) << minor;
    EXPECT_EQ(server.requests("PATCH /api/v1/namespaces/fracpack-system/pods/fracpack-bind-fence") > 0,
              want == k8s::BindFence::Read::kMarker) << minor;
    EXPECT_EQ(fence.resolved_from(), "v1." + minor + ".0-fracpack-fake");
  }
}

// Two pods bound on one card by two schedulers: the reconciler reports it.
// A ledger that still holds a pod the API server has deleted (its watch is
// late) holds more than it should, but nothing is double-booked: no report.
TEST_F(BindFenceTest, TheReconcilerReportsOnlyOverCommitsTheApiServerConfirms) {
  k8s::ClusterState state({nullptr, 30s, {}, {}, {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  state.apply_pod(decoded_pod(*server_.get("pods", "default", "a")));
  const std::string late = bound_share_pod("late", "n1", 0, 75, 4096);  // with a: 1250 milli on card 0
  server_.create("pods", late);
  state.apply_pod(decoded_pod(late));
  k8s::ApiClient client(client_for(server_));
  auto confirmed = k8s::confirm_overcommitted(client, fence_, state);
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].node, "n1");
  EXPECT_EQ(confirmed[0].index, 0);
  EXPECT_EQ(confirmed[0].cores, 1250);
  ASSERT_EQ(confirmed[0].pods.size(), 2u);
  EXPECT_EQ(confirmed[0].pods[0].first, "default/a");
  EXPECT_EQ(confirmed[0].pods[1].first, "default/late");
  // The API server deletes one; the ledger has not heard yet.
  server_.remove("pods", "default", "late");
  EXPECT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 1);
  EXPECT_TRUE(k8s::confirm_overcommitted(client, fence_, state).empty());
}

// Where records are verified, a record the ledger rejects (unsigned, as
// anyone who may edit a pod can write one) holds nothing: the reconciler
// does not count it either (the ledger's rule, LedgerBuilder::
// counted_record). Before, it summed every record the API server's pods
// carried and reported a card the ledger's over-commit had drained, on the
// strength of an unsigned one.
TEST_F(BindFenceTest, TheReconcilerCountsOnlyRecordsTheLedgerCounts) {
  k8s::ClusterState state({nullptr, 30s, {}, test_trust(), {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  auto signed_pod = [&](const std::string& name, int percent) {
    const std::string uid = "u-" + name;
    return pod_object(PodSpec(name, "default", "n1", "Running",
                              {{"fracpack.io/gpu-cores", std::to_string(percent)}, {"fracpack.io/gpu-memory", "4096"}},
                              signed_record(fracpack_contract(), uid, "n1",
                                            {{"fracpack.io/allocation", allocation_annotation("n1", {{0, percent}}, 4096)}}),
                              uid));
  };
  for (const auto& [name, percent] : std::vector<std::pair<std::string, int>>{{"s1", 50}, {"s2", 75}}) {
    const std::string pod = signed_pod(name, percent);
    server_.create("pods", pod);
    state.apply_pod(decoded_pod(pod));
  }
  ASSERT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 1) << "s1 and s2: 1250 milli on card 0";
  k8s::ApiClient client(client_for(server_));
  ASSERT_EQ(k8s::confirm_overcommitted(client, fence_, state).size(), 1u);
  // s2 is deleted (the ledger has not heard yet); beside s1 on card 0 the
  // API server still has "a" (SetUp) and a forged record, both unsigned.
  server_.remove("pods", "default", "s2");
  server_.create("pods", bound_share_pod("forged", "n1", 0, 75, 4096));
  EXPECT_TRUE(k8s::confirm_overcommitted(client, fence_, state).empty()) << "unsigned records double-book nothing";
}

// The reconciler counts what the ledger holds, decided by the rule the
// ledger charges by (LedgerBuilder::counted_record, charge_bound_pod): the
// three cases below are where its own copy of that rule used to differ.
class ReconcilerCountsTest : public BindFenceTest {
 protected:
  // A pod on n1 whose record (signed) holds card 0 at `percent` cores and
  // `memory_mib`, asking `limits` beside the cores.
  std::string signed_pod(const k8s::Contract& contract, const std::string& name, int percent, int64_t memory_mib,
                         std::map<std::string, std::string> limits) {
    const std::string uid = "u-" + name;
    limits.emplace("fracpack.io/gpu-cores", std::to_string(percent));
    return pod_object(PodSpec(name, "default", "n1", "Running", limits,
                              signed_record(contract, uid, "n1",
                                            {{"fracpack.io/allocation", allocation_annotation("n1", {{0, percent}}, memory_mib)}}),
                              uid));
  }
  // Created on the API server and applied to the state.
  void bound(k8s::ClusterState& state, const std::string& pod) {
    server_.create("pods", pod);
    state.apply_pod(decoded_pod(pod));
  }
};

// (a) A record patched after the bind: the ledger keeps what it charged at
// the bind (the container holds that card), so the reconciler counts that.
// Before, it read the patched record, whose signature no longer verifies,
// counted nothing for it and left a real double booking unreported.
TEST_F(ReconcilerCountsTest, APatchedRecordCountsWhatTheLedgerChargedAtTheBind) {
  k8s::ClusterState state({nullptr, 30s, {}, test_trust(), {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  bound(state, signed_pod(fracpack_contract(), "s1", 50, 4096, {{"fracpack.io/gpu-memory", "4096"}}));
  const std::string s2 = signed_pod(fracpack_contract(), "s2", 75, 4096, {{"fracpack.io/gpu-memory", "4096"}});
  bound(state, s2);
  ASSERT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 1) << "s1 and s2: 1250 milli on card 0";
  // s2's owner moves its record to card 1 (off the over-committed card).
  server_.remove("pods", "default", "s2");
  std::string patched = s2;
  const std::string from = allocation_annotation("n1", {{0, 75}}, 4096);
  const std::string to = allocation_annotation("n1", {{1, 75}}, 4096);
  auto escaped = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '"' ? std::string("\\\"") : std::string(1, c);
    return out;
  };
  const size_t at = patched.find(escaped(from));
  ASSERT_NE(at, std::string::npos) << patched;
  patched.replace(at, escaped(from).size(), escaped(to));
  bound(state, patched);
  EXPECT_EQ(state.counters().changed_records, 1u);
  ASSERT_EQ(state.read([](const Ledger& l) { return l.overcommitted_cards(); }), 1) << "the charge at the bind is kept";
  k8s::ApiClient client(client_for(server_));
  auto confirmed = k8s::confirm_overcommitted(client, fence_, state);
  ASSERT_EQ(confirmed.size(), 1u) << "the card s2's container holds is over-committed";
  EXPECT_EQ(confirmed[0].cores, 1250);
  ASSERT_EQ(confirmed[0].pods.size(), 2u);
  EXPECT_EQ(confirmed[0].pods[1].first, "default/s2");
}

// (b) A pod whose request cannot be read, not even its CPU and memory: the
// ledger charges it nothing (k8s/bound_pod_charge.h), so the reconciler
// counts nothing for it. Before, it counted its record and confirmed a card
// the ledger's over-commit had drained.
TEST_F(ReconcilerCountsTest, APodWhoseRequestCannotBeReadCountsNothing) {
  k8s::ClusterState state({nullptr, 30s, {}, test_trust(), {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  bound(state, signed_pod(fracpack_contract(), "s1", 50, 4096, {{"fracpack.io/gpu-memory", "4096"}}));
  bound(state, signed_pod(fracpack_contract(), "s3", 75, 4096, {{"fracpack.io/gpu-memory", "4096"}}));
  // Its CPU cannot be read: charged nothing, whatever its record says.
  bound(state, signed_pod(fracpack_contract(), "odd", 75, 4096, {{"fracpack.io/gpu-memory", "4096"}, {"cpu", "lots"}}));
  ASSERT_EQ(state.read([](const Ledger& l) { return l.node("n1")->use()[0].cores; }), 1250) << "s1 and s3, not odd";
  k8s::ApiClient client(client_for(server_));
  ASSERT_EQ(k8s::confirm_overcommitted(client, fence_, state).size(), 1u);
  // s3 is deleted; the ledger has not heard yet.
  server_.remove("pods", "default", "s3");
  EXPECT_TRUE(k8s::confirm_overcommitted(client, fence_, state).empty()) << "odd holds nothing in the ledger";
}

// The fracpack contract with a ConfigMap per node ("scale/<node>") that
// halves its cards' memory: a ConfigMap that changes what the ledger's
// effective node says of a card's size.
class HalvingContract : public k8s::FracpackContract {
 public:
  std::string node_config_map_namespace() const override { return "scale"; }
  std::vector<std::string> config_map_nodes(const k8s::ConfigMap& config_map) const override {
    if (config_map.meta.namespace_name != "scale") return {};
    return {config_map.meta.name};
  }
  Status apply_config_map(const k8s::ConfigMap&, scheduling::NodeSpec& spec) const override {
    for (auto& card : spec.cards) card.memory_mib /= 2;
    return Status::Ok();
  }
};

// (c) A record is read and checked against the node's cards as the
// contract reads them (the ledger's own spec, no ConfigMap applied), as the
// ledger charges it. Before, the reconciler checked it against the
// ledger's effective node (the ConfigMap applied): s1's half of the card
// by percent became more than it asks there, and was not counted.
TEST_F(ReconcilerCountsTest, ARecordIsCheckedAgainstTheNodesOwnCards) {
  auto contract = std::make_shared<HalvingContract>();
  k8s::ClusterState state({contract, 30s, {}, test_trust(), {}, {}, {}, {}});
  state.apply_node(decoded_node("n1", 2));
  ASSERT_TRUE(state.config_map_event(k8s::WatchEventType::kAdded,
                                     R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n1","namespace":"scale",)"
                                     R"("resourceVersion":"3"},"data":{"x":"y"}})")
                  .ok());
  ASSERT_EQ(state.read([](const Ledger& l) { return l.node("n1")->cards()[0].memory_mib; }), 8192) << "the effective node";
  bound(state, signed_pod(*contract, "s1", 50, 8192, {{"fracpack.io/gpu-memory-percent", "50"}}));
  bound(state, signed_pod(*contract, "s2", 75, 1024, {{"fracpack.io/gpu-memory", "1024"}}));
  ASSERT_EQ(state.read([](const Ledger& l) { return l.node("n1")->use()[0].cores; }), 1250) << "both records charged";
  k8s::ApiClient client(client_for(server_));
  auto confirmed = k8s::confirm_overcommitted(client, fence_, state);
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].cores, 1250);
}

}  // namespace
}  // namespace fracpack::testing::bind_fence_test
