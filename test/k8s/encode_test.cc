// The encoders of the reduced objects (k8s/objects.h, encode.cc): what
// fracpack knows of a node, pod or ConfigMap as JSON the decoders read back
// the same, and the v1 List a snapshot is.
#include "k8s/objects.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fracpack::k8s::encode_test {
namespace {

using json = nlohmann::json;

// Keeps every name the objects below use.
Selection everything() {
  Selection s;
  s.annotation_prefixes = {"x.io/"};
  s.label_prefixes = {"l.io/"};
  s.resources = {"cpu", "memory", "x.io/gpu"};
  s.capacity = true;
  return s;
}

ObjectMeta meta(const std::string& name) {
  ObjectMeta m;
  m.name = name;
  m.namespace_name = "ml";
  m.uid = "uid-" + name;
  m.resource_version = "42";
  m.creation_timestamp = "2024-05-06T07:08:09Z";
  m.labels = {{"l.io/team", "a"}};
  m.annotations = {{"x.io/record", "{\"node\":\"n1\",\"q\":\"\\\"quoted\\\"\"}"}, {"x.io/empty", ""}};
  return m;
}

void expect_same_meta(const ObjectMeta& a, const ObjectMeta& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.namespace_name, b.namespace_name);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.resource_version, b.resource_version);
  EXPECT_EQ(a.creation_timestamp, b.creation_timestamp);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.annotations, b.annotations);
}

void expect_same_containers(const std::vector<Container>& a, const std::vector<Container>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].requests, b[i].requests) << a[i].name;
    EXPECT_EQ(a[i].limits, b[i].limits) << a[i].name;
    EXPECT_EQ(a[i].restart_always, b[i].restart_always) << a[i].name;
  }
}

Pod full_pod() {
  Pod p;
  p.meta = meta("train");
  p.node_name = "n1";
  p.scheduler_name = "fracpack-scheduler";
  p.phase = "Running";
  p.priority = -5;
  Container main;
  main.name = "main";
  main.requests = {{"cpu", "500m"}, {"memory", "1Gi"}};
  main.limits = {{"x.io/gpu", "1"}};
  Container limits_only;
  limits_only.name = "helper";
  limits_only.limits = {{"cpu", "1"}};
  p.containers = {main, limits_only};
  Container sidecar;
  sidecar.name = "proxy";
  sidecar.restart_always = true;
  sidecar.requests = {{"cpu", "100m"}};
  Container init;
  init.name = "setup";
  p.init_containers = {sidecar, init};
  p.overhead = {{"cpu", "250m"}};
  return p;
}

TEST(Encode, APodReadsBackTheSame) {
  const Pod p = full_pod();
  const std::string text = pod_json(p);
  auto back = parse_pod(text, everything());
  ASSERT_TRUE(back) << back.message() << "\n" << text;
  expect_same_meta(back->meta, p.meta);
  EXPECT_EQ(back->node_name, p.node_name);
  EXPECT_EQ(back->scheduler_name, p.scheduler_name);
  EXPECT_EQ(back->phase, p.phase);
  EXPECT_EQ(back->priority, p.priority);
  EXPECT_EQ(back->overhead, p.overhead);
  expect_same_containers(back->containers, p.containers);
  expect_same_containers(back->init_containers, p.init_containers);
  // And encodes to the same text again.
  EXPECT_EQ(pod_json(*back), text);
}

TEST(Encode, APodIsAV1PodObject) {
  Pod p;
  p.meta.name = "bare";
  const json j = json::parse(pod_json(p));
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["kind"], "Pod");
  EXPECT_EQ(j["metadata"], json({{"name", "bare"}})) << "empty fields are left out";
  EXPECT_EQ(j["spec"], json({{"containers", json::array()}}));
  EXPECT_EQ(j["status"], json::object());
}

