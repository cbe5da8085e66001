// Kubernetes' own rules every contract applies alike
// (k8s/contract/kubernetes_rules.h): extended resources, the effective pod
// request, allocatable, share resources, whether a pod asks for cards.
#include "k8s/contract/kubernetes_rules.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::kubernetes_rules_test {
namespace {

Container container(const std::string& name, StringMap requests, StringMap limits = {}, bool sidecar = false) {
  Container c;
  c.name = name;
  c.requests = std::move(requests);
  c.limits = std::move(limits);
  c.restart_always = sidecar;
  return c;
}

TEST(KubernetesRules, ExtendedResourcesNeedALimitAndAnEqualRequest) {
  bool named = true;
  auto none = extended_resource(container("c", {{"cpu", "1"}}), "fracpack.io/gpu", named);
  ASSERT_TRUE(none) << none.message();
  EXPECT_EQ(*none, 0);
  EXPECT_FALSE(named);
  // A limit alone: Kubernetes defaults the request to it.
  auto limit = extended_resource(container("c", {}, {{"fracpack.io/gpu", "2"}}), "fracpack.io/gpu", named);
  ASSERT_TRUE(limit) << limit.message();
  EXPECT_EQ(*limit, 2);
  EXPECT_TRUE(named);
  auto both = extended_resource(container("c", {{"fracpack.io/gpu", "2"}}, {{"fracpack.io/gpu", "2"}}), "fracpack.io/gpu", named);
  ASSERT_TRUE(both) << both.message();
  EXPECT_EQ(*both, 2);
  auto request_only = extended_resource(container("c", {{"fracpack.io/gpu", "2"}}), "fracpack.io/gpu", named);
  ASSERT_FALSE(request_only);
  EXPECT_TRUE(named);
  EXPECT_NE(request_only.message().find("a limit must be set"), std::string::npos) << request_only.message();
  auto unequal = extended_resource(container("c", {{"fracpack.io/gpu", "1"}}, {{"fracpack.io/gpu", "2"}}), "fracpack.io/gpu", named);
  ASSERT_FALSE(unequal);
  EXPECT_NE(unequal.message().find("must equal"), std::string::npos) << unequal.message();
  auto fraction = extended_resource(container("c", {}, {{"fracpack.io/gpu", "500m"}}), "fracpack.io/gpu", named);
  ASSERT_FALSE(fraction) << "an extended resource is a whole number";
  EXPECT_NE(fraction.message().find("resources.limits[fracpack.io/gpu]"), std::string::npos) << fraction.message();
}

TEST(KubernetesRules, TheEffectiveRequestIsTheLargerOfAppsAndEachInitContainer) {
  Pod pod;
  pod.containers = {container("a", {{"cpu", "500m"}, {"memory", "1Gi"}}), container("b", {}, {{"cpu", "1"}})};
  auto cpu = effective_request(pod, "cpu", true);
  ASSERT_TRUE(cpu) << cpu.message();
  EXPECT_EQ(*cpu, 1500) << "a missing request is the limit";
  auto mem = effective_request(pod, "memory", false);
  ASSERT_TRUE(mem) << mem.message();
  EXPECT_EQ(*mem, int64_t{1} << 30);
  // An init container runs alone: the larger one counts.
  pod.init_containers = {container("init", {{"cpu", "4"}})};
  EXPECT_EQ(*effective_request(pod, "cpu", true), 4000);
  pod.init_containers = {container("init", {{"cpu", "1"}})};
  EXPECT_EQ(*effective_request(pod, "cpu", true), 1500);
  // Overhead comes on top.
  pod.overhead = {{"cpu", "250m"}};
  EXPECT_EQ(*effective_request(pod, "cpu", true), 1750);
}

TEST(KubernetesRules, SidecarsRunBesideTheLaterInitContainersAndTheApps) {
  Pod pod;
  pod.containers = {container("app", {{"cpu", "1"}})};
  pod.init_containers = {container("side", {{"cpu", "500m"}}, {}, true), container("init", {{"cpu", "2"}})};
  // The init container runs beside the sidecar started before it: 2.5; the
  // apps beside the sidecar: 1.5.
  EXPECT_EQ(*effective_request(pod, "cpu", true), 2500);
  // A sidecar started after the init container does not run beside it.
  pod.init_containers = {container("init", {{"cpu", "2"}}), container("side", {{"cpu", "500m"}}, {}, true)};
  EXPECT_EQ(*effective_request(pod, "cpu", true), 2000);
  pod.init_containers = {container("side", {{"cpu", "500m"}}, {}, true), container("init", {{"cpu", "100m"}})};
  EXPECT_EQ(*effective_request(pod, "cpu", true), 1500);
}

TEST(KubernetesRules, ErrorsNameTheContainerAndTheField) {
  Pod pod;
  pod.meta.namespace_name = "ml";
  pod.meta.name = "train";
  pod.containers = {container("main", {{"cpu", "lots"}})};
  auto cpu = effective_request(pod, "cpu", true);
  ASSERT_FALSE(cpu);
  EXPECT_NE(cpu.message().find("container main"), std::string::npos) << cpu.message();
  EXPECT_NE(cpu.message().find("resources.requests[cpu]"), std::string::npos) << cpu.message();
  pod.containers = {};
  pod.init_containers = {container("setup", {{"memory", "12Q"}})};
  auto mem = effective_request(pod, "memory", false);
  ASSERT_FALSE(mem);
  EXPECT_NE(mem.message().find("init container setup"), std::string::npos) << mem.message();
  scheduling::PodRequest r;
  const Status facts = pod_facts(pod, r);
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.message().find("pod ml/train"), std::string::npos) << facts.message();
  pod.init_containers = {};
  pod.overhead = {{"cpu", "x"}};
  auto overhead = effective_request(pod, "cpu", true);
  ASSERT_FALSE(overhead);
  EXPECT_NE(overhead.message().find("spec.overhead[cpu]"), std::string::npos) << overhead.message();
}

