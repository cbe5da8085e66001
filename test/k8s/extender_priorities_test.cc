// HostPriorityList: a bare array, scores written in place.
#include "k8s/extender_priorities.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::extender_priorities_test {
namespace {

TEST(HostPriorities, ABareArray) {
  EXPECT_EQ(format_host_priorities({{"n1", 10}, {"n\"2", 0}, {"n3", 7}, {"n4", 12}}),
            R"([{"Host":"n1","Score":10},{"Host":"n\"2","Score": 0},{"Host":"n3","Score": 7},{"Host":"n4","Score":12}])")
      << "0..10 in two characters (JSON allows the space), others as they are";
  std::string one = "[";
  const size_t at = append_host_priority(one, "n", 3);
  write_score(one.data() + at, 10);
  EXPECT_EQ(one, R"([{"Host":"n","Score":10})");
  EXPECT_EQ(format_host_priorities({}), "[]");
}

}  // namespace
}  // namespace fracpack::k8s::extender_priorities_test
