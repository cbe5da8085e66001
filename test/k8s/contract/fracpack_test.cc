#include "k8s/contract/fracpack.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scheduling/fit.h"

namespace fracpack::k8s::contract_fracpack_test {
namespace {

const ContractNames kNames;
const FracpackContract kContract(kNames);

// A pod from JSON text, decoded as the informer does.
Pod pod_from(const std::string& json) {
  auto p = parse_pod(json, kNames.selection());
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
  return p.ok() ? *p : Pod{};
}

// A pod with one container whose limits (and equal requests) are `limits`,
// e.g. R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"50")".
std::string pod_json(const std::string& limits, const std::string& annotations = "",
                     const std::string& extra_spec = "") {
  return R"({"metadata":{"name":"p","namespace":"ml","uid":"u1")" +
         (annotations.empty() ? std::string() : R"(,"annotations":{)" + annotations + "}") +
         R"(},"spec":{"containers":[{"name":"main","resources":{"limits":{)" + limits +
         R"(}}}])" + extra_spec + "}}";
}

Result<scheduling::PodRequest> request(const std::string& limits, const std::string& annotations = "") {
  return kContract.pod_request(pod_from(pod_json(limits, annotations)));
}

TEST(Contract, ShareRequests) {
  auto r = request(R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"50","fracpack.io/gpu-memory":"8192")");
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].cards, 1);
  EXPECT_EQ(r->containers[0].cores, 500);
  EXPECT_EQ(r->containers[0].memory_mib, 8192);
  EXPECT_EQ(r->uid, "u1");
  EXPECT_EQ(r->key(), "ml/p");

