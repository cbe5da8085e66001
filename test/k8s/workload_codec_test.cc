#include "k8s/workload_codec.h"

#include <gtest/gtest.h>

namespace fracpack::k8s::workload_codec_test {
namespace {

TEST(WorkloadCodec, RoundTripsAndNamesWhatIsWrong) {
  scheduling::ShapeCounts w;
  w.add(scheduling::PodShape{3152, 810, 1, 0, 0, ""}, 1047);
  w.add(scheduling::PodShape{12000, 1000, 2, 0, 25, "V100M16|V100M32"}, 3);
  auto back = parse_workload(format_workload(w));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->counts(), w.counts());
  EXPECT_EQ(back->total(), 1050);
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"shapes":[{"cpuMilli":1,"cards":1,"count":0}]})", "count must be positive"},
           {R"({"shapes":[{"cards":1,"count":1}]})", "cpuMilli is required"},
           {R"({"shapes":[{"cpuMilli":1,"cards":1,"cores":150,"count":1}]})", "cores is out of range"},
           {R"({"shapes":[]})", "no shapes"},
           {"nope", "invalid JSON"}}) {
    auto r = parse_workload(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find(why), std::string::npos) << r.message();
  }
}

}  // namespace
}  // namespace fracpack::k8s::workload_codec_test