// objects.h says the encoders write "JSON that the decoders above read back
// the same"; pod_json left out spec.schedulingGates, status.nominatedNodeName
// and metadata.deletionTimestamp: a gated, nominated or terminating pod in
// /debug/snapshot read back as an ordinary one.
TEST(Encode, GatesNominationAndDeletionReadBackToo) {
  Pod p = full_pod();
  p.scheduling_gated = true;
  p.nominated_node_name = "n2";
  p.meta.deleting = true;
  auto back = parse_pod(pod_json(p), everything());
  ASSERT_TRUE(back) << back.message();
  EXPECT_TRUE(back->scheduling_gated);
  EXPECT_EQ(back->nominated_node_name, "n2");
  EXPECT_TRUE(back->meta.deleting);
}

TEST(Encode, ANodeReadsBackTheSame) {
  Node n;
  n.meta = meta("n1");
  n.unschedulable = true;
  n.allocatable = {{"cpu", "7910m"}, {"memory", "30Gi"}, {"x.io/gpu", "4"}};
  n.capacity = {{"cpu", "8"}, {"memory", "32Gi"}, {"x.io/gpu", "4"}};
  n.kubelet_version = "v1.28.3";
  const std::string text = node_json(n);
  auto back = parse_node(text, everything());
  ASSERT_TRUE(back) << back.message() << "\n" << text;
  expect_same_meta(back->meta, n.meta);
  EXPECT_TRUE(back->unschedulable);
  EXPECT_EQ(back->allocatable, n.allocatable);
  EXPECT_EQ(back->capacity, n.capacity);
  EXPECT_EQ(back->kubelet_version, n.kubelet_version);
  EXPECT_EQ(node_json(*back), text);
}

TEST(Encode, ANodeWithoutCapacityShowsItsAllocatableThere) {
  Node n;
  n.meta.name = "n1";
  n.allocatable = {{"cpu", "4"}};
  const json j = json::parse(node_json(n));
  EXPECT_EQ(j["status"]["capacity"], json({{"cpu", "4"}}));
  EXPECT_EQ(j["status"]["allocatable"], json({{"cpu", "4"}}));
  EXPECT_EQ(j["spec"], json::object()) << "schedulable: no field";
  Node empty;
  empty.meta.name = "e";
  empty.kubelet_version = "v1.20.2";
  const json e = json::parse(node_json(empty));
  EXPECT_EQ(e["status"], json({{"nodeInfo", {{"kubeletVersion", "v1.20.2"}}}}));
}

TEST(Encode, AConfigMapReadsBackTheSame) {
  ConfigMap c;
  c.meta = meta("workload");
  c.data = {{"workload.yaml", "shapes:\n  - cores: 500\n"}, {"note", "a \"quoted\" value"}};
  const std::string text = config_map_json(c);
  auto back = parse_config_map(text, everything());
  ASSERT_TRUE(back) << back.message() << "\n" << text;
  expect_same_meta(back->meta, c.meta);
  EXPECT_EQ(back->data, c.data);
  EXPECT_EQ(json::parse(text)["kind"], "ConfigMap");
}

TEST(Encode, AListOfTheEncodedObjectsReadsBack) {
  Node n;
  n.meta.name = "n1";
  n.allocatable = {{"cpu", "4"}};
  ConfigMap c;
  c.meta = meta("cm");
  const std::string text = list_json({node_json(n), pod_json(full_pod()), config_map_json(c)});
  const json j = json::parse(text);
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["kind"], "List");
  EXPECT_EQ(j["items"].size(), 3u);
  auto list = parse_list(text, everything());
  ASSERT_TRUE(list) << list.message();
  ASSERT_EQ(list->nodes.size(), 1u);
  ASSERT_EQ(list->pods.size(), 1u);
  ASSERT_EQ(list->config_maps.size(), 1u);
  EXPECT_EQ(list->pods[0].meta.name, "train");
  EXPECT_EQ(list->skipped, 0u);
  // No items: still a List.
  EXPECT_EQ(json::parse(list_json({}))["items"], json::array());
}

}  // namespace
}  // namespace fracpack::k8s::encode_test
