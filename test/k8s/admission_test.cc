// k8s/admission: the webhook's decisions, AdmissionReview in, decision out:
// each tenant attack of README "Security model" refused with a message
// naming the object and the field; what tenants legitimately do allowed;
// bad input an error (400), never an allow.
#include "k8s/admission.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/contract/hami.h"

namespace fracpack::k8s::admission_test {
namespace {

using json = nlohmann::json;

constexpr const char* kExtender = "system:serviceaccount:fracpack-system:fracpack";

AdmissionPolicy policy_of(const Contract& contract, std::vector<std::string> writers = {kExtender}) {
  // The shipped configuration's limiter (manifests/config.yaml: mps).
  return AdmissionPolicy{contract.guarded_annotations(), contract.pod_resources(), std::move(writers), {"fracpack"}, {},
                         true, scheduling::CardIsolation::kMps, contract.device_resource()};
}

const AdmissionPolicy kPolicy = policy_of(FracpackContract{});

json pod(json annotations = json::object(), json limits = {{"fracpack.io/gpu", "1"}}, std::string node = "",
         std::string scheduler = "fracpack") {
  json spec = {{"schedulerName", scheduler},
               {"containers", json::array({{{"name", "main"}, {"image", "cuda"}, {"resources", {{"limits", limits}}}}})}};
  if (!node.empty()) spec["nodeName"] = node;
  json meta = {{"name", "p"}, {"namespace", "team-b"}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

std::string review(const std::string& operation, const json& object, const json& old = nullptr, const std::string& user = "alice",
                   const std::string& resource = "pods", const std::string& sub = "", const std::string& version = "admission.k8s.io/v1") {
  json request = {{"uid", "req-1"},
                  {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                  {"resource", {{"group", ""}, {"version", "v1"}, {"resource", resource}}},
                  {"namespace", "team-b"},
                  {"name", "p"},
                  {"operation", operation},
                  {"userInfo", {{"username", user}, {"groups", {"system:authenticated"}}}},
                  {"object", object},
                  {"oldObject", old}};
  if (!sub.empty()) request["subResource"] = sub;
  return json{{"apiVersion", version}, {"kind", "AdmissionReview"}, {"request", request}}.dump();
}

AdmissionResult decide(const std::string& body, const AdmissionPolicy& p = kPolicy) {
  auto r = review_admission(body, p);
  EXPECT_TRUE(r) << r.message();
  if (!r) return {};
  const json answer = json::parse(r->response);
  EXPECT_EQ(answer["response"]["uid"], "req-1");
  EXPECT_EQ(answer["response"]["allowed"], r->allowed);
  if (!r->allowed) {
    EXPECT_EQ(answer["response"]["status"]["code"], 403);
    EXPECT_EQ(answer["response"]["status"]["message"], r->message);
  }
  return *r;
}

const char* kRecord = R"({"node":"gpu-1","containers":[{"name":"main","cards":[{"index":2,"memoryMiB":0,"cores":0}]}]})";

TEST(Admission, APodCreatedWithARecordIsRefusedNamingTheField) {
  // Attack 1: spec.nodeName and a hand-written record naming a victim's card.
  const AdmissionResult r = decide(review("CREATE", pod({{"fracpack.io/allocation", kRecord}}, {{"fracpack.io/gpu", "1"}}, "gpu-1")));
  ASSERT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("pod team-b/p: metadata.annotations[fracpack.io/allocation] is part of the GPU allocation record"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("user alice is not one of " + std::string(kExtender)), std::string::npos) << r.message;
  // Attack 2: a pod asking no GPU, with a record naming two free cards.
  EXPECT_FALSE(decide(review("CREATE", pod({{"fracpack.io/allocation", kRecord}}, {{"cpu", "1"}}, "gpu-1"))).allowed);
  // A signature or the flat card list alone is refused the same way.
  EXPECT_FALSE(decide(review("CREATE", pod({{"fracpack.io/allocation-signature", "ed25519:x:y"}}))).allowed);
  EXPECT_FALSE(decide(review("CREATE", pod({{"fracpack.io/gpu-indices", "0"}}))).allowed);
  // A controller copying a template is refused too: the user asked it.
  EXPECT_FALSE(decide(review("CREATE", pod({{"fracpack.io/allocation", kRecord}}), nullptr, "system:serviceaccount:kube-system:replicaset-controller"))
                   .allowed);
}

TEST(Admission, AGpuPodThatBypassesFracpacksSchedulerIsRefused) {
  const AdmissionResult by_node = decide(review("CREATE", pod({}, {{"fracpack.io/gpu-cores", "50"}}, "gpu-1")));
  ASSERT_FALSE(by_node.allowed);
  EXPECT_NE(by_node.message.find("pod team-b/p: spec.nodeName is set (gpu-1) on a pod asking fracpack.io/gpu-cores"), std::string::npos)
      << by_node.message;
  const AdmissionResult by_scheduler = decide(review("CREATE", pod({}, {{"fracpack.io/gpu", "1"}}, "", "default-scheduler")));
  ASSERT_FALSE(by_scheduler.allowed);
  EXPECT_NE(by_scheduler.message.find("spec.schedulerName is \"default-scheduler\" on a pod asking fracpack.io/gpu"), std::string::npos)
      << by_scheduler.message;
  // An init container counts.
  json init = pod({}, {{"cpu", "1"}}, "gpu-1");
  init["spec"]["initContainers"] = json::array({{{"name", "setup"}, {"resources", {{"requests", {{"fracpack.io/gpu-memory", "1024"}}}}}}});
  EXPECT_FALSE(decide(review("CREATE", init)).allowed);
}

// README "Isolation: a share is a limit": a GPU container may not set the
// variables or mount over the paths its card's limiter reads (the node is
// not known yet: every limiter's). The node agent refuses it too, at
// Allocate, for its own cards' limiter: this holds without the webhook.
TEST(Admission, AGpuContainerThatWouldLiftItsOwnLimitIsRefusedNamingTheField) {
  json mps = pod({}, {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-cores", "30"}});
  mps["spec"]["containers"][0]["env"] = json::array({{{"name", "MODEL"}, {"value", "x"}}, {{"name", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}, {"value", "100"}}});
  const AdmissionResult r = decide(review("CREATE", mps));
  EXPECT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("spec.containers[0] (main): env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), std::string::npos) << r.message;
  json shm = pod({}, {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-memory", "4096"}});
  shm["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "s"}, {"mountPath", "/dev/./shm"}}});
  EXPECT_FALSE(decide(review("CREATE", shm)).allowed) << "an MPS client cannot have its own /dev/shm";
  json prefixed = pod({}, {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-cores", "30"}});
  prefixed["spec"]["containers"][0]["envFrom"] = json::array({{{"prefix", "CUDA_"}, {"configMapRef", {{"name", "c"}}}}});
  EXPECT_FALSE(decide(review("CREATE", prefixed)).allowed);
  // Naming its own cards: any GPU container, a whole card too.
  json cards = pod();
  cards["spec"]["containers"][0]["env"] = json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}});
  EXPECT_NE(decide(review("CREATE", cards)).message.find("env NVIDIA_VISIBLE_DEVICES"), std::string::npos);
  // Ordinary settings; a whole card's LD_PRELOAD and /dev/shm; another limiter's
  // variables; the same variables in a container without cards.
  json ordinary = pod();
  ordinary["spec"]["containers"][0]["envFrom"] = json::array({{{"configMapRef", {{"name", "app"}}}}});
  ordinary["spec"]["containers"][0]["env"] = json::array({{{"name", "LD_PRELOAD"}, {"value", "libjemalloc.so"}}});
  ordinary["spec"]["containers"][0]["volumeMounts"] = json::array({{{"name", "d"}, {"mountPath", "/data"}}, {{"name", "s"}, {"mountPath", "/dev/shm"}}});
  EXPECT_TRUE(decide(review("CREATE", ordinary)).allowed) << decide(review("CREATE", ordinary)).message;
  json hami_vars = pod({}, {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-cores", "30"}});
  hami_vars["spec"]["containers"][0]["env"] = json::array({{{"name", "CUDA_DEVICE_SM_LIMIT"}, {"value", "100"}}});
  EXPECT_TRUE(decide(review("CREATE", hami_vars)).allowed) << "no HAMi-core in this cluster";
  json sidecar = pod();
  sidecar["spec"]["containers"].push_back({{"name", "proxy"}, {"image", "envoy"}, {"env", json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}}})}});
  EXPECT_TRUE(decide(review("CREATE", sidecar)).allowed) << "a container without cards: the runtime's setting, README Security model";
  // With a peer's profile its own plugin decides (guard_limits off).
  AdmissionPolicy peer = kPolicy;
  peer.guard_limits = false;
  EXPECT_TRUE(decide(review("CREATE", mps), peer).allowed);
}

TEST(Admission, WhatTenantsDoEveryDayIsAllowed) {
  EXPECT_TRUE(decide(review("CREATE", pod())).allowed) << "a GPU pod for fracpack's scheduler";
  EXPECT_TRUE(decide(review("CREATE", pod({{"fracpack.io/gpu-model", "A100"}, {"team", "b"}}))).allowed) << "the pod's own annotations";
  EXPECT_TRUE(decide(review("CREATE", pod({}, {{"cpu", "1"}}, "cpu-1", "default-scheduler"))).allowed) << "not a GPU pod";
  // Editing one's own pod without touching the record.
  json before = pod({{"fracpack.io/allocation", kRecord}});
  json after = before;
  after["metadata"]["labels"] = {{"tier", "gold"}};
  after["metadata"]["annotations"]["note"] = "hello";
  EXPECT_TRUE(decide(review("UPDATE", after, before)).allowed);
  EXPECT_TRUE(decide(review("DELETE", nullptr, before)).allowed);
}

TEST(Admission, ChangingOrRemovingTheRecordIsRefusedToAllButItsWriters) {
  // Attack 3: patch your own running pod's record to another card.
  json before = pod({{"fracpack.io/allocation", kRecord}, {"fracpack.io/allocation-signature", "ed25519:k:s"}});
  json moved = before;
  moved["metadata"]["annotations"]["fracpack.io/allocation"] = std::string(kRecord).replace(std::string(kRecord).find("2"), 1, "3");
  const AdmissionResult r = decide(review("UPDATE", moved, before));
  ASSERT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("leave it as it is"), std::string::npos) << r.message;
  json removed = before;
  removed["metadata"]["annotations"].erase("fracpack.io/allocation-signature");
  EXPECT_FALSE(decide(review("UPDATE", removed, before)).allowed);
  json added = pod();
  added["metadata"]["annotations"] = {{"fracpack.io/gpu-indices", "1"}};
  EXPECT_FALSE(decide(review("UPDATE", added, pod())).allowed);
  EXPECT_TRUE(decide(review("UPDATE", moved, before, kExtender)).allowed);
}

TEST(Admission, BindingsCarryingARecordComeFromFracpackOnly) {
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", {{"name", "p"}, {"namespace", "team-b"}, {"annotations", {{"fracpack.io/allocation", kRecord}}}}},
                        {"target", {{"kind", "Node"}, {"name", "gpu-1"}}}};
  const AdmissionResult forged = decide(review("CREATE", binding, nullptr, "mallory", "pods", "binding"));
  ASSERT_FALSE(forged.allowed);
  EXPECT_NE(forged.message.find("this Binding writes metadata.annotations[fracpack.io/allocation]"), std::string::npos) << forged.message;
  EXPECT_TRUE(decide(review("CREATE", binding, nullptr, kExtender, "pods", "binding")).allowed);
  json plain = binding;
  plain["metadata"].erase("annotations");
  EXPECT_TRUE(decide(review("CREATE", plain, nullptr, "system:kube-scheduler", "pods", "binding")).allowed) << "kube-scheduler's own Bindings";
}

TEST(Admission, APeersAnnotationsAreGuardedAndItsPluginKeepsItsRights) {
  const std::string plugin = "system:serviceaccount:kube-system:hami-device-plugin";
  const AdmissionPolicy hami = policy_of(HamiContract{}, {kExtender, plugin});
  json before = pod({{"hami.io/vgpu-devices-to-allocate", ";GPU-a,NVIDIA,8000,25:;"}, {"hami.io/bind-phase", "allocating"}},
                    {{"nvidia.com/gpu", "1"}});
  json after = before;
  after["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = ";GPU-victim,NVIDIA,8000,25:;";
  EXPECT_FALSE(decide(review("UPDATE", after, before, "alice"), hami).allowed) << "a user steering HAMi's plugin";
  json consumed = before;
  consumed["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = ";;";
  consumed["metadata"]["annotations"]["hami.io/bind-phase"] = "success";
  EXPECT_TRUE(decide(review("UPDATE", consumed, before, plugin), hami).allowed) << "HAMi's plugin consuming its record";
}

TEST(Admission, AnythingElseIsRefusedAndV1beta1IsAnsweredInKind) {
  const AdmissionResult other = decide(review("CREATE", json{{"kind", "ConfigMap"}}, nullptr, "alice", "configmaps"));
  ASSERT_FALSE(other.allowed) << "a security check must not say yes to what it does not know";
  EXPECT_NE(other.message.find("validates pods (CREATE, UPDATE) and pods/binding (CREATE) only; it was sent CREATE of configmaps"),
            std::string::npos) << other.message;
  EXPECT_FALSE(decide(review("UPDATE", pod(), pod(), "alice", "pods", "status")).allowed);
  auto beta = review_admission(review("CREATE", pod(), nullptr, "alice", "pods", "", "admission.k8s.io/v1beta1"), kPolicy);
  ASSERT_TRUE(beta);
  EXPECT_EQ(json::parse(beta->response)["apiVersion"], "admission.k8s.io/v1beta1");
}

TEST(Admission, BadInputIsAnErrorNeverAnAllow) {
  for (const std::string& body : std::vector<std::string>{
           "", "not json", "[]", "{}", R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"})",
           R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v2","request":{"uid":"x"}})",
           R"({"kind":"Pod","apiVersion":"admission.k8s.io/v1","request":{"uid":"x"}})",
           R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"operation":"CREATE"}})",
           R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":"yes"})",
           review("CREATE", nullptr), review("UPDATE", pod(), nullptr), std::string(100000, '[')}) {
    auto r = review_admission(body, kPolicy);
    EXPECT_FALSE(r) << body.substr(0, 80);
  }
  // Wrong types where objects are expected: the pod is read as the extender
  // reads it (k8s/decode.cc), and what it cannot read is refused, naming the
  // field (the API server's validation lets no such pod through; the
  // webhook does not trust that it ran).
  // A pod it cannot read that names no resource of the contract is not the
  // contract's to judge: allowed (the webhook sees every pod).
  json odd = pod();
  odd["spec"]["containers"] = "all of them";
  EXPECT_TRUE(decide(review("CREATE", odd)).allowed) << "nothing of the contract is asked";
  json odd_gpu = pod({}, {{"fracpack.io/gpu", "1"}});
  odd_gpu["spec"]["initContainers"] = "all of them";
  AdmissionResult refused = decide(review("CREATE", odd_gpu));
  EXPECT_FALSE(refused.allowed);
  EXPECT_NE(refused.message.find("spec.initContainers"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.message.find('%'), std::string::npos) << refused.message;
  // A tenant cannot hide the resource from that test by escaping its name:
  // the review is parsed and written out again before the search, so
  // "fracpack.io\/gpu" and "\u0066racpack.io/gpu" read as the name itself.
  for (const std::string& key : {std::string(R"(fracpack.io\/gpu)"), std::string(R"(\u0066racpack.io/gpu)")}) {
    std::string body = review("CREATE", json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"team-b"},)"
                                                    R"("spec":{"schedulerName":"default-scheduler","initContainers":"x",)"
                                                    R"("containers":[{"name":"main","resources":{"limits":{")" + key + R"(":"1"}}}]}})"));
    EXPECT_FALSE(decide(body).allowed) << key;
  }
  // A huge object is decided like any other (the HTTP layer bounds the size).
  json big = pod({{"fracpack.io/allocation", std::string(3 << 20, 'x')}});
  EXPECT_FALSE(decide(review("CREATE", big)).allowed);
}

}  // namespace
}  // namespace fracpack::k8s::admission_test
