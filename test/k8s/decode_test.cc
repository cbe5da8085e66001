#include "k8s/objects.h"

#include <gtest/gtest.h>

#include "k8s/contract/fracpack.h"

namespace fracpack::k8s::decode_test {
namespace {

const Selection kSel = ContractNames{}.selection();

TEST(Objects, DecodesThePodFieldsAndSkipsTheRest) {
  auto p = parse_pod(R"({"kind":"Pod","apiVersion":"v1",
    "metadata":{"name":"train-0","namespace":"ml","uid":"3b0e","resourceVersion":"48213",
      "creationTimestamp":"2024-05-01T10:00:00Z","labels":{"app":"x"},
      "annotations":{"fracpack.io/gpu-model":"A100","kubectl.kubernetes.io/last-applied-configuration":"{huge}"},
      "managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},
    "spec":{"schedulerName":"fracpack","priority":100,"nodeName":"",
      "volumes":[{"name":"v","emptyDir":{}}],
      "containers":[{"name":"main","image":"busybox","env":[{"name":"A","value":"\u00e9"}],
        "resources":{"limits":{"fracpack.io/gpu":"2","cpu":"4","example.com/other":"1"},"requests":{"cpu":"4"}}}]},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False"}]}})",
                     kSel);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->meta.name, "train-0");
  EXPECT_EQ(p->meta.namespace_name, "ml");
  EXPECT_EQ(p->meta.uid, "3b0e");
  EXPECT_EQ(p->meta.resource_version, "48213");
  EXPECT_EQ(p->meta.creation_timestamp, "2024-05-01T10:00:00Z");
  EXPECT_TRUE(p->meta.labels.empty()) << "labels outside the selection are skipped";
  ASSERT_EQ(p->meta.annotations.size(), 1u);
  EXPECT_EQ(*p->meta.annotation("fracpack.io/gpu-model"), "A100");
  EXPECT_EQ(p->scheduler_name, "fracpack");
  EXPECT_EQ(p->priority, 100);
  EXPECT_EQ(p->phase, "Pending");
  ASSERT_EQ(p->containers.size(), 1u);
  EXPECT_EQ(p->containers[0].limits.size(), 2u) << "example.com/other is not in the selection";
  EXPECT_EQ(*find(p->containers[0].limits, "fracpack.io/gpu"), "2");
  EXPECT_EQ(p->key(), "ml/train-0");
}

TEST(Objects, NullsAndDeletion) {
  auto p = parse_pod(R"({"metadata":{"name":"a","labels":null,"annotations":null,"creationTimestamp":null,
    "deletionTimestamp":"2024-05-01T10:00:00Z"},"spec":{"containers":null,"initContainers":null,"priority":null},"status":{}})",
                     kSel);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_TRUE(p->meta.deleting);
  EXPECT_TRUE(p->containers.empty());
  EXPECT_TRUE(p->meta.creation_timestamp.empty());
}

TEST(Objects, ErrorsSayWhereAndWhat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"metadata":{"name":5}})", "metadata.name: expected a string"},
      {R"({"metadata":{"name":"a"},"spec":{"containers":{}}})", "spec.containers: expected an array"},
      {R"({"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":true}}}]}})",
       "spec.containers[0].resources.limits.cpu: expected a quantity string"},
      {R"({"metadata":{"name":"a"},"spec":{"priority":"high"}})", "spec.priority: expected a 32-bit integer"},
      {R"({"metadata":{"name":"a"})", "invalid JSON"},
      {R"({"metadata":{"name":"a"}} {"x":1})", "trailing content"},
      {R"([1,2])", "expected an object"},
      {"", "invalid JSON"},
  };
  for (const auto& [json, expect] : cases) {
    auto p = parse_pod(json, kSel);
    ASSERT_FALSE(p.ok()) << json;
    EXPECT_NE(p.message().find(expect), std::string::npos) << json << "\n -> " << p.message();
  }
}

TEST(Objects, ListsOfEveryShape) {
  // A typed list: items without kind.
  auto typed = parse_list(R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"tok"},
    "items":[{"metadata":{"name":"n1"},"spec":{"unschedulable":true},"status":{"allocatable":{"cpu":"8"}}}]})",
                          kSel);
  ASSERT_TRUE(typed.ok()) << typed.message();
  EXPECT_EQ(typed->resource_version, "77");
  EXPECT_EQ(typed->continue_token, "tok");
  ASSERT_EQ(typed->nodes.size(), 1u);
  EXPECT_TRUE(typed->nodes[0].unschedulable);
  EXPECT_EQ(*find(typed->nodes[0].allocatable, "cpu"), "8");
  // kubectl's v1 List: keys sorted (items before kind), items carry their kind.
  auto mixed = parse_list(R"({"apiVersion":"v1","items":[
      {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"d"}},
      {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}},
      {"apiVersion":"v1","metadata":{"name":"cm"},"kind":"ConfigMap","data":{"k":"v"}}],
    "kind":"List","metadata":{"resourceVersion":""}})",
                          kSel);
  ASSERT_TRUE(mixed.ok()) << mixed.message();
  EXPECT_EQ(mixed->nodes.size(), 1u);
  EXPECT_EQ(mixed->pods.size(), 1u);
  EXPECT_EQ(mixed->config_maps.size(), 1u);
  EXPECT_EQ(*find(mixed->config_maps[0].data, "k"), "v");
  EXPECT_EQ(mixed->skipped, 1u);
  auto bad = parse_list(R"({"kind":"PodList","items":[{"metadata":{"name":"ok"}},{"metadata":{"name":1}}]})", kSel);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("items[1]: metadata.name: expected a string"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace fracpack::k8s::decode_test
