// The bind fence's reads by name (k8s/bind_fence_read.h): the one parser of
// cluster.bindFenceRead.
#include "k8s/bind_fence_read.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::bind_fence_read_test {
namespace {

TEST(BindFenceRead, EveryReadParsesFromItsName) {
  for (BindFenceRead r : {BindFenceRead::kAuto, BindFenceRead::kConsistent, BindFenceRead::kMarker, BindFenceRead::kResourceVersion}) {
    auto parsed = parse_bind_fence_read(bind_fence_read_name(r));
    ASSERT_TRUE(parsed) << bind_fence_read_name(r) << ": " << parsed.message();
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(bind_fence_read_name(BindFenceRead::kResourceVersion), "resourceVersion");
}

// Any other text is an error naming what was expected, never kAuto.
TEST(BindFenceRead, AnyOtherNameIsRefused) {
  for (const char* bad : {"", "Auto", "consistent ", "resourceversion", "etcd"}) {
    auto parsed = parse_bind_fence_read(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.message(), std::string("expected auto, consistent, marker or resourceVersion, got \"") + bad + "\"");
  }
}

}  // namespace
}  // namespace fracpack::k8s::bind_fence_read_test