TEST(KubernetesRules, PodFactsCarryIdentityCpuAndMemory) {
  Pod pod;
  pod.meta.namespace_name = "ml";
  pod.meta.name = "train";
  pod.meta.uid = "u-1";
  pod.containers = {container("main", {{"cpu", "2"}, {"memory", "512Mi"}})};
  scheduling::PodRequest r;
  ASSERT_TRUE(pod_facts(pod, r).ok());
  EXPECT_EQ(r.uid, "u-1");
  EXPECT_EQ(r.namespace_name, "ml");
  EXPECT_EQ(r.name, "train");
  EXPECT_EQ(r.cpu_milli, 2000);
  EXPECT_EQ(r.memory_bytes, int64_t{512} << 20);
}

TEST(KubernetesRules, NodeAllocatable) {
  Node node;
  node.meta.name = "n1";
  node.allocatable = {{"cpu", "7910m"}, {"memory", "32Gi"}, {"fracpack.io/gpu", "4"}};
  scheduling::NodeSpec spec;
  ASSERT_TRUE(node_allocatable(node, spec).ok());
  EXPECT_EQ(spec.name, "n1");
  EXPECT_EQ(spec.cpu_milli, 7910);
  EXPECT_EQ(spec.memory_bytes, int64_t{32} << 30);
  node.allocatable = {{"memory", "lots"}};
  const Status bad = node_allocatable(node, spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("node n1: status.allocatable[memory]"), std::string::npos) << bad.message();
}

