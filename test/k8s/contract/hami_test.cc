#include "k8s/contract/hami.h"

#include <gtest/gtest.h>

#include "k8s/contract/profiles.h"
#include "test/support/contract_pods.h"

namespace fracpack::k8s::hami_test {
namespace {

const HamiContract kContract;

using testing::container_json;
Pod pod_from(const std::string& json, const Contract& contract = kContract) { return testing::pod_from(json, contract); }

using testing::pod_json;

Result<scheduling::PodRequest> request(const std::string& limits, const std::string& annotations = "",
                                       const HamiContract& contract = kContract) {
  return contract.pod_request(pod_from(pod_json(container_json("main", limits), annotations), contract));
}

Node node_from(const std::string& annotations, const std::string& allocatable = R"("cpu":"8","memory":"32Gi")") {
  auto n = parse_node(R"({"metadata":{"name":"n1","annotations":{)" + annotations + R"(}},"status":{"allocatable":{)" +
                          allocatable + "}}}",
                      kContract.selection());
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.message());
  return n.ok() ? *n : Node{};
}

std::string register_annotation(const std::string& value) {
  std::string escaped;
  for (char ch : value) {
    if (ch == '"') escaped += '\\';
    escaped += ch;
  }
  return R"("hami.io/node-nvidia-register":")" + escaped + "\"";
}

// The node lock is the contract's: its annotation is the profile's name for
// it (the binders took the default name before, whatever the names said),
// its expiry and whether binds take it come from the profile's options.
TEST(HamiContract, TheNodeLockIsTheProfilesOwn) {
  ASSERT_NE(kContract.node_lock(), nullptr);
  EXPECT_EQ(kContract.node_lock(), &kContract.hami_node_lock());
  EXPECT_EQ(kContract.hami_node_lock().options().annotation, "hami.io/mutex.lock");
  EXPECT_TRUE(kContract.node_lock()->taken_by_binds());
  ContractConfig c;
  c.profile = Profile::kHami;
  c.hami.node_lock = "example.com/node-lock";
  c.hami_node_lock = false;
  c.hami_node_lock_expire = std::chrono::seconds(30);
  auto made = make_contract(c);
  ASSERT_TRUE(made.ok()) << made.message();
  const auto* lock = dynamic_cast<const HamiNodeLock*>((*made)->node_lock());
  ASSERT_NE(lock, nullptr);
  EXPECT_EQ(lock->options().annotation, "example.com/node-lock");
  EXPECT_EQ(lock->options().expire, std::chrono::seconds(30));
  EXPECT_FALSE(lock->taken_by_binds());
  const auto now = std::chrono::system_clock::now();
  // (Decoded with the profile's selection: it keeps the annotation it names.)
  auto held = parse_node(R"({"metadata":{"name":"n1","annotations":{"example.com/node-lock":")" +
                             format_node_lock(now - std::chrono::seconds(10), "team-a", "p") + R"("}}})",
                         (*made)->selection());
  ASSERT_TRUE(held.ok()) << held.message();
  EXPECT_EQ(lock->held_by(*held, now), "team-a/p");
  EXPECT_EQ(lock->held_by(*held, now + std::chrono::seconds(25)), "") << "older than nodeLockExpire";
  EXPECT_EQ(kContract.node_lock()->held_by(*held, now), "") << "another annotation name";
  c.profile = Profile::kFracpack;
  EXPECT_EQ((*make_contract(c))->node_lock(), nullptr) << "fracpack's agent serves binds in any order";
}