  // gpu defaults to 1 when a share is named; unnamed dimensions count 0.
  r = request(R"("fracpack.io/gpu-memory":"20480")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].cards, 1);
  EXPECT_EQ(r->containers[0].cores, 0);

  // A bare count: whole exclusive cards.
  r = request(R"("fracpack.io/gpu":"2")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].cards, 2);
  EXPECT_EQ(r->containers[0].cores, 1000);
  EXPECT_EQ(r->containers[0].memory_percent, 100);

  // Canonical forms the API server sends back ("1k" for 1000) and bare JSON numbers.
  auto null_quantity = parse_pod(pod_json(R"("fracpack.io/gpu":1,"fracpack.io/gpu-memory-percent":null)"), kNames.selection());
  ASSERT_FALSE(null_quantity.ok());
  EXPECT_NE(null_quantity.message().find("expected a quantity string"), std::string::npos) << null_quantity.message();
  r = request(R"("fracpack.io/gpu":1,"fracpack.io/gpu-memory":"1k")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_mib, 1000);

  // No fracpack resource: no GPU containers.
  r = request(R"("cpu":"2")");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->wants_gpu());
  EXPECT_EQ(r->cpu_milli, 2000);
}

TEST(Contract, BadValuesNameThePodContainerAndField) {
  struct Case {
    std::string limits;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {R"("fracpack.io/gpu":"0.5")", "resources.limits[fracpack.io/gpu]: \"0.5\" is not a valid quantity: must be an integer"},
      {R"("fracpack.io/gpu":"1x")", "resources.limits[fracpack.io/gpu]: \"1x\" is not a valid quantity"},
      {R"("fracpack.io/gpu-cores":"150")", "fracpack.io/gpu-cores]: must be 1..100 (percent), got 150"},
      {R"("fracpack.io/gpu-cores":"0")", "must be 1..100"},
      {R"("fracpack.io/gpu-memory-percent":"101")", "fracpack.io/gpu-memory-percent]: must be 1..100"},
      {R"("fracpack.io/gpu-memory":"0")", "fracpack.io/gpu-memory]: must be at least 1"},
      {R"("fracpack.io/gpu-memory":"-5")", "must be greater than or equal to 0"},
      {R"("fracpack.io/gpu-memory":"1024","fracpack.io/gpu-memory-percent":"10")", "are alternatives"},
      {R"("fracpack.io/gpu":"0","fracpack.io/gpu-cores":"10")", "is 0 but a GPU share is named"},
      {R"("fracpack.io/gpu":"65")", "more than the maximum of 64"},
      {R"("cpu":"lots","fracpack.io/gpu":"1")", "resources.requests[cpu]: \"lots\" is not a valid quantity"},
  };
  for (const auto& c : cases) {
    auto r = request(c.limits);
    ASSERT_FALSE(r.ok()) << c.limits;
    EXPECT_NE(r.message().find("pod ml/p"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("main"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find(c.expect), std::string::npos) << "got: " << r.message() << "\nwanted: " << c.expect;
  }
}

TEST(Contract, RequestsMustEqualLimits) {
  auto p = pod_from(
      R"({"metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c","resources":{"requests":{"fracpack.io/gpu":"1"},"limits":{"fracpack.io/gpu":"2"}}}]}})");
  auto r = kContract.pod_request(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("must equal resources.limits"), std::string::npos) << r.message();
  p = pod_from(R"({"metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c","resources":{"requests":{"fracpack.io/gpu":"1"}}}]}})");
  r = kContract.pod_request(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("a limit must be set"), std::string::npos) << r.message();
}

TEST(Contract, Annotations) {
  auto r = request(R"("fracpack.io/gpu":"1")",
                   R"("fracpack.io/gpu-model":"V100M16| V100M32","fracpack.io/gpu-uuid":"GPU-a, GPU-b","fracpack.io/gpu-uuid-exclude":"GPU-c","fracpack.io/numa":"single","other.io/x":"y")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->allowed_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(r->uuid_allow, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(r->uuid_exclude, (std::vector<std::string>{"GPU-c"}));
  EXPECT_TRUE(r->numa_single);
  for (const auto& [ann, expect] : std::vector<std::pair<std::string, std::string>>{
           {R"("fracpack.io/gpu-model":" | ")", "fracpack.io/gpu-model names no model"},
           {R"("fracpack.io/gpu-uuid":",")", "fracpack.io/gpu-uuid names no card"},
           {R"("fracpack.io/numa":"double")", "\"double\" is not one of single, any"}}) {
    auto bad = request(R"("fracpack.io/gpu":"1")", ann);
    ASSERT_FALSE(bad.ok()) << ann;
    EXPECT_NE(bad.message().find(expect), std::string::npos) << bad.message();
  }
}

TEST(Contract, EffectivePodRequestFollowsKubernetes) {
  // app: 1 + 2 cpu; init: 4 (regular), sidecar 0.5 before it: init peak 4.5;
  // pod = max(3 + 0.5, 4.5) + overhead 0.25 = 4.75 cpu.
  auto p = pod_from(R"({"metadata":{"name":"p","namespace":"ml"},"spec":{
    "initContainers":[{"name":"side","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}},
                      {"name":"init","resources":{"limits":{"cpu":"4","fracpack.io/gpu-cores":"30"}}}],
    "containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi"}}},
                  {"name":"b","resources":{"requests":{"cpu":"2"},"limits":{"fracpack.io/gpu-cores":"20"}}}],
    "overhead":{"cpu":"250m"}}})");
  auto r = kContract.pod_request(p);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->cpu_milli, 4750);
  EXPECT_EQ(r->memory_bytes, int64_t{1} << 30);
  ASSERT_EQ(r->containers.size(), 2u);
  EXPECT_TRUE(r->containers[0].init);  // the regular init container
  EXPECT_EQ(r->containers[0].name, "init");
  EXPECT_EQ(r->containers[0].cores, 300);
  EXPECT_FALSE(r->containers[1].init);
  EXPECT_TRUE(kContract.requests_gpu(p));
}

std::string node_json(const std::string& labels, const std::string& annotations) {
  return R"({"metadata":{"name":"n1","labels":{)" + labels + R"(},"annotations":{)" + annotations +
         R"(}},"status":{"allocatable":{"cpu":"64","memory":"256Gi","pods":"110"}}})";
}

