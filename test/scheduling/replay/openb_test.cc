// The openb trace as the FGD simulator reads it (scheduling/replay/openb.h):
// node and pod CSV rows, errors naming the line and column, the converter's
// clamping, the optional times, and the translation to the scheduling model.
#include "scheduling/replay/openb.h"

#include <gtest/gtest.h>

namespace fracpack::replay::openb_test {
namespace {

TEST(Replay, CsvParsingErrorsNameTheLine) {
  auto bad = parse_openb_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,100,10,1,500\np2,x,10,1,500\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("line 3"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("cpu_milli"), std::string::npos) << bad.message();
  auto missing = parse_openb_nodes("sn,cpu_milli,gpu,model\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("memory_mib"), std::string::npos);
  auto clamp = parse_openb_pods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\nq,1,1,0,300\n");
  ASSERT_TRUE(clamp.ok());
  EXPECT_EQ((*clamp)[0].gpu_milli, 1000);
  EXPECT_EQ((*clamp)[1].gpu_request(), 0);
}

TEST(Openb, NodesAreReadByTheirHeader) {
  auto nodes = parse_openb_nodes("model,sn,gpu,memory_mib,cpu_milli\r\nV100M32,n1,8,262144,96000\r\nCPU,n2,0,131072,32000\r\n\n");
  ASSERT_TRUE(nodes) << nodes.message();
  ASSERT_EQ(nodes->size(), 2u) << "CRLF and trailing blank lines are fine";
  EXPECT_EQ((*nodes)[0].name, "n1");
  EXPECT_EQ((*nodes)[0].cpu_milli, 96000);
  EXPECT_EQ((*nodes)[0].memory_mib, 262144);
  EXPECT_EQ((*nodes)[0].gpus, 8);
  EXPECT_EQ((*nodes)[0].model, "V100M32");
  EXPECT_EQ((*nodes)[1].gpus, 0);
}

TEST(Openb, NodeRowsOutOfRangeOrShortAreErrors) {
  const std::string head = "sn,cpu_milli,memory_mib,gpu,model\n";
  EXPECT_FALSE(parse_openb_nodes(""));
  for (const std::string row : {"n1,1000,1024,65,T4", "n1,-1,1024,1,T4", "n1,1000,1024", ",1000,1024,1,T4"}) {
    auto r = parse_openb_nodes(head + "n0,1,1,1,T4\n" + row + "\n");
    ASSERT_FALSE(r) << row;
    EXPECT_EQ(r.message().rfind("line 3: ", 0), 0u) << row << ": " << r.message();
  }
}

TEST(Openb, PodsWithModelsAndTimes) {
  auto pods = parse_openb_pods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\n"
      "a,8000,4096,1,500,V100M16|V100M32,100,250\n"
      "b,4000,1024,0,500,T4,,\n"
      "c,1000,1024,2,0,|T4||A10|,5,5\n");
  ASSERT_TRUE(pods) << pods.message();
  ASSERT_EQ(pods->size(), 3u);
  const OpenbPod& a = (*pods)[0];
  EXPECT_EQ(a.gpu_milli, 500);
  EXPECT_EQ(a.gpu_spec, "V100M16|V100M32");
  EXPECT_EQ(a.gpu_request(), 500);
  EXPECT_TRUE(a.has_times());
  EXPECT_EQ(a.creation_time, 100);
  EXPECT_EQ(a.deletion_time, 250);
  const OpenbPod& b = (*pods)[1];
  EXPECT_EQ(b.gpu_spec, "") << "a CPU-only pod has no models";
  EXPECT_FALSE(b.has_times()) << "empty cells: no times";
  const OpenbPod& c = (*pods)[2];
  EXPECT_EQ(c.gpu_milli, 0) << "0 milli stays 0";
  EXPECT_EQ(c.gpu_spec, "T4|A10") << "empty parts dropped";
  EXPECT_TRUE(c.has_times());
}

TEST(Openb, AFileWithoutGpuMilliGivesWholeCards) {
  auto pods = parse_openb_pods("name,cpu_milli,memory_mib,num_gpu\np,1000,1024,2\n");
  ASSERT_TRUE(pods) << pods.message();
  EXPECT_EQ((*pods)[0].gpu_milli, 1000);
  EXPECT_EQ((*pods)[0].gpu_request(), 2000);
  EXPECT_FALSE((*pods)[0].has_times()) << "no time columns";
}

TEST(Openb, TimesOutOfOrderAreErrors) {
  const std::string head = "name,cpu_milli,memory_mib,num_gpu,creation_time,deletion_time\n";
  auto before = parse_openb_pods(head + "p,1,1,1,20,10\n");
  ASSERT_FALSE(before);
  EXPECT_EQ(before.message(), "line 2: deletion_time 10 is before creation_time 20");
  auto negative = parse_openb_pods(head + "p,1,1,1,-5,10\n");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.message().find("is negative"), std::string::npos) << negative.message();
  EXPECT_FALSE(parse_openb_pods(head + "p,1,1,1,x,10\n"));
  auto missing = parse_openb_pods("name,cpu_milli,memory_mib\n");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(), "header lacks column \"num_gpu\"");
}

TEST(Openb, NominalCardMemory) {
  EXPECT_EQ(nominal_memory_mib("T4"), 15360);
  EXPECT_EQ(nominal_memory_mib("V100M32"), 32768);
  EXPECT_EQ(nominal_memory_mib("A100"), 81920);
  EXPECT_EQ(nominal_memory_mib("unknown"), 16384);
  EXPECT_EQ(nominal_memory_mib(""), 16384);
}

TEST(Openb, NodesAndPodsInTheSchedulingModel) {
  const OpenbNode n{"trace-name", 96000, 1024, 2, "T4"};
  const scheduling::NodeSpec spec = to_node_spec(n, "replay-0");
  EXPECT_EQ(spec.name, "replay-0");
  EXPECT_EQ(spec.cpu_milli, 96000);
  EXPECT_EQ(spec.memory_bytes, int64_t{1024} << 20);
  ASSERT_EQ(spec.cards.size(), 2u);
  EXPECT_EQ(spec.cards[1].index, 1);
  EXPECT_EQ(spec.cards[1].model, "T4");
  EXPECT_EQ(spec.cards[1].memory_mib, 15360);
  EXPECT_TRUE(spec.cards[1].uuid.empty());

  OpenbPod p;
  p.name = "p1";
  p.cpu_milli = 2000;
  p.memory_mib = 512;
  p.num_gpu = 2;
  p.gpu_milli = 300;
  p.gpu_spec = "T4|A10";
  const scheduling::PodRequest r = to_pod_request(p);
  EXPECT_EQ(r.uid, "p1");
  EXPECT_EQ(r.namespace_name, "openb");
  EXPECT_EQ(r.cpu_milli, 2000);
  EXPECT_EQ(r.memory_bytes, int64_t{512} << 20);
  ASSERT_EQ(r.containers.size(), 1u);
  EXPECT_EQ(r.containers[0].cards, 2);
  EXPECT_EQ(r.containers[0].cores, 300);
  EXPECT_EQ(r.allowed_models, (std::vector<std::string>{"T4", "A10"}));
  // The simulator treats 0 milli per GPU as a CPU-only pod.
  p.gpu_milli = 0;
  EXPECT_FALSE(to_pod_request(p).wants_gpu());
  EXPECT_TRUE(to_pod_request(p).allowed_models.empty());
}

}  // namespace
}  // namespace fracpack::replay::openb_test