TEST(KubernetesRules, ShareResourcesSayWhatAContainerAsksFor) {
  auto shares = [](StringMap limits) {
    return share_resources(container("c", {}, std::move(limits)), "x/gpu", "x/mem", "x/pct", "x/cores");
  };
  auto none = shares({});
  ASSERT_TRUE(none) << none.message();
  EXPECT_FALSE(none->asks());
  auto count = shares({{"x/gpu", "2"}});
  ASSERT_TRUE(count) << count.message();
  EXPECT_TRUE(count->asks());
  EXPECT_FALSE(count->names_share());
  EXPECT_EQ(count->count, 2);
  auto zero = shares({{"x/gpu", "0"}});
  ASSERT_TRUE(zero) << zero.message();
  EXPECT_FALSE(zero->asks()) << "0 GPUs asks for none";
  auto share = shares({{"x/mem", "4096"}, {"x/cores", "30"}});
  ASSERT_TRUE(share) << share.message();
  EXPECT_TRUE(share->asks());
  EXPECT_TRUE(share->names_share());
  EXPECT_EQ(share->memory, 4096);
  EXPECT_EQ(share->cores, 30);
  EXPECT_TRUE(share->has_memory && share->has_cores && !share->has_percent && !share->has_count);
  auto zero_with_share = shares({{"x/gpu", "0"}, {"x/pct", "50"}});
  ASSERT_FALSE(zero_with_share);
  EXPECT_NE(zero_with_share.message().find("is 0 but a GPU share is named"), std::string::npos) << zero_with_share.message();
  EXPECT_TRUE(shares({{"x/gpu", "64"}}));
  auto too_many = shares({{"x/gpu", "65"}});
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.message().find("maximum of 64"), std::string::npos) << too_many.message();
}

TEST(KubernetesRules, NamesResourceLooksAtEveryContainer) {
  Pod pod;
  pod.containers = {container("a", {{"cpu", "1"}})};
  pod.init_containers = {container("i", {}, {{"x/gpu", "1"}})};
  EXPECT_TRUE(names_resource(pod, "x/gpu")) << "an init container's limit";
  EXPECT_TRUE(names_resource(pod, "cpu"));
  EXPECT_FALSE(names_resource(pod, "y/gpu"));
  EXPECT_TRUE(names_any_resource(pod, {"y/gpu", "x/gpu"}));
  EXPECT_FALSE(names_any_resource(pod, {"y/gpu", "z"}));
  EXPECT_FALSE(names_any_resource(pod, {}));
  // The first named, init containers first, as the webhook's refusal names it.
  EXPECT_EQ(named_resource(pod, {"y/gpu", "cpu", "x/gpu"}), "x/gpu");
  EXPECT_EQ(named_resource(pod.containers[0], {"y/gpu", "cpu"}), "cpu");
  EXPECT_EQ(named_resource(pod, {"y/gpu"}), "");
}

TEST(KubernetesRules, KubeletMinorVersion) {
  EXPECT_EQ(kubelet_minor("v1.20.2"), 20);
  EXPECT_EQ(kubelet_minor("v1.31.0-eks-1234"), 31);
  EXPECT_EQ(kubelet_minor("v1.9"), 9);
  EXPECT_EQ(kubelet_minor(""), 0);
  EXPECT_EQ(kubelet_minor("1.20.2"), 0);
  EXPECT_EQ(kubelet_minor("v2.0.0"), 0);
  EXPECT_EQ(kubelet_minor("v1."), 0);
  EXPECT_EQ(kubelet_minor("v1.x"), 0);
}

TEST(KubernetesRules, NamesDomainsAndSelections) {
  EXPECT_EQ(name_domain("hami.io/vgpu-node"), "hami.io/");
  EXPECT_EQ(name_domain("plain"), "plain");
  EXPECT_EQ(in_quotes("x y"), "\"x y\"");
  const std::string a = "hami.io/node-nvidia-register", b = "hami.io/vgpu-devices", c = "fracpack.io/cordon";
  const Selection s = selection_of({&a, &b, &c}, {"nvidia.com/gpu"});
  EXPECT_EQ(s.annotation_prefixes, (std::vector<std::string>{"fracpack.io/", "hami.io/"})) << "one each, sorted";
  EXPECT_EQ(s.resources, (std::vector<std::string>{"cpu", "memory", "nvidia.com/gpu"}));
}

}  // namespace
}  // namespace fracpack::k8s::kubernetes_rules_test