TEST(HamiContract, RequestsFollowHamisRules) {
  auto r = request(R"("nvidia.com/gpu":"2","nvidia.com/gpumem":"3000","nvidia.com/gpucores":"30")");
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->containers.size(), 1u);
  EXPECT_EQ(r->containers[0].cards, 2);
  EXPECT_EQ(r->containers[0].memory_mib, 3000);
  EXPECT_EQ(r->containers[0].cores, 300);
  EXPECT_FALSE(r->containers[0].alone);

  // A percentage rounds down (Totalmem * pct / 100).
  r = request(R"("nvidia.com/gpu":"1","nvidia.com/gpumem-percentage":"33")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_on(1000), 330);
  EXPECT_EQ(r->containers[0].memory_on(1001), 330);
  // MiB wins over the percentage when both are named.
  r = request(R"("nvidia.com/gpu":"1","nvidia.com/gpumem":"500","nvidia.com/gpumem-percentage":"50")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_on(16000), 500);
  // Neither named: the whole card (defaultMemory 0); cores default 0.
  r = request(R"("nvidia.com/gpu":"1")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_on(16000), 16000);
  EXPECT_EQ(r->containers[0].cores, 0);
  // Cores above 100 are clipped; 100 takes the card alone.
  r = request(R"("nvidia.com/gpu":"1","nvidia.com/gpucores":"150","nvidia.com/gpumem":"10")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].cores, 1000);
  EXPECT_TRUE(r->containers[0].alone);
  // A share without a count: kubelet would never ask HAMi's plugin for it.
  r = request(R"("nvidia.com/gpumem":"2000")");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("pod ml/p: container main: names a GPU share but not resources.limits[nvidia.com/gpu]"), std::string::npos)
      << r.message();
}

TEST(HamiContract, TheSchedulersDeviceConfigurationApplies) {
  const HamiContract contract({}, HamiOptions{1024, 2048, 20});
  auto r = request(R"("nvidia.com/gpu":"1","nvidia.com/gpumem":"3")", "", contract);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_mib, 3 * 1024) << "memoryFactor";
  EXPECT_EQ(r->containers[0].cores, 200) << "defaultCores";
  r = request(R"("nvidia.com/gpu":"1")", "", contract);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->containers[0].memory_on(16000), 2048) << "defaultMemory";
}

TEST(HamiContract, CardFiltersFromPodAnnotations) {
  auto r = request(R"("nvidia.com/gpu":"1")", R"("nvidia.com/use-gputype":"a100, H100","nvidia.com/nouse-gpuuuid":"GPU-1","nvidia.com/numa-bind":"true")");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->allowed_models, (std::vector<std::string>{"a100", "H100"}));
  EXPECT_EQ(r->model_match, scheduling::PodRequest::ModelMatch::kContainsIgnoringCase);
  EXPECT_EQ(r->uuid_exclude, std::vector<std::string>{"GPU-1"});
  EXPECT_TRUE(r->numa_single);
}

TEST(HamiContract, BadRequestsNameThePodAndTheField) {
  auto expect_error = [](const Result<scheduling::PodRequest>& r, const std::string& part) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("pod ml/p"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find(part), std::string::npos) << r.message();
  };
  expect_error(request(R"("nvidia.com/gpu":"1","nvidia.com/gpumem-percentage":"120")"), "nvidia.com/gpumem-percentage");
  expect_error(request(R"("nvidia.com/gpu":"-1")"), "nvidia.com/gpu");
  expect_error(request(R"("nvidia.com/gpu":"65")"), "maximum of 64");
  expect_error(request(R"("nvidia.com/gpu":"0","nvidia.com/gpumem":"10")"), "is 0 but a GPU share is named");
  expect_error(request(R"("nvidia.com/gpu":"1")", R"("nvidia.com/numa-bind":"maybe")"), "nvidia.com/numa-bind");
  expect_error(request(R"("nvidia.com/gpu":"1")", R"("nvidia.com/vgpu-mode":"mig")"), "hami-core shares only");
  expect_error(request(R"("nvidia.com/gpu":"1")", R"("nvidia.com/use-gputype":" , ")"), "names nothing");
  // An init container asking for HAMi resources: its plugin cannot serve it.
  auto init = kContract.pod_request(pod_from(R"({"metadata":{"name":"p","namespace":"ml","uid":"u1"},"spec":{"initContainers":[)" +
                                             container_json("warm", R"("nvidia.com/gpu":"1")") + R"(],"containers":[{"name":"main"}]}})"));
  expect_error(init, "init container warm");
  // Two profiles' resources in one pod.
  const auto hami = make_contract(testing::profile_config("hami"));
  ASSERT_TRUE(hami.ok());
  auto mixed = (*hami)->pod_request(pod_from(pod_json(container_json("main", R"("nvidia.com/gpu":"1","aliyun.com/gpu-mem":"2")")), **hami));
  expect_error(mixed, "aliyun.com/gpu-mem (the gpushare profile)");
}

