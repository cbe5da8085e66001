// The other profiles as the served one sees them (k8s/contract/foreign.h):
// a node another profile's agent registered is left alone, and a pod naming
// two profiles' resources is refused.
#include "k8s/contract/foreign.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::foreign_test {
namespace {

ForeignProfiles served_by_fracpack() {
  return ForeignProfiles("fracpack", {ForeignProfile{"hami", {"hami.io/node-nvidia-register"}, {}, {"nvidia.com/gpu", "nvidia.com/gpumem"}},
                                      ForeignProfile{"gpushare", {}, {"aliyun.com/gpu-mem"}, {"aliyun.com/gpu-mem"}}});
}

Node node(StringMap annotations = {}, StringMap allocatable = {}, StringMap capacity = {}) {
  Node n;
  n.meta.name = "n1";
  n.meta.annotations = std::move(annotations);
  n.allocatable = std::move(allocatable);
  n.capacity = std::move(capacity);
  return n;
}

Pod pod(StringMap limits, StringMap init_limits = {}) {
  Pod p;
  p.meta.namespace_name = "ml";
  p.meta.name = "train";
  Container c;
  c.name = "main";
  c.limits = std::move(limits);
  p.containers.push_back(c);
  if (!init_limits.empty()) {
    Container i;
    i.name = "init";
    i.limits = std::move(init_limits);
    p.init_containers.push_back(i);
  }
  return p;
}

TEST(ForeignProfiles, ANodeWithoutAnotherProfilesMarkIsOurs) {
  const ForeignProfiles f = served_by_fracpack();
  EXPECT_EQ(f.node_owner(node()), "");
  EXPECT_EQ(f.node_owner(node({{"fracpack.io/gpu-devices", "x"}}, {{"cpu", "8"}})), "");
  // A zero count of another plugin's resource is no mark.
  EXPECT_EQ(f.node_owner(node({}, {{"aliyun.com/gpu-mem", "0"}}, {{"aliyun.com/gpu-mem", "0"}})), "");
}

TEST(ForeignProfiles, AnotherAgentsAnnotationOrResourceMarksTheNode) {
  const ForeignProfiles f = served_by_fracpack();
  const std::string hami = f.node_owner(node({{"hami.io/node-nvidia-register", "GPU-0,..."}}));
  EXPECT_NE(hami.find("the hami profile's node agent (annotation hami.io/node-nvidia-register)"), std::string::npos) << hami;
  EXPECT_NE(hami.find("serves the fracpack profile"), std::string::npos) << hami;
  const std::string gpushare = f.node_owner(node({}, {{"aliyun.com/gpu-mem", "32"}}));
  EXPECT_NE(gpushare.find("the gpushare profile's node agent (resource aliyun.com/gpu-mem)"), std::string::npos) << gpushare;
  // In capacity only (allocatable dropped to 0 while the plugin restarts): still marked.
  EXPECT_NE(f.node_owner(node({}, {{"aliyun.com/gpu-mem", "0"}}, {{"aliyun.com/gpu-mem", "32"}})), "");
  // An unreadable count is not proof of absence.
  EXPECT_NE(f.node_owner(node({}, {{"aliyun.com/gpu-mem", "lots"}})), "");
}

TEST(ForeignProfiles, NodeBasicsCarryAllocatableAndWhyTheNodeIsExcluded) {
  const ForeignProfiles f = served_by_fracpack();
  auto ours = f.node_basics(node({}, {{"cpu", "4"}, {"memory", "8Gi"}}));
  ASSERT_TRUE(ours) << ours.message();
  EXPECT_EQ(ours->name, "n1");
  EXPECT_EQ(ours->cpu_milli, 4000);
  EXPECT_EQ(ours->memory_bytes, int64_t{8} << 30);
  EXPECT_TRUE(ours->excluded.empty());
  auto theirs = f.node_basics(node({{"hami.io/node-nvidia-register", "x"}}, {{"cpu", "4"}}));
  ASSERT_TRUE(theirs) << theirs.message();
  EXPECT_EQ(theirs->excluded, f.node_owner(node({{"hami.io/node-nvidia-register", "x"}})));
  EXPECT_FALSE(f.node_basics(node({}, {{"cpu", "four"}})));
}

TEST(ForeignProfiles, APodNamingTwoProfilesResourcesIsRefused) {
  const ForeignProfiles f = served_by_fracpack();
  const std::vector<std::string> own = {"fracpack.io/gpu", "fracpack.io/gpu-memory"};
  EXPECT_TRUE(f.check_pod(pod({{"fracpack.io/gpu", "1"}}), own).ok());
  // Only another profile's resources: not ours to refuse (the filter says it is not ours).
  EXPECT_TRUE(f.check_pod(pod({{"nvidia.com/gpu", "1"}}), own).ok());
  const Status both = f.check_pod(pod({{"fracpack.io/gpu", "1"}, {"nvidia.com/gpu", "1"}}), own);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.message().find("pod ml/train: asks for nvidia.com/gpu (the hami profile) beside the fracpack profile's"),
            std::string::npos)
      << both.message();
  // In an init container too.
  EXPECT_FALSE(f.check_pod(pod({{"fracpack.io/gpu-memory", "1024"}}, {{"aliyun.com/gpu-mem", "2"}}), own).ok());
}

TEST(ForeignProfiles, ExtendKeepsWhatTheChecksRead) {
  const ForeignProfiles f = served_by_fracpack();
  Selection s;
  s.annotation_prefixes = {"fracpack.io/"};
  s.resources = {"cpu", "memory", "nvidia.com/gpu"};
  f.extend(s);
  EXPECT_EQ(s.annotation_prefixes, (std::vector<std::string>{"fracpack.io/", "hami.io/node-nvidia-register"}));
  EXPECT_EQ(s.resources, (std::vector<std::string>{"cpu", "memory", "nvidia.com/gpu", "nvidia.com/gpumem", "aliyun.com/gpu-mem"}))
      << "each once";
  EXPECT_TRUE(s.capacity) << "a node resource is read in capacity too";
  Selection plain;
  ForeignProfiles("gpushare", {ForeignProfile{"hami", {"hami.io/node-nvidia-register"}, {}, {}}}).extend(plain);
  EXPECT_FALSE(plain.capacity);
  EXPECT_EQ(f.profiles().size(), 2u);
}

}  // namespace
}  // namespace fracpack::k8s::foreign_test
