// node/agent_state: the state file that survives the agent's restarts.
#include "node/agent_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fracpack::node::agent_state_test {
namespace {

TEST(AgentState, WritesAndReadsBackWhatWasServed) {
  const std::string path = ::testing::TempDir() + "fp-agent-" + std::to_string(::getpid()) + ".state";
  std::filesystem::remove(path);
  auto empty = load_agent_state(path);  // the first start: no file
  ASSERT_TRUE(empty) << empty.message();
  EXPECT_EQ(*empty, AgentState{});
  const AgentState s{{{"uid-a", 2}, {"uid-b", 1}},
                     "uid-a",
                     {{"uid-a", Holding{"ns/a", {{0, 8192, 500, 2}, {3, 40960, 1000, 1}}}}, {"uid-c", Holding{"ns/c", {}}}},
                     {{"uid-d", "ns/d"}, {"uid-e", "ns/e"}},
                     2,
                     {"uid-f"}};
  ASSERT_TRUE(save_agent_state(path, s).ok());
  auto back = load_agent_state(path);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(AgentState, AMalformedFileNamesItsLine) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"# c\nserved uid-a\n", "s:2: \"served uid-a\" needs a container count 1..1024"},
           {"served uid-a 0\n", "s:1: \"served uid-a\" needs a container count 1..1024"},
           {"served uid-a 2 3\n", "s:1: \"served uid-a\" needs a container count"},
           {"last a b\n", "s:1: \"last\" takes one pod UID"},
           {"next uid\n", "s:1: unknown entry \"next\""},
           {"holds uid-a ns/a\n", "s:1: \"holds uid-a\" needs a namespace/name and the charges"},
           {"holds uid-a ns/a 0:1:2\n", "s:1: \"holds uid-a\": \"0:1:2\" is not card:memoryMiB:coresMilli:shares"},
           {"holds uid-a ns/a 0:1:2:3,x\n", "s:1: \"holds uid-a\": \"x\" is not card"},
           {"served\n", "s:1: expected \"last <uid>\" or \"served <uid> <count>\""},
           {"undecided uid-a\n", "s:1: \"undecided uid-a\" needs a namespace/name"},
           {"owed two\n", "s:1: \"owed\" needs a count 1..1048576"},
           {"owed 0\n", "s:1: \"owed\" needs a count"},
           {"owed 1 2\n", "s:1: \"owed\" needs a count"},
           {"owed +3\n", "s:1: \"owed\" needs a count"},
           {"refused uid-a uid-b\n", "s:1: \"refused\" takes one pod UID"}}) {
    auto r = parse_agent_state(text, "s");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.message().find(message), std::string::npos) << r.message();
  }
}

TEST(AgentState, AnUnwritableDirectoryIsAnErrorNamingTheFile) {
  const Status s = save_agent_state("/nonexistent-dir/agent.state", AgentState{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent-dir/agent.state.tmp"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fracpack::node::agent_state_test