TEST(HamiContract, NodesFromTheJsonRegister) {
  const std::string reg =
      R"([{"id":"GPU-a","count":10,"devmem":23028,"devcore":100,"type":"NVIDIA GeForce RTX 4090","health":true},)"
      R"({"id":"GPU-b","index":1,"count":10,"devmem":23028,"devcore":100,"type":"NVIDIA GeForce RTX 4090","numa":1},)"
      R"({"id":"GPU-c","index":2,"count":4,"devmem":1000,"devcore":100,"type":"NVIDIA A100","mode":"mig","health":true}])";
  auto spec = kContract.node_spec(node_from(register_annotation(reg)));
  ASSERT_TRUE(spec.ok()) << spec.message();
  ASSERT_EQ(spec->cards.size(), 3u);
  EXPECT_EQ(spec->cards[0].index, 0) << "an omitted index is 0";
  EXPECT_EQ(spec->cards[0].uuid, "GPU-a");
  EXPECT_EQ(spec->cards[0].max_sharers, 10);
  EXPECT_EQ(spec->cards[0].memory_mib, 23028);
  EXPECT_TRUE(spec->cards[0].healthy);
  EXPECT_FALSE(spec->cards[1].healthy) << "an omitted health is false";
  EXPECT_EQ(spec->cards[1].numa, 1);
  EXPECT_TRUE(spec->cards[2].cordoned) << "MIG cards stay with HAMi";
  EXPECT_EQ(spec->cpu_milli, 8000);

  // A plugin that reports no devices: every card unhealthy (CheckHealth).
  spec = kContract.node_spec(node_from(register_annotation(reg), R"("cpu":"8","memory":"32Gi","nvidia.com/gpu":"0")"));
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_FALSE(spec->cards[0].healthy);
}

TEST(HamiContract, TheRegisterIsWrittenAsThePluginWritesIt) {
  std::vector<scheduling::Card> cards(3);
  for (int i = 0; i < 3; ++i) {
    cards[i].index = i;
    cards[i].uuid = "GPU-" + std::to_string(i);
    cards[i].model = "NVIDIA-A100 \"sxm\"";
    cards[i].memory_mib = 40960;
    cards[i].max_sharers = 10;
    cards[i].isolation = scheduling::CardIsolation::kHamiCore;  // "mode":"hami-core"
  }
  cards[1].numa = 1;
  cards[2].healthy = false;
  const std::string reg = format_hami_register(cards);
  EXPECT_EQ(reg.substr(1, reg.find("},")),
            R"({"id":"GPU-0","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA-A100 \"sxm\"","mode":"hami-core","health":true})")
      << "zero fields omitted, as Go's omitempty leaves them";
  auto back = parse_hami_register(reg);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, cards);
  EXPECT_EQ(format_hami_register({}), "[]");
}

TEST(HamiContract, NodesFromTheLegacyTextRegister) {
  auto spec = kContract.node_spec(node_from(register_annotation(
      "GPU-00552014,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:GPU-00552015,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,1,false:")));
  ASSERT_TRUE(spec.ok()) << spec.message();
  ASSERT_EQ(spec->cards.size(), 2u);
  EXPECT_EQ(spec->cards[0].index, 0);
  EXPECT_EQ(spec->cards[1].index, 1) << "7 fields: no index, the register's order stands in";
  EXPECT_EQ(spec->cards[1].numa, 1);
  EXPECT_FALSE(spec->cards[1].healthy);
  spec = kContract.node_spec(node_from(register_annotation("GPU-x,10,32768,100,NVIDIA-T4,0,true,3,hami-core:")));
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->cards[0].index, 3);
}

TEST(HamiContract, BadRegistersNameTheNodeAndTheDevice) {
  for (const auto& [reg, part] : std::vector<std::pair<std::string, std::string>>{
           {R"([{"id":"GPU-a","count":10,"devmem":"big","devcore":100}])", "devmem must be an integer"},
           {R"([{"count":10,"devmem":100,"devcore":100}])", "id (the card's UUID) is required"},
           {R"([{"id":"GPU-a","devmem":100,"devcore":100}])", "count (the split count) must be at least 1"},
           {R"([{"id":"GPU-a","count":1,"devmem":-5,"devcore":100}])", "devmem must be an integer"},
           {R"([{"id":"GPU-a","count":1,"devmem":5,"devcore":100},{"id":"GPU-a","count":1,"devmem":5,"devcore":100,"index":1}])",
            "uuid GPU-a appears twice"},
           {R"([{"id":"GPU-a")", "JSON"},
           {"GPU-a,10,100:", "3 fields"},
           {"GPU-a,ten,100,100,T4,0,true:", "count \"ten\""},
       }) {
    auto spec = kContract.node_spec(node_from(register_annotation(reg)));
    ASSERT_FALSE(spec.ok()) << reg;
    EXPECT_NE(spec.message().find("node n1: annotation hami.io/node-nvidia-register"), std::string::npos) << spec.message();
    EXPECT_NE(spec.message().find(part), std::string::npos) << spec.message();
  }
}

