// Profiles by name (k8s/contract/profiles.h): the contract a deployment
// speaks, each knowing the other profiles' marks.
#include "k8s/contract/profiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace fracpack::k8s::profiles_test {
namespace {

TEST(Profiles, EveryKnownNameMakesItsContract) {
  EXPECT_EQ(profile_names(), (std::vector<std::string>{"fracpack", "hami", "gpushare", "tke"}));
  for (const std::string& name : profile_names()) {
    auto profile = parse_profile(name);
    ASSERT_TRUE(profile) << profile.message();
    EXPECT_EQ(profile_name(*profile), name);
    ContractConfig c;
    c.profile = *profile;
    auto contract = make_contract(c);
    ASSERT_TRUE(contract) << name << ": " << contract.message();
    EXPECT_EQ((*contract)->name(), name);
  }
}

TEST(Profiles, AnUnknownNameListsTheKnownOnes) {
  auto profile = parse_profile("nvidia");
  ASSERT_FALSE(profile);
  EXPECT_EQ(profile.message(), "unknown profile \"nvidia\" (known: fracpack, hami, gpushare, tke)");
  EXPECT_FALSE(parse_profile("Fracpack")) << "names are exact";
}

// What outside contract/ asks of a profile, asked here.
TEST(Profiles, TheNodeAgentServesFracpackAndTkeAndTheWebhookGuardsFracpacksLimits) {
  EXPECT_EQ(kDefaultProfile, Profile::kFracpack);
  EXPECT_EQ(ContractConfig{}.profile, kDefaultProfile);
  std::vector<std::string> served, guarded;
  for (Profile p : profiles()) {
    if (node_agent_serves(p)) served.emplace_back(profile_name(p));
    if (webhook_guards_limits(p)) guarded.emplace_back(profile_name(p));
  }
  EXPECT_EQ(served, (std::vector<std::string>{"fracpack", "tke"}));
  EXPECT_EQ(guarded, (std::vector<std::string>{"fracpack"}));
}

TEST(Profiles, ContractsUseTheConfiguredNames) {
  ContractConfig c;
  c.fracpack.gpu = "example.com/gpu";
  auto contract = make_contract(c);
  ASSERT_TRUE(contract) << contract.message();
  const auto resources = (*contract)->pod_resources();
  EXPECT_NE(std::find(resources.begin(), resources.end(), "example.com/gpu"), resources.end());
  EXPECT_EQ(std::find(resources.begin(), resources.end(), "fracpack.io/gpu"), resources.end());
}

// Each profile leaves alone the nodes another profile's agent registered.
TEST(Profiles, EachContractExcludesTheOtherProfilesNodes) {
  Node hami_node;
  hami_node.meta.name = "n-hami";
  hami_node.meta.annotations = {{"hami.io/node-nvidia-register", "GPU-0,10,16384,100,NVIDIA-T4,0,true:"}};
  hami_node.allocatable = {{"cpu", "8"}, {"memory", "32Gi"}};
  Node fracpack_node;
  fracpack_node.meta.name = "n-fracpack";
  fracpack_node.meta.annotations = {{"fracpack.io/gpu-devices", "x"}};
  fracpack_node.allocatable = {{"cpu", "8"}, {"memory", "32Gi"}, {"fracpack.io/gpu", "64"}};
  Node gpushare_node;
  gpushare_node.meta.name = "n-gpushare";
  gpushare_node.allocatable = {{"cpu", "8"}, {"memory", "32Gi"}, {"aliyun.com/gpu-mem", "32"}};
  // fracpack's agent run with the tke profile: fracpack's annotation, GPUManager's resource.
  Node tke_node;
  tke_node.meta.name = "n-tke";
  tke_node.meta.annotations = {{"fracpack.io/gpu-devices", "x"}};
  tke_node.allocatable = {{"cpu", "8"}, {"memory", "32Gi"}, {"tencent.com/vcuda-core", "200"}};
  const std::map<std::string, const Node*> owned = {
      {"hami", &hami_node}, {"fracpack", &fracpack_node}, {"gpushare", &gpushare_node}, {"tke", &tke_node}};
  for (const std::string& serving : profile_names()) {
    ContractConfig c;
    c.profile = *parse_profile(serving);
    auto contract = make_contract(c);
    ASSERT_TRUE(contract) << contract.message();
    for (const auto& [owner, n] : owned) {
      if (owner == serving) continue;
      auto spec = (*contract)->node_spec(*n);
      ASSERT_TRUE(spec) << serving << " on " << owner << "'s node: " << spec.message();
      EXPECT_NE(spec->excluded.find("the " + owner + " profile's node agent"), std::string::npos)
          << serving << " on " << owner << "'s node: \"" << spec->excluded << "\"";
    }
  }
}

}  // namespace
}  // namespace fracpack::k8s::profiles_test