Result<scheduling::NodeSpec> node(const std::string& labels, const std::string& annotations) {
  auto n = parse_node(node_json(labels, annotations), kNames.selection());
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.message());
  if (!n.ok()) return n.error();
  return kContract.node_spec(*n);
}

TEST(Contract, NodeFromDeviceAnnotation) {
  const std::string devices =
      R"("fracpack.io/gpu-devices":"[{\"index\":1,\"uuid\":\"GPU-b\",\"model\":\"A100\",\"memoryMiB\":81920,\"numa\":1},{\"index\":0,\"uuid\":\"GPU-a\",\"model\":\"A100\",\"memoryMiB\":40960,\"healthy\":false}]")";
  auto n = node(R"("nvidia.com/gpu.count":"8","nvidia.com/gpu.memory":"1","nvidia.com/gpu.product":"T4")",
                devices + R"(,"fracpack.io/gpu-cordon":"GPU-b")");
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_EQ(n->cpu_milli, 64000);
  EXPECT_EQ(n->memory_bytes, int64_t{256} << 30);
  ASSERT_EQ(n->cards.size(), 2u);  // the annotation wins over the labels
  EXPECT_EQ(n->cards[0].index, 0);
  EXPECT_EQ(n->cards[0].memory_mib, 40960);
  EXPECT_FALSE(n->cards[0].healthy);
  EXPECT_EQ(n->cards[1].uuid, "GPU-b");
  EXPECT_EQ(n->cards[1].numa, 1);
  EXPECT_TRUE(n->cards[1].cordoned);
}

TEST(Contract, NodeFromFeatureDiscoveryLabels) {
  auto n = node(R"("nvidia.com/gpu.count":"4","nvidia.com/gpu.memory":"15360","nvidia.com/gpu.product":"Tesla-T4")",
                R"("fracpack.io/gpu-cordon":"3")");
  ASSERT_TRUE(n.ok()) << n.message();
  ASSERT_EQ(n->cards.size(), 4u);
  EXPECT_EQ(n->cards[2].model, "Tesla-T4");
  EXPECT_EQ(n->cards[2].memory_mib, 15360);
  EXPECT_TRUE(n->cards[3].cordoned);
  EXPECT_FALSE(n->cards[0].cordoned);
  auto none = node(R"("kubernetes.io/os":"linux")", "");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->cards.empty());
}

