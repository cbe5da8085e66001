// Kubernetes' size limits on what the extender's clients send: each field
// past its limit is named, and a pod within them is accepted whole.
#include "k8s/limits.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::limits_test {
namespace {

Pod ordinary_pod() {
  Pod p;
  p.meta.name = std::string(253, 'p');
  p.meta.namespace_name = std::string(63, 'n');
  p.meta.uid = "0b6f2c1e-8a4d-4c1e-9c55-6a1f1e9d2b3a";
  p.meta.labels = {{"example.com/" + std::string(63, 'k'), std::string(63, 'v')}};
  p.meta.annotations = {{"fracpack.io/gpu-model", std::string(200 << 10, 'A')}};
  Container c;
  c.name = std::string(63, 'c');
  c.limits = {{"fracpack.io/gpu", "1"}, {"fracpack.io/gpu-memory", "40960"}};
  p.containers = {c};
  p.init_containers = {c};
  return p;
}

TEST(KubernetesLimits, APodAtEveryLimitIsAccepted) {
  EXPECT_TRUE(check_pod_limits(ordinary_pod(), "Pod").ok()) << check_pod_limits(ordinary_pod(), "Pod").message();
}

TEST(KubernetesLimits, EachFieldPastItsLimitIsNamed) {
  struct Case {
    const char* field;
    void (*spoil)(Pod&);
  } cases[] = {
      {"Pod.metadata.name: 254 bytes, Kubernetes allows at most 253", [](Pod& p) { p.meta.name += "x"; }},
      {"Pod.metadata.namespace: 64 bytes", [](Pod& p) { p.meta.namespace_name += "x"; }},
      {"Pod.metadata.uid: 129 bytes, fracpack allows at most 128", [](Pod& p) { p.meta.uid = std::string(129, 'u'); }},
      {"Pod.metadata.labels[", [](Pod& p) { p.meta.labels[0].second += "x"; }},
      {"Pod.metadata.annotations: 262145 bytes", [](Pod& p) {
         p.meta.annotations[0].second.resize((256 << 10) + 1 - p.meta.annotations[0].first.size(), 'A');
       }},
      {"Pod.spec.containers[0].name: 5242880 bytes", [](Pod& p) { p.containers[0].name = std::string(5 << 20, 'c'); }},
      {"Pod.spec.initContainers[0].name: 64 bytes", [](Pod& p) { p.init_containers[0].name += "x"; }},
      {"Pod.spec.containers[0].resources.limits[fracpack.io/gpu]: 65 bytes, fracpack allows at most 64",
       [](Pod& p) { p.containers[0].limits[0].second = std::string(65, '1'); }},
      {"Pod.spec.nodeName: 300 bytes", [](Pod& p) { p.node_name = std::string(300, 'n'); }},
  };
  for (const auto& c : cases) {
    Pod p = ordinary_pod();
    c.spoil(p);
    const Status s = check_pod_limits(p, "Pod");
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
}

TEST(KubernetesLimits, ApproxBytesCountsWhatAPodHolds) {
  Pod small;
  small.meta.name = "p";
  Pod big = ordinary_pod();
  EXPECT_LT(approx_bytes(small), 4096u);
  EXPECT_GT(approx_bytes(big), size_t{200} << 10) << "the kept annotation is counted";
  big.containers.resize(1000, big.containers[0]);
  EXPECT_GT(approx_bytes(big), approx_bytes(ordinary_pod()) + 1000 * 63) << "every container counts";
}

}  // namespace
}  // namespace fracpack::k8s::limits_test
