// What the ledger charges a bound pod at first sight (k8s/bound_pod_charge.h),
// and LedgerBuilder::counted_record, which the reconciler sums by: it must
// count exactly what apply_bound_pod holds.
#include "k8s/bound_pod_charge.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/ledger_builder.h"
#include "test/support/cluster_harness.h"
#include "test/support/record_keys.h"

namespace fracpack::k8s::bound_pod_charge_test {
namespace {

using testing::allocation_annotation;
using testing::node_object;
using testing::pod_object;
using testing::PodSpec;
using Kind = BoundPodCharge::Kind;
using Rejection = BoundPodCharge::Rejection;

const FracpackContract kContract;

// A pod bound to n1, asking `limits` (cpu 1 unless named), with `annotations`.
Pod pod(const std::string& name, std::map<std::string, std::string> limits, std::map<std::string, std::string> annotations = {}) {
  limits.emplace("cpu", "1");
  return *parse_pod(pod_object(PodSpec(name, "d", "n1", "Running", limits, annotations, "u-" + name)), kContract.selection());
}

// Its record, signed by the test key, holding card `card` at `percent` cores and `memory_mib`.
std::map<std::string, std::string> signed_on(const std::string& name, int card, int percent, int64_t memory_mib) {
  return testing::signed_record(kContract, "u-" + name, "n1",
                                {{"fracpack.io/allocation", allocation_annotation("n1", {{card, percent}}, memory_mib)}});
}

scheduling::NodeSpec n1() { return *kContract.node_spec(*parse_node(node_object("n1", 2), kContract.selection())); }

BoundPodCharge charge(const Pod& p, const RecordTrust& trust, const scheduling::NodeSpec* node) {
  return charge_bound_pod(kContract, trust, kContract.record_keys(), p, node);
}

const std::map<std::string, std::string> kHalf = {{"fracpack.io/gpu-cores", "50"}, {"fracpack.io/gpu-memory", "4096"}};

TEST(ChargeBoundPod, ASignedRecordWithinTheRequestIsChargedAsWritten) {
  const scheduling::NodeSpec node = n1();
  const BoundPodCharge c = charge(pod("a", kHalf, signed_on("a", 1, 50, 4096)), testing::test_trust(), &node);
  EXPECT_EQ(c.kind, Kind::kRecord);
  EXPECT_EQ(c.rejection, Rejection::kNone);
  EXPECT_TRUE(c.has_record);
  EXPECT_NE(c.signed_by, "none");
  EXPECT_EQ(c.cpu_milli, 1000);
  ASSERT_EQ(c.charges().size(), 1u);
  EXPECT_EQ(c.charges()[0].index, 1);
  EXPECT_EQ(c.charges()[0].cores, 500);
  EXPECT_EQ(c.charges()[0].memory_mib, 4096);
}

TEST(ChargeBoundPod, APodAskingNoGpuIsChargedNoCardWhateverItsRecord) {
  const scheduling::NodeSpec node = n1();
  const BoundPodCharge c = charge(pod("a", {}, signed_on("a", 0, 50, 4096)), testing::test_trust(), &node);
  EXPECT_EQ(c.kind, Kind::kNoGpu);
  EXPECT_TRUE(c.has_record);
  EXPECT_EQ(c.cpu_milli, 1000);
  EXPECT_TRUE(c.charges().empty());
}

TEST(ChargeBoundPod, AnUnsignedRecordIsRejectedWhereRecordsAreVerified) {
  const scheduling::NodeSpec node = n1();
  const Pod p = pod("a", kHalf, {{"fracpack.io/allocation", allocation_annotation("n1", {{0, 50}}, 4096)}});
  const BoundPodCharge verified = charge(p, testing::test_trust(), &node);
  EXPECT_EQ(verified.kind, Kind::kInfer);
  EXPECT_EQ(verified.rejection, Rejection::kNotFracpacks);
  EXPECT_EQ(verified.record.kind, RecordedAllocation::Kind::kNone) << "not even its flat card list";
  EXPECT_NE(verified.rejection_message.find("not one fracpack's extender wrote"), std::string::npos) << verified.rejection_message;
  EXPECT_TRUE(verified.charges().empty());
  // Taken as written (snapshots, `security.records: unsigned`).
  const BoundPodCharge trusted = charge(p, RecordTrust{}, &node);
  EXPECT_EQ(trusted.kind, Kind::kRecord);
  EXPECT_EQ(trusted.charges().size(), 1u);
}

TEST(ChargeBoundPod, ARecordHoldingMoreThanAskedIsRejected) {
  const scheduling::NodeSpec node = n1();
  const BoundPodCharge c = charge(pod("a", kHalf, signed_on("a", 0, 80, 4096)), testing::test_trust(), &node);
  EXPECT_EQ(c.kind, Kind::kInfer);
  EXPECT_EQ(c.rejection, Rejection::kHoldsMore);
  EXPECT_EQ(c.signed_by, "none");
  EXPECT_NE(c.rejection_message.find("holds more than the pod asks"), std::string::npos) << c.rejection_message;
  EXPECT_TRUE(c.charges().empty());
}

TEST(ChargeBoundPod, AnUnreadablePlacementAnnotationLeavesWhatThePodAsks) {
  const scheduling::NodeSpec node = n1();
  auto annotations = signed_on("a", 0, 50, 4096);
  annotations["fracpack.io/gpu-model"] = "";  // names no model: written after the bind
  const BoundPodCharge c = charge(pod("a", kHalf, annotations), testing::test_trust(), &node);
  EXPECT_EQ(c.kind, Kind::kRecord);
  EXPECT_TRUE(c.request.ok());
  EXPECT_NE(c.request_problem.find("names no model"), std::string::npos) << c.request_problem;
}

// What it asks cannot be read: its full record is what it holds when its
// CPU and memory can be read; otherwise nothing is known of it.
TEST(ChargeBoundPod, AnUnreadableRequestChargesTheRecordOnlyWithItsCpuAndMemory) {
  const scheduling::NodeSpec node = n1();
  std::map<std::string, std::string> bad_share = kHalf;
  bad_share["fracpack.io/gpu-memory-percent"] = "500";  // beside gpu-memory, and out of range
  const BoundPodCharge facts = charge(pod("a", bad_share, signed_on("a", 0, 50, 4096)), testing::test_trust(), &node);
  EXPECT_FALSE(facts.request.ok());
  EXPECT_FALSE(facts.request_problem.empty());
  EXPECT_EQ(facts.kind, Kind::kRecord);
  EXPECT_EQ(facts.cpu_milli, 1000);
  EXPECT_EQ(facts.charges().size(), 1u);

  std::map<std::string, std::string> bad_cpu = kHalf;
  bad_cpu["cpu"] = "lots";
  const BoundPodCharge none = charge(pod("b", bad_cpu, signed_on("b", 0, 50, 4096)), testing::test_trust(), &node);
  EXPECT_EQ(none.kind, Kind::kUnknown);
  EXPECT_TRUE(none.charges().empty());
}

// A share asked as a percentage of the card is checked against the node's
// cards it is given; unknown (no node), it is not checked.
TEST(ChargeBoundPod, APercentageIsCheckedAgainstTheCardsGiven) {
  const std::map<std::string, std::string> percent = {{"fracpack.io/gpu-cores", "50"}, {"fracpack.io/gpu-memory-percent", "50"}};
  const Pod p = pod("a", percent, signed_on("a", 0, 50, 8192));
  scheduling::NodeSpec node = n1();  // 16384 MiB cards
  EXPECT_EQ(charge(p, testing::test_trust(), &node).kind, Kind::kRecord);
  EXPECT_EQ(charge(p, testing::test_trust(), nullptr).kind, Kind::kRecord);
  for (auto& card : node.cards) card.memory_mib = 8192;
  EXPECT_EQ(charge(p, testing::test_trust(), &node).rejection, Rejection::kHoldsMore);
}

// --- LedgerBuilder::counted_record: what the ledger holds ---

struct Built {
  LedgerBuilder builder{kContract, [](std::string, std::string) {}, testing::test_trust()};
  Built() { builder.apply_node(*parse_node(node_object("n1", 2), kContract.selection())); }
  std::vector<scheduling::CardCharge> held(const std::string& uid) const {
    const scheduling::PodRecord* r = builder.ledger().pod(uid);
    return r == nullptr ? std::vector<scheduling::CardCharge>{} : r->charges;
  }
};

// Before the ledger charges a pod, its record counts when the ledger would
// charge it; once charged, what the ledger holds counts (cards inferred for
// a rejected record included).
TEST(CountedRecord, CountsWhatTheLedgerCharges) {
  std::map<std::string, std::string> bad_cpu = kHalf;
  bad_cpu["cpu"] = "lots";
  const std::vector<Pod> pods = {
      pod("record", kHalf, signed_on("record", 0, 50, 4096)),
      pod("nogpu", {}, signed_on("nogpu", 0, 50, 4096)),
      pod("more", kHalf, signed_on("more", 1, 80, 4096)),
      pod("unsigned", kHalf, {{"fracpack.io/allocation", allocation_annotation("n1", {{1, 50}}, 4096)}}),
      pod("badcpu", bad_cpu, signed_on("badcpu", 1, 50, 4096)),
  };
  for (const Pod& p : pods) {
    Built b;
    const auto first_sight = b.builder.counted_record(p);
    b.builder.apply_bound_pod(p);
    const auto held = b.held(p.meta.uid);
    EXPECT_EQ(b.builder.counted_record(p), held) << p.meta.name;
    if (p.meta.name == "record") {
      EXPECT_EQ(first_sight, held);
      EXPECT_EQ(held.size(), 1u);
    } else {
      EXPECT_TRUE(first_sight.empty()) << p.meta.name;
    }
    if (p.meta.name == "more" || p.meta.name == "unsigned") {
      EXPECT_EQ(held.size(), 1u) << p.meta.name << ": inferred";
    }
    if (p.meta.name == "nogpu" || p.meta.name == "badcpu") {
      EXPECT_TRUE(held.empty()) << p.meta.name;
    }
  }
}

// A record changed after the ledger charged the pod: the charge is kept,
// and counted.
TEST(CountedRecord, APatchedRecordCountsTheChargeKept) {
  Built b;
  const Pod original = pod("a", kHalf, signed_on("a", 0, 50, 4096));
  b.builder.apply_bound_pod(original);
  Pod patched = original;
  for (auto& [key, value] : patched.meta.annotations) {
    if (key == "fracpack.io/allocation") value = allocation_annotation("n1", {{1, 50}}, 4096);
  }
  ASSERT_NE(patched.meta.annotations, original.meta.annotations);
  b.builder.apply_bound_pod(patched);
  EXPECT_EQ(b.builder.counters().changed_records, 1u);
  const auto counted = b.builder.counted_record(patched);
  ASSERT_EQ(counted.size(), 1u);
  EXPECT_EQ(counted[0].index, 0) << "the card charged at the bind";
  EXPECT_EQ(counted, b.held("u-a"));
  // A pod the ledger does not know yet counts by its record: a patched one
  // does not verify.
  Built fresh;
  EXPECT_TRUE(fresh.builder.counted_record(patched).empty());
}

}  // namespace
}  // namespace fracpack::k8s::bound_pod_charge_test