TEST(Contract, BadNodesNameTheNodeAndField) {
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{R"("nvidia.com/gpu.count":"two")", ""}, "node n1: label nvidia.com/gpu.count: \"two\" is not an integer"},
      {{R"("nvidia.com/gpu.count":"2")", ""}, "node n1: label nvidia.com/gpu.memory is missing"},
      {{"", R"("fracpack.io/gpu-devices":"[{\"index\":")"}, "node n1: annotation fracpack.io/gpu-devices: invalid JSON"},
      {{"", R"("fracpack.io/gpu-devices":"not json")"}, "node n1: annotation fracpack.io/gpu-devices: expected a JSON array"},
      {{"", R"("fracpack.io/gpu-devices":"{}")"}, "expected a JSON array of cards"},
      {{"", R"("fracpack.io/gpu-devices":"[{\"index\":0}]")"}, "card [0]: memoryMiB is required"},
      {{"", R"("fracpack.io/gpu-devices":"[{\"index\":-1,\"memoryMiB\":1}]")"}, "index must be an integer"},
      {{"", R"("fracpack.io/gpu-devices":"[{\"index\":0,\"memoryMiB\":1},{\"index\":0,\"memoryMiB\":1}]")"},
       "card index 0 appears twice"},
      {{"", R"("fracpack.io/gpu-devices":"[{\"index\":0,\"memoryMiB\":\"16Gi\"}]")"}, "memoryMiB must be a positive integer"},
      {{R"("nvidia.com/gpu.count":"1","nvidia.com/gpu.memory":"100")", R"("fracpack.io/gpu-cordon":"GPU-zzz")"},
       "\"GPU-zzz\" is neither a card's UUID nor its index"},
  };
  for (const auto& [in, expect] : cases) {
    auto n = node(in.first, in.second);
    ASSERT_FALSE(n.ok()) << in.first << in.second;
    EXPECT_NE(n.message().find(expect), std::string::npos) << "got: " << n.message() << "\nwanted: " << expect;
  }
  auto bad_cpu = parse_node(R"({"metadata":{"name":"n2"},"status":{"allocatable":{"cpu":"4 cores"}}})", kNames.selection());
  ASSERT_TRUE(bad_cpu.ok());
  auto spec = kContract.node_spec(*bad_cpu);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.message().find("node n2: status.allocatable[cpu]"), std::string::npos) << spec.message();
}

TEST(Contract, AllocationRecordRoundTrips) {
  scheduling::Allocation a;
  a.node = "n1";
  a.containers.push_back({"main", false, {{0, "GPU-\"a\"", 8192, 500}, {3, "GPU-d", 8192, 500}}});
  a.containers.push_back({"warmup", true, {{3, "GPU-d", 100, 250}}});
  const std::string json = format_allocation(a);
  EXPECT_EQ(json,
            R"({"node":"n1","containers":[{"name":"main","cards":[{"index":0,"uuid":"GPU-\"a\"","memoryMiB":8192,"cores":50},)"
            R"({"index":3,"uuid":"GPU-d","memoryMiB":8192,"cores":50}]},{"name":"warmup","init":true,"cards":[{"index":3,"uuid":"GPU-d","memoryMiB":100,"cores":25}]}]})");
  auto back = parse_allocation(json);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, a);
  EXPECT_EQ(format_indices(a), "0,3");
  // The example of the contract, as documented.
  auto doc = parse_allocation(
      R"({"node":"n","containers":[{"name":"c","cards":[{"index":0,"uuid":"GPU-1","memoryMiB":8192,"cores":50}]}]})");
  ASSERT_TRUE(doc.ok()) << doc.message();
  EXPECT_EQ(doc->containers[0].cards[0].cores, 500);
}

TEST(Contract, MalformedAllocationRecords) {
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {"", "invalid JSON"},
           {"[]", "expected a JSON object"},
           {R"({"containers":[]})", "node is required"},
           {R"({"node":"n"})", "containers is required"},
           {R"({"node":"n","containers":[{"name":"c"}]})", "containers[0].cards is required"},
           {R"({"node":"n","containers":[{"name":"c","cards":[{"uuid":"x"}]}]})", "index is required"},
           {R"({"node":"n","containers":[{"name":"c","cards":[{"index":0,"cores":150}]}]})", "cores must be a number 0..100"},
           {R"({"node":"n","containers":[{"name":"c","cards":[{"index":0,"cores":12.25}]}]})", "more than one decimal"},
           {R"({"node":"n","containers":[{"name":"c","cards":[{"index":0},{"index":0}]}]})", "listed twice"},
           {R"({"node":"n","containers":[]} x)", "invalid JSON"},
       }) {
    auto r = parse_allocation(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find(expect), std::string::npos) << text << " -> " << r.message();
  }
}


// Found on a real kubelet (issue 31): cards published while kubelet had not
// registered the agent's device plugin were placed, and the pods ran with no
// card. The agent marks them; kubelet's own count of 0 says so too.
TEST(Contract, CardsAreNotOfferedWhileTheAgentsPluginIsNotRegistered) {
  auto node_with = [](const std::string& devices, const std::string& allocatable) {
    auto n = parse_node(R"({"metadata":{"name":"g1","annotations":{"fracpack.io/gpu-devices":)" + devices +
                            R"(}},"status":{"allocatable":{"cpu":"8",)" + allocatable + R"("memory":"64Gi"}}})",
                        kNames.selection());
    EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.message());
    return kContract.node_spec(*n);
  };
  const std::vector<scheduling::Card> cards = {scheduling::Card{0, "GPU-a", "A100", 40960}};
  auto unregistered = node_with(nlohmann::json(format_devices(cards, false)).dump(), "");
  ASSERT_TRUE(unregistered.ok()) << unregistered.message();
  EXPECT_TRUE(unregistered->cards[0].cordoned);
  EXPECT_NE(unregistered->unavailable.find("device plugin is not registered with kubelet"), std::string::npos) << unregistered->unavailable;
  auto zero = node_with(nlohmann::json(format_devices(cards)).dump(), R"("fracpack.io/gpu":"0",)");
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->cards[0].cordoned);
  EXPECT_NE(zero->unavailable.find("allocatable 0"), std::string::npos);
  // Registered, or a node whose cards an operator describes (no count of the
  // resource at all): offered.
  for (const std::string& a : {std::string(R"("fracpack.io/gpu":"32",)"), std::string()}) {
    auto ok = node_with(nlohmann::json(format_devices(cards)).dump(), a);
    ASSERT_TRUE(ok.ok());
    EXPECT_FALSE(ok->cards[0].cordoned) << a;
    EXPECT_TRUE(ok->unavailable.empty());
  }
  // The reason reaches the pod's filter reason.
  scheduling::Ledger ledger;
  ledger.upsert_node(*unregistered);
  auto req = request(R"("fracpack.io/gpu":"1")");
  ASSERT_TRUE(req.ok());
  const auto fit = scheduling::explain_fit(*req, *ledger.node("g1"), {}, scheduling::BestCardRanker{});
  EXPECT_FALSE(fit.fits);
  EXPECT_NE(fit.reason.find("not registered with kubelet"), std::string::npos) << fit.reason;
}

// Found on a real v1.20 kubelet (issue 31): an init container asking a share
// (fracpack.io/gpu-cores, not a node resource) made kubelet refuse the pod
// after the agent had answered Allocate (kubernetes#124255, fixed in 1.31).
// README "Isolation: a share is a limit": placement.unenforcedShares.
TEST(Contract, WhereTheClusterRefusesUnenforcedSharesASharesContainersMustBeEnforced) {
  const FracpackContract refusing(kNames, {}, FracpackOptions{UnenforcedShares::kRefuse});
  auto share = refusing.pod_request(pod_from(pod_json(R"("fracpack.io/gpu":"1","fracpack.io/gpu-memory":"8192")")));
  ASSERT_TRUE(share.ok()) << share.message();
  EXPECT_TRUE(share->containers[0].needs_enforcement) << "memory alone is a share";
  EXPECT_EQ(share->unenforced_opt_in, "annotation fracpack.io/isolation: none");
  auto whole = refusing.pod_request(pod_from(pod_json(R"("fracpack.io/gpu":"2")")));
  ASSERT_TRUE(whole.ok()) << whole.message();
  EXPECT_FALSE(whole->containers[0].needs_enforcement) << "a whole card has nothing to enforce";
  // The pod accepts an unenforced share.
  auto accepted = refusing.pod_request(
      pod_from(pod_json(R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"30")", R"("fracpack.io/isolation":"none")")));
  ASSERT_TRUE(accepted.ok()) << accepted.message();
  EXPECT_FALSE(accepted->containers[0].needs_enforcement);
  // Any other value is refused, naming the annotation.
  auto bad = refusing.pod_request(pod_from(pod_json(R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"30")", R"("fracpack.io/isolation":"mps")")));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("annotation fracpack.io/isolation: \"mps\" is not none"), std::string::npos) << bad.message();
  // The built-in default (allow) places as before, and says so at start.
  auto allowed = request(R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"30")");
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(allowed->containers[0].needs_enforcement);
  EXPECT_EQ(kContract.start_warnings().size(), 1u);
  EXPECT_TRUE(refusing.start_warnings().empty());
}

TEST(Contract, TheDevicesAnnotationSaysWhatEnforcesEachCard) {
  std::vector<scheduling::Card> cards(2);
  for (int i = 0; i < 2; ++i) {
    cards[i].index = i;
    cards[i].uuid = "GPU-" + std::to_string(i);
    cards[i].model = "A100";
    cards[i].memory_mib = 40960;
  }
  cards[1].isolation = scheduling::CardIsolation::kMps;
  const std::string text = format_devices(cards, true);
  EXPECT_EQ(text.find("\"isolation\":\"none\""), std::string::npos) << "none is not written: older agents wrote nothing";
  EXPECT_NE(text.find("\"isolation\":\"mps\""), std::string::npos) << text;
  const std::string node = R"({"metadata":{"name":"n1","annotations":{"fracpack.io/gpu-devices":)" + nlohmann::json(text).dump() +
                           R"(}},"status":{"allocatable":{"fracpack.io/gpu":"64"}}})";
  auto n = parse_node(node, kNames.selection());
  ASSERT_TRUE(n.ok()) << n.message();
  auto spec = kContract.node_spec(*n);
  ASSERT_TRUE(spec.ok()) << spec.message();
  ASSERT_EQ(spec->cards.size(), 2u);
  EXPECT_EQ(spec->cards[0].isolation, scheduling::CardIsolation::kNone);
  EXPECT_EQ(spec->cards[1].isolation, scheduling::CardIsolation::kMps);
  const std::string bad = R"({"metadata":{"name":"n1","annotations":{"fracpack.io/gpu-devices":)" +
                          nlohmann::json(R"([{"index":0,"memoryMiB":1024,"isolation":"vcuda"}])").dump() + R"(}}})";
  auto bad_spec = kContract.node_spec(*parse_node(bad, kNames.selection()));
  ASSERT_FALSE(bad_spec.ok());
  EXPECT_NE(bad_spec.message().find("isolation"), std::string::npos) << bad_spec.message();
}

TEST(Contract, InitContainerSharesAreRefusedOnKubeletsBefore131) {
  const std::string init = R"(,"initContainers":[{"name":"setup","resources":{"limits":{"fracpack.io/gpu":"1","fracpack.io/gpu-cores":"10"}}}])";
  auto with_init_share = kContract.pod_request(pod_from(pod_json(R"("fracpack.io/gpu":"1","fracpack.io/gpu-cores":"50")", "", init)));
  ASSERT_TRUE(with_init_share.ok()) << with_init_share.message();
  EXPECT_TRUE(with_init_share->init_names_unknown_resources);
  const std::string whole = R"(,"initContainers":[{"name":"setup","resources":{"limits":{"fracpack.io/gpu":"1"}}}])";
  auto with_whole = kContract.pod_request(pod_from(pod_json(R"("fracpack.io/gpu":"1")", "", whole)));
  ASSERT_TRUE(with_whole.ok());
  EXPECT_FALSE(with_whole->init_names_unknown_resources) << "whole cards: fracpack.io/gpu is a node resource";
  for (const auto& [version, fits] : std::vector<std::pair<std::string, bool>>{{"v1.20.2", false}, {"v1.30.9", false}, {"v1.31.0", true}, {"", true}}) {
    auto n = parse_node(R"({"metadata":{"name":"g1","labels":{"nvidia.com/gpu.count":"2","nvidia.com/gpu.memory":"16384"}},)"
                        R"("status":{"allocatable":{"cpu":"8","memory":"64Gi"},"nodeInfo":{"kubeletVersion":")" + version + R"("}}})",
                        kNames.selection());
    ASSERT_TRUE(n.ok()) << n.message();
    auto spec = kContract.node_spec(*n);
    ASSERT_TRUE(spec.ok());
    scheduling::Ledger ledger;
    ledger.upsert_node(*spec);
    const auto fit = scheduling::explain_fit(*with_init_share, *ledger.node("g1"), {}, scheduling::BestCardRanker{});
    EXPECT_EQ(fit.fits, fits) << version << ": " << fit.reason;
    EXPECT_EQ(scheduling::fits(*with_init_share, *ledger.node("g1"), {}), fits) << version;
    if (!fits) {
      EXPECT_TRUE(fit.unresolvable);
      EXPECT_NE(fit.reason.find("kubernetes#124255"), std::string::npos) << fit.reason;
    }
  }
}

}  // namespace
}  // namespace fracpack::k8s::contract_fracpack_test
