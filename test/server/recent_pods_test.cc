// The pods remembered between filter and bind: bounded in count and in
// bytes, least recently used first out, and no pod big enough to flush the
// others.
#include "server/recent_pods.h"

#include <gtest/gtest.h>

#include "k8s/limits.h"

namespace fracpack::server::recent_pods_test {
namespace {

k8s::Pod pod(const std::string& uid, size_t annotation_bytes = 0, const std::string& rv = "1") {
  k8s::Pod p;
  p.meta.uid = uid;
  p.meta.name = "pod-" + uid;
  p.meta.namespace_name = "ml";
  p.meta.resource_version = rv;
  if (annotation_bytes > 0) p.meta.annotations = {{"fracpack.io/gpu-model", std::string(annotation_bytes, 'A')}};
  return p;
}

TEST(RecentPods, CountBoundDropsTheLeastRecentlyUsed) {
  RecentPods r(3, 1 << 20);
  for (const char* uid : {"a", "b", "c"}) EXPECT_TRUE(r.remember(pod(uid))) << "first seen";
  EXPECT_FALSE(r.remember(pod("a"))) << "seen before (filter, then prioritize)";  // now the most recent
  EXPECT_TRUE(r.remember(pod("d")));
  EXPECT_TRUE(r.recall("a").has_value());
  EXPECT_FALSE(r.recall("b").has_value()) << "the least recently used went";
  EXPECT_TRUE(r.recall("d").has_value());
  EXPECT_EQ(r.size(), 3u);
}

TEST(RecentPods, ByteBoundHoldsWhateverThePodsCarry) {
  const size_t budget = 1 << 20;
  RecentPods r(4096, budget);
  for (int i = 0; i < 100; ++i) r.remember(pod("u" + std::to_string(i), 100 << 10));
  EXPECT_LE(r.bytes(), budget);
  EXPECT_GE(r.size(), 8u) << "as many as fit";
  EXPECT_LT(r.size(), 11u);
  EXPECT_TRUE(r.recall("u99").has_value());
  EXPECT_FALSE(r.recall("u0").has_value());
}

TEST(RecentPods, APodLargerThanAnEighthIsNotKeptNorFlushesTheOthers) {
  RecentPods r(4096, 1 << 20);
  r.remember(pod("small"));
  r.remember(pod("huge", 200 << 10));
  EXPECT_FALSE(r.recall("huge").has_value());
  EXPECT_TRUE(r.recall("small").has_value());
  // A pod that grew past the bound is forgotten, not kept stale.
  r.remember(pod("grows", 1024, "1"));
  ASSERT_TRUE(r.recall("grows").has_value());
  r.remember(pod("grows", 200 << 10, "2"));
  EXPECT_FALSE(r.recall("grows").has_value());
  EXPECT_EQ(r.bytes(), k8s::approx_bytes(pod("small")));
}

TEST(RecentPods, AChangedPodReplacesItsCopyAndItsBytes) {
  RecentPods r(4096, 1 << 20);
  r.remember(pod("a", 1000, "1"));
  r.remember(pod("a", 5000, "2"));
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.bytes(), k8s::approx_bytes(pod("a", 5000, "2")));
  EXPECT_EQ(r.recall("a")->meta.resource_version, "2");
}

}  // namespace
}  // namespace fracpack::server::recent_pods_test