TEST(HamiContract, TheRecordHasOneEntryPerContainer) {
  scheduling::Allocation a{"n1", {{"worker", false, {{0, "GPU-a", 4096, 300}, {1, "GPU-b", 4096, 300}}}}};
  const Pod pod = pod_from(pod_json(container_json("sidecar", R"("cpu":"1")") + "," + container_json("worker", R"("nvidia.com/gpu":"2")") + "," +
                                    container_json("log", R"("cpu":"1")")));
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
  StringMap m = kContract.allocation_annotations(pod, a, scheduling::NodeSpec{}, t);
  EXPECT_EQ(*find(m, "hami.io/vgpu-devices-to-allocate"), ";GPU-a,NVIDIA,4096,30:GPU-b,NVIDIA,4096,30:;;");
  EXPECT_EQ(*find(m, "hami.io/vgpu-devices-allocated"), *find(m, "hami.io/vgpu-devices-to-allocate"));
  EXPECT_EQ(*find(m, "hami.io/vgpu-node"), "n1");
  EXPECT_EQ(*find(m, "hami.io/vgpu-time"), "1767225600");
  EXPECT_EQ(*find(m, "hami.io/bind-time"), "1767225600");
  EXPECT_EQ(*find(m, "hami.io/bind-phase"), "allocating");
}

TEST(HamiContract, RecordsAreReadBackByUuid) {
  scheduling::NodeSpec node{"n1", 8000, 0, {}, {}, {}, 0};
  node.cards = {scheduling::Card{0, "GPU-a", "T4", 16000}, scheduling::Card{5, "GPU-b", "T4", 16000}};
  const std::string containers = container_json("sidecar", R"("cpu":"1")") + "," + container_json("worker", R"("nvidia.com/gpu":"2")");
  auto read = [&](const std::string& record, const std::string& vgpu_node = "n1", const scheduling::NodeSpec* n = nullptr) {
    const std::string ann = R"("hami.io/vgpu-devices-allocated":")" + record + R"(","hami.io/vgpu-node":")" + vgpu_node + "\"";
    return kContract.recorded_allocation(pod_from(pod_json(containers, ann, R"("nodeName":"n1",)")), n);
  };
  auto r = read(";GPU-a,NVIDIA,4096,30:GPU-b[0-3],NVIDIA,4096,30:;", "n1", &node);
  ASSERT_EQ(r.kind, RecordedAllocation::Kind::kAllocation) << r.problem;
  ASSERT_EQ(r.allocation.containers.size(), 1u);
  EXPECT_EQ(r.allocation.containers[0].name, "worker");
  EXPECT_EQ(r.allocation.containers[0].cards[1], (scheduling::CardShare{5, "GPU-b", 4096, 300}));
  // HAMi's own decoder drops empty entries: a record without them still names the GPU container.
  r = read("GPU-a,NVIDIA,4096,30:;", "n1", &node);
  ASSERT_EQ(r.kind, RecordedAllocation::Kind::kAllocation) << r.problem;
  EXPECT_EQ(r.allocation.containers[0].name, "worker");
  EXPECT_EQ(read(";GPU-a,NVIDIA,1,1:;").kind, RecordedAllocation::Kind::kNeedsNode);
  // HAMi's decoder accepts a last entry without its ";".
  r = read(";GPU-a,NVIDIA,4096,30:", "n1", &node);
  ASSERT_EQ(r.kind, RecordedAllocation::Kind::kAllocation) << r.problem;
  EXPECT_EQ(r.allocation.containers[0].name, "worker");
  for (const auto& [record, part] : std::vector<std::pair<std::string, std::string>>{
           {";GPU-z,NVIDIA,1,1:;", "not among node n1's registered cards"},
           {";GPU-a,NVIDIA,x,1:;", "memory \"x\""},
           {";GPU-a,NVIDIA:;", "expected UUID,type,memory,cores"},
           {";GPU-a,NVIDIA,1,1:GPU-a,NVIDIA,1,1:;", "twice"},
       }) {
    r = read(record, "n1", &node);
    EXPECT_EQ(r.kind, RecordedAllocation::Kind::kMalformed) << record;
    EXPECT_NE(r.problem.find("hami.io/vgpu-devices-allocated"), std::string::npos) << r.problem;
  }
  r = read(";GPU-a,NVIDIA,1,1:;", "n2", &node);
  EXPECT_EQ(r.kind, RecordedAllocation::Kind::kMalformed);
  EXPECT_NE(r.problem.find("names node n2"), std::string::npos) << r.problem;
}

}  // namespace
}  // namespace fracpack::k8s::hami_test
