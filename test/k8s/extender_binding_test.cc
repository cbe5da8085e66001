// ExtenderBindingArgs decoded as Go decodes it, and the binding reply.
#include "k8s/extender_binding.h"

#include <gtest/gtest.h>

#include "k8s/limits.h"

namespace fracpack::k8s::extender_binding_test {
namespace {

TEST(BindingArgs, ReadsTheFourFieldsAndRefusesEmptyOnes) {
  auto b = parse_binding_args(R"({"PodName":"p","PodNamespace":"ml","PodUID":"u-1","Node":"n1"})");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->pod_name, "p");
  EXPECT_EQ(b->pod_namespace, "ml");
  EXPECT_EQ(b->pod_uid, "u-1");
  EXPECT_EQ(b->node, "n1");
  auto no_node = parse_binding_args(R"({"PodName":"p","PodNamespace":"ml","PodUID":"u-1","Node":""})");
  ASSERT_FALSE(no_node.ok());
  EXPECT_NE(no_node.message().find("Node is empty"), std::string::npos) << no_node.message();
  EXPECT_EQ(format_binding_result(""), R"({"Error":""})");
}

TEST(BindingArgs, KubernetesSizeLimitsAreCheckedByField) {
  auto b = parse_binding_args(R"({"PodName":"p","PodNamespace":")" + std::string(64, 's') + R"(","PodUID":"u","Node":"n1"})");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.message().find("ExtenderBindingArgs.PodNamespace: 64 bytes"), std::string::npos) << b.message();
}

}  // namespace
}  // namespace fracpack::k8s::extender_binding_test
