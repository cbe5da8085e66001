// k8s/scheduler_names: which pods are fracpack's, the one rule that bind,
// admission and the node agent ask.
#include "k8s/scheduler_names.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::scheduler_names_test {
namespace {

TEST(SchedulerNames, APodIsOursWhenItsSchedulerIsNamed) {
  EXPECT_TRUE(placed_by_fracpack("fracpack", default_scheduler_names()));
  EXPECT_FALSE(placed_by_fracpack("default-scheduler", default_scheduler_names()));
  EXPECT_FALSE(placed_by_fracpack("", default_scheduler_names())) << "no schedulerName is the default scheduler's";
  EXPECT_TRUE(placed_by_fracpack("gpu-b", {"gpu-a", "gpu-b"}));
}

// The configuration refuses an empty list; a component handed one anyway
// serves and binds nothing (bind did so; the node agent served every pod).
TEST(SchedulerNames, AnEmptyListNamesNoScheduler) {
  EXPECT_FALSE(placed_by_fracpack("fracpack", {}));
  EXPECT_FALSE(placed_by_fracpack("", {}));
}

}  // namespace
}  // namespace fracpack::k8s::scheduler_names_test
