// What every extender request body must be, whichever verb reads it
// (k8s/extender_body.h): JSON throughout, not only in the fields read, for
// small bodies (simdjson's DOM parser checks them) and large ones
// (check_json_text does) alike.
#include "k8s/extender_body.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"
#include "k8s/extender_args.h"
#include "k8s/extender_binding.h"
#include "k8s/extender_preemption.h"
#include "test/support/extender_args_bodies.h"

namespace fracpack::k8s::extender_body_test {
namespace {

const Selection kSel = FracpackContract{}.selection();
constexpr const char* kPod = fracpack::testing::kExtenderPod;
using fracpack::testing::parse_args;

TEST(ExtenderArgs, TheWholeDocumentMustBeJsonNotOnlyTheFieldsRead) {
  // Small bodies and large ones (over 1 MiB: checked another way) alike.
  for (const std::string& pad : {std::string(), R"(,"Pad":")" + std::string(1100 << 10, 'x') + "\""}) {
    const std::string args = std::string(R"({"Pod":)") + kPod + R"(,"NodeNames":["n1"])" + pad;
    EXPECT_TRUE(parse_args(args + "}", kSel).ok()) << pad.size();
    for (const std::string junk : {R"(,"Junk":NaN})", R"(,"Junk":[tru]})", R"(,"Junk":{"a" 1}})", R"(,"Junk":[1 2]})",
                                   R"(,"Junk":"\x"})", R"(,"Junk":01})", R"(,"Junk":[1,]})", R"(,"Junk":{"\q":1}})"}) {
      auto a = parse_args(args + junk, kSel);
      ASSERT_FALSE(a.ok()) << junk << " after " << pad.size() << " bytes";
      EXPECT_NE(a.message().find("invalid JSON"), std::string::npos) << junk << ": " << a.message();
    }
  }
  // Inside a field the decoder skips in the pod, and in a full Node echoed back.
  const std::string pod_junk = R"({"Pod":{"metadata":{"name":"p","uid":"u"},"status":{"x":tru}},"NodeNames":["n1"]})";
  EXPECT_FALSE(parse_args(pod_junk, kSel).ok());
  const std::string node_junk = std::string(R"({"Pod":)") + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":"n1"},"status":{"images":[nul]}}]}})";
  EXPECT_FALSE(parse_args(node_junk, kSel).ok());
  EXPECT_FALSE(parse_binding_args(R"({"PodName":"p","PodNamespace":"ml","PodUID":"u","Node":"n1","X":NaN})").ok());
  EXPECT_FALSE(parse_preemption_args(std::string(R"({"Pod":)") + kPod + R"(,"X":[tru]})", kSel).ok());
}

TEST(KeyMatch, AnyCaseAndAnExactMatchIsNeverOverridden) {
  extender_body::KeyMatch k;
  EXPECT_TRUE(k.take("nodenames", "NodeNames"));
  EXPECT_TRUE(k.take("NodeNames", "NodeNames"));
  EXPECT_FALSE(k.take("NODENAMES", "NodeNames")) << "after the exact spelling";
  EXPECT_TRUE(k.take("NodeNames", "NodeNames"));
  EXPECT_FALSE(k.take("NodeName", "NodeNames"));
}

}  // namespace
}  // namespace fracpack::k8s::extender_body_test
