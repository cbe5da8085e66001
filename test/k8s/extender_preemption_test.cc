// ExtenderPreemptionArgs decoded as Go decodes it (meta victims or full
// pods), and the result as NodeNameToMetaVictims.
#include "k8s/extender_preemption.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/limits.h"

namespace fracpack::k8s::extender_preemption_test {
namespace {

const Selection kSel = FracpackContract{}.selection();
constexpr const char* kPod = R"({"metadata":{"name":"p","namespace":"ml","uid":"u-1"},"spec":{"containers":[{"name":"c"}]}})";

TEST(PreemptionArgs, MetaVictimsAndFullVictims) {
  auto meta = parse_preemption_args(std::string(R"({"Pod":)") + kPod +
                                        R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"},{"UID":"v2"}],"NumPDBViolations":1}}})",
                                    kSel);
  ASSERT_TRUE(meta.ok()) << meta.message();
  EXPECT_TRUE(meta->meta);
  EXPECT_EQ(meta->victims.at("n1"), (std::vector<std::string>{"v1", "v2"}));
  EXPECT_EQ(meta->pdb_violations.at("n1"), 1);
  auto full = parse_preemption_args(std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToVictims":{"n2":{"Pods":[)" + kPod +
                                        R"(],"NumPDBViolations":0}}})",
                                    kSel);
  ASSERT_TRUE(full.ok()) << full.message();
  EXPECT_FALSE(full->meta);
  EXPECT_EQ(full->victims.at("n2"), (std::vector<std::string>{"u-1"}));
  EXPECT_EQ(format_preemption_result({{"n1", MetaVictims{{"v1"}, 0}}}),
            R"({"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"v1"}],"NumPDBViolations":0}}})");
}

TEST(PreemptionArgs, KubernetesSizeLimitsAreCheckedByField) {
  const std::string long_name(254, 'n');
  auto p = parse_preemption_args(std::string(R"({"Pod":)") + kPod + R"(,"NodeNameToMetaVictims":{")" + long_name + R"(":{"Pods":[]}}})", kSel);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.message().find("NodeNameToMetaVictims key: 254 bytes"), std::string::npos) << p.message();
}

}  // namespace
}  // namespace fracpack::k8s::extender_preemption_test
