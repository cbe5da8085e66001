// node/records: the agent's side of the fracpack contract.
#include "node/records.h"

#include <gtest/gtest.h>

#include "k8s/contract/profiles.h"
#include "test/support/record_keys.h"

namespace fracpack::node::records_test {
namespace {

k8s::Pod bound_pod(const std::string& record) {
  k8s::Pod p;
  p.meta.name = "p";
  p.meta.namespace_name = "ns";
  p.meta.uid = "uid-p";
  p.meta.creation_timestamp = "2026-01-01T00:00:00Z";
  p.node_name = "n1";
  p.phase = "Pending";
  p.scheduler_name = "fracpack";
  k8s::Container init;
  init.name = "setup";
  init.limits = {{"fracpack.io/gpu", "1"}};
  k8s::Container plain;
  plain.name = "log";  // asks nothing: kubelet never calls Allocate for it
  k8s::Container app;
  app.name = "main";
  app.limits = {{"fracpack.io/gpu", "2"}, {"fracpack.io/gpu-memory", "4096"}};
  p.init_containers = {init};
  p.containers = {plain, app};
  if (!record.empty()) p.meta.annotations = {{"fracpack.io/allocation", record}};
  return p;
}

// Records taken as written: what this file tests is the reading
// (signatures and scheduler names have their own tests below).
RecordRules plain_rules() { return RecordRules{}; }

const char* kRecord =
    R"({"node":"n1","containers":[{"name":"setup","init":true,"cards":[{"index":0,"uuid":"GPU-a","memoryMiB":1024,"cores":10}]},)"
    R"({"name":"main","cards":[{"index":0,"uuid":"GPU-a","memoryMiB":4096,"cores":0},{"index":1,"uuid":"GPU-b","memoryMiB":4096,"cores":0}]}]})";

TEST(NodeRecords, AWaitingPodsContainersInKubeletsOrderWithTheirCards) {
  WaitingPod w = waiting_pod(bound_pod(kRecord), plain_rules(), "n1");
  ASSERT_TRUE(w.cards.ok()) << w.cards.message();
  EXPECT_EQ(w.key, "ns/p");
  ASSERT_EQ(w.containers.size(), 2u);
  EXPECT_EQ(w.containers[0].name, "setup");
  EXPECT_TRUE(w.containers[0].init);
  EXPECT_EQ(w.containers[0].devices, 1);
  EXPECT_EQ(w.containers[1].name, "main");
  EXPECT_EQ(w.containers[1].devices, 2);
  ASSERT_EQ(w.cards->size(), 2u);
  EXPECT_EQ((*w.cards)[1][1].uuid, "GPU-b");
  EXPECT_EQ((*w.cards)[1][1].memory_mib, 4096);
}

TEST(NodeRecords, ARecordThatCannotServeSaysWhy) {
  auto why = [](const k8s::Pod& p) {
    WaitingPod w = waiting_pod(p, plain_rules(), "n1");
    return w.cards.ok() ? std::string("ok") : w.cards.message();
  };
  EXPECT_EQ(why(bound_pod("")), "no annotation fracpack.io/allocation (was it bound by fracpack?)");
  EXPECT_EQ(why(bound_pod("{")).rfind("annotation fracpack.io/allocation: ", 0), 0u);
  EXPECT_EQ(why(bound_pod(R"({"node":"n2","containers":[]})")),
            "annotation fracpack.io/allocation names node n2 but the pod is bound to n1");
  EXPECT_EQ(why(bound_pod(R"({"node":"n1","containers":[{"name":"setup","cards":[{"index":0}]}]})")),
            "annotation fracpack.io/allocation has no cards for container main");
  EXPECT_EQ(why(bound_pod(R"({"node":"n1","containers":[{"name":"setup","cards":[{"index":0}]},{"name":"main","cards":[{"index":0}]}]})")),
            "annotation fracpack.io/allocation gives container main 1 card(s), but it asks 2 fracpack.io/gpu");
  k8s::Pod odd = bound_pod(kRecord);
  odd.containers[1].limits[0].second = "1.5";
  // Kubernetes' rule for an extended resource (the contract's too): a whole count.
  EXPECT_EQ(why(odd), "container main: resources.limits[fracpack.io/gpu]: \"1.5\" is not a valid quantity: must be an integer");
}

// The tke profile (k8s/contract/tke.h): kubelet asks as many
// tencent.com/vcuda-core IDs as the container's percent of a card, and the
// record is fracpack's.
TEST(NodeRecords, ATkePodsVcudaCoreCountMatchesItsRecordedCards) {
  RecordRules rules = plain_rules();
  k8s::ContractConfig config;
  config.profile = k8s::Profile::kTke;
  rules.contract = *k8s::make_contract(config);
  k8s::Pod p = bound_pod(
      R"({"node":"n1","containers":[{"name":"main","cards":[{"index":1,"uuid":"GPU-b","memoryMiB":2048,"cores":30}]},)"
      R"({"name":"train","cards":[{"index":2,"uuid":"GPU-c","memoryMiB":0,"cores":100},{"index":3,"uuid":"GPU-d","memoryMiB":0,"cores":100}]}]})");
  p.init_containers.clear();
  p.containers[1].limits = {{"tencent.com/vcuda-core", "30"}, {"tencent.com/vcuda-memory", "8"}};
  k8s::Container train;
  train.name = "train";
  train.limits = {{"tencent.com/vcuda-core", "200"}};
  p.containers.push_back(train);
  WaitingPod w = waiting_pod(p, rules, "n1");
  ASSERT_TRUE(w.cards.ok()) << w.cards.message();
  ASSERT_EQ(w.containers.size(), 2u);
  EXPECT_EQ(w.containers[0].devices, 30);   // the IDs kubelet asks: the matcher's key
  EXPECT_EQ(w.containers[1].devices, 200);
  EXPECT_EQ((*w.cards)[0][0].cores, 300);  // 30 % of card 1
  EXPECT_EQ((*w.cards)[1].size(), 2u);
  // A record with one card for 200 % is refused, naming both counts.
  p.meta.annotations = {{"fracpack.io/allocation",
                         R"({"node":"n1","containers":[{"name":"main","cards":[{"index":1,"memoryMiB":2048,"cores":30}]},)"
                         R"({"name":"train","cards":[{"index":2,"memoryMiB":0,"cores":100}]}]})"}};
  w = waiting_pod(p, rules, "n1");
  ASSERT_FALSE(w.cards.ok());
  EXPECT_EQ(w.cards.message(), "annotation fracpack.io/allocation gives container train 1 card(s), but it asks 200 tencent.com/vcuda-core (2 card(s))");
  // GPUManager refuses 150 too: whole cards are hundreds.
  p.containers[2].limits = {{"tencent.com/vcuda-core", "150"}};
  w = waiting_pod(p, rules, "n1");
  ASSERT_FALSE(w.cards.ok());
  EXPECT_EQ(w.cards.message().rfind("container train: resources.limits[tencent.com/vcuda-core]: 150 is not a share of one card", 0), 0u)
      << w.cards.message();
}

// One rule for which containers ask for cards: the contract's (the
// extender's), with the node's own check that kubelet allocates only for
// containers naming the device resource.
TEST(NodeRecords, TheContainersAreTheContractsRequestInKubeletsOrder) {
  const char* record =
      R"({"node":"n1","containers":[{"name":"sidecar","cards":[{"index":0,"uuid":"GPU-a","memoryMiB":1024,"cores":100}]},)"
      R"({"name":"notes","cards":[{"index":1,"uuid":"GPU-b","memoryMiB":2048,"cores":0}]},)"
      R"({"name":"main","cards":[{"index":0,"uuid":"GPU-a","memoryMiB":4096,"cores":0},{"index":1,"uuid":"GPU-b","memoryMiB":4096,"cores":0}]}]})";
  k8s::Pod p = bound_pod(record);
  // A sidecar (an init container that keeps running) counts as an app
  // container for the request, and kubelet allocates it first.
  p.init_containers[0].name = "sidecar";
  p.init_containers[0].restart_always = true;
  p.init_containers[0].limits = {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-cores", "10"}};
  // A count written as a quantity: 2000m is 2 devices.
  p.containers[1].limits[0].second = "2000m";
  // Memory alone: the extender charges it a card, kubelet hands it none.
  k8s::Container notes;
  notes.name = "notes";
  notes.limits = {{"fracpack.io/gpu-memory", "2048"}};
  p.containers.insert(p.containers.begin(), notes);
  WaitingPod w = waiting_pod(p, plain_rules(), "n1");
  ASSERT_TRUE(w.cards.ok()) << w.cards.message();
  ASSERT_EQ(w.containers.size(), 2u) << "the memory-only container gets no Allocate";
  EXPECT_EQ(w.containers[0].name, "sidecar");
  EXPECT_FALSE(w.containers[0].init) << "a sidecar runs beside the app containers";
  EXPECT_EQ(w.containers[0].devices, 1);
  EXPECT_EQ(w.containers[1].name, "main");
  EXPECT_EQ(w.containers[1].devices, 2);
  EXPECT_TRUE(asks_devices(p, "fracpack.io/gpu"));
  EXPECT_FALSE(kubelet_allocates(notes, "fracpack.io/gpu"));
  k8s::Container zero;
  zero.limits = {{"fracpack.io/gpu", "0"}};
  EXPECT_FALSE(kubelet_allocates(zero, "fracpack.io/gpu"));
}

// Found by review: a pod the contract cannot read (here two memory
// alternatives at once, from another scheduler, bound by nodeName) still
// takes its turn with the devices kubelet allocates it, and is refused in
// it; were its containers empty, the matcher would skip it and give
// kubelet's call for it to the fracpack pod waiting behind it.
TEST(NodeRecords, APodTheContractCannotReadStillTakesItsTurn) {
  k8s::Pod p = bound_pod(kRecord);
  p.scheduler_name = "default-scheduler";
  p.containers[1].limits.emplace_back("fracpack.io/gpu-memory-percent", "50");
  WaitingPod w = waiting_pod(p, plain_rules(), "n1");
  ASSERT_FALSE(w.cards.ok());
  EXPECT_NE(w.cards.message().find("alternatives"), std::string::npos) << w.cards.message();
  ASSERT_EQ(w.containers.size(), 2u) << "kubelet allocates them: the pod is a candidate in its turn";
  EXPECT_EQ(w.containers[0].devices, 1);
  EXPECT_EQ(w.containers[1].devices, 2);
}

TEST(NodeRecords, OnlyPodsNotYetRunningWait) {
  k8s::Pod p = bound_pod(kRecord);
  EXPECT_TRUE(may_wait(p));
  p.phase = "Running";
  EXPECT_FALSE(may_wait(p));
  p.phase = "Failed";
  EXPECT_FALSE(may_wait(p));
  p.phase = "Pending";
  p.meta.deleting = true;
  EXPECT_FALSE(may_wait(p));
}

TEST(NodeRecords, OnlyAFailedAdmissionIsKubeletsVerdictOnAnAllocate) {
  k8s::Pod p = bound_pod(kRecord);
  EXPECT_FALSE(failed_at_allocate(p));
  p.phase = "Failed";
  EXPECT_FALSE(failed_at_allocate(p)) << "no reason: not known to be kubelet's rejection";
  p.reason = "OutOfcpu";  // another admission handler
  EXPECT_FALSE(failed_at_allocate(p));
  p.reason = "UnexpectedAdmissionError";
  EXPECT_TRUE(failed_at_allocate(p));
  p.phase = "Succeeded";
  EXPECT_FALSE(failed_at_allocate(p));
  // Read from the API server's JSON.
  auto parsed = k8s::parse_pod(R"({"metadata":{"name":"p","namespace":"default","uid":"u"},"spec":{"nodeName":"n"},)"
                               R"("status":{"phase":"Failed","reason":"UnexpectedAdmissionError","message":"Allocate failed"}})",
                               k8s::Selection{});
  ASSERT_TRUE(parsed) << parsed.message();
  EXPECT_TRUE(failed_at_allocate(*parsed));
}

TEST(NodeRecords, TheDeviceAnnotationReadsBackThroughTheContract) {
  GpuDevice a;
  a.index = 0;
  a.uuid = "GPU-a";
  a.model = "NVIDIA A100-SXM4-40GB";
  a.memory_mib = 40960;
  a.numa = 1;
  GpuDevice b = a;
  b.index = 1;
  b.uuid = "GPU-b";
  b.healthy = false;
  b.problem = "Xid 79";
  k8s::Node node;
  node.meta.name = "n1";
  node.allocatable = {{"cpu", "64"}, {"memory", "512Gi"}};
  node.meta.annotations = {{"fracpack.io/gpu-devices", devices_annotation({a, b}, 32)}};
  k8s::FracpackContract contract;
  auto spec = contract.node_spec(node);
  ASSERT_TRUE(spec.ok()) << spec.message();
  ASSERT_EQ(spec->cards.size(), 2u);
  EXPECT_EQ(spec->cards[0].uuid, "GPU-a");
  EXPECT_EQ(spec->cards[0].memory_mib, 40960);
  EXPECT_EQ(spec->cards[0].numa, 1);
  EXPECT_EQ(spec->cards[0].max_sharers, 32);
  EXPECT_TRUE(spec->cards[0].healthy);
  EXPECT_FALSE(spec->cards[1].healthy);
}


// --- whose records are served (README "Security model") ---

// The pod as fracpack's extender binds it: schedulerName fracpack, the
// record signed by the test key (or by `signer`).
k8s::Pod signed_pod(const std::string& record = kRecord) {
  k8s::Pod p = bound_pod(record);
  p.scheduler_name = "fracpack";
  p.meta.annotations.emplace_back("fracpack.io/gpu-indices", "0,1");
  const std::string message = k8s::record_message(p.meta.uid, "n1", {"fracpack.io/allocation", "fracpack.io/gpu-indices"}, p.meta.annotations);
  p.meta.annotations.emplace_back(std::string(k8s::kRecordSignatureAnnotation), testing::test_signer()->sign(message));
  return p;
}

RecordRules verifying_rules() {
  RecordRules r;
  r.trust = testing::test_trust();
  return r;
}

std::string why(const k8s::Pod& p) {
  WaitingPod w = waiting_pod(p, verifying_rules(), "n1");
  return w.cards.ok() ? std::string("ok") : w.cards.message();
}

TEST(NodeRecords, OnlyRecordsTheExtenderSignedAreServed) {
  EXPECT_EQ(why(signed_pod()), "ok");
  WaitingPod w = waiting_pod(signed_pod(), verifying_rules(), "n1");
  ASSERT_EQ(w.holding.size(), 2u) << "the whole record, for the agent's account";
  EXPECT_EQ(w.holding[0].index, 0);
  EXPECT_EQ(w.holding[0].memory_mib, 4096) << "card 0: the app container's 4096 MiB beside the init container's 1024";
  // Written by hand (attack: a record naming the card another team holds).
  k8s::Pod forged = bound_pod(kRecord);
  forged.scheduler_name = "fracpack";
  EXPECT_NE(why(forged).find("annotation fracpack.io/allocation is not fracpack's: no annotation fracpack.io/allocation-signature"),
            std::string::npos) << why(forged);
  // Signed, then edited to take another card.
  k8s::Pod edited = signed_pod();
  std::string& record = edited.meta.annotations[0].second;
  record.replace(record.find("\"index\":1"), 9, "\"index\":3");
  EXPECT_NE(why(edited).find("does not match the record"), std::string::npos) << why(edited);
  // Signed for this pod, copied onto another.
  k8s::Pod copied = signed_pod();
  copied.meta.uid = "uid-q";
  EXPECT_NE(why(copied).find("does not match the record"), std::string::npos) << why(copied);
}

TEST(NodeRecords, PodsOfAnotherSchedulerAreNeverServed) {
  k8s::Pod other = signed_pod();
  other.scheduler_name = "default-scheduler";
  EXPECT_EQ(why(other), "schedulerName \"default-scheduler\" is not fracpack's: its cards were not chosen by fracpack");
  k8s::Pod none = signed_pod();
  none.scheduler_name.clear();  // spec.nodeName set by hand: defaulted to default-scheduler, or empty in a test
  EXPECT_NE(why(none).find("is not fracpack's"), std::string::npos);
}

// Found by review (issue 42): with no schedulerNames the agent served every
// pod while bind refused every pod. One rule (k8s::placed_by_fracpack): an
// empty list names no scheduler, so nothing is served.
TEST(NodeRecords, AnEmptySchedulerListServesNoPod) {
  RecordRules none = verifying_rules();
  none.scheduler_names.clear();
  WaitingPod w = waiting_pod(signed_pod(), none, "n1");
  ASSERT_FALSE(w.cards.ok()) << "served a pod with no scheduler named";
  EXPECT_NE(w.cards.message().find("is not fracpack's"), std::string::npos) << w.cards.message();
}

TEST(NodeRecords, ALivePodHoldsWhatItsSignedRecordSaysAndNothingElse) {
  const LivePod signed_live = live_pod(signed_pod(), verifying_rules(), "n1");
  ASSERT_TRUE(signed_live.charges.has_value());
  EXPECT_EQ(signed_live.charges->size(), 2u);
  k8s::Pod forged = bound_pod(kRecord);
  forged.scheduler_name = "fracpack";
  EXPECT_FALSE(live_pod(forged, verifying_rules(), "n1").charges.has_value());
}

}  // namespace
}  // namespace fracpack::node::records_test
