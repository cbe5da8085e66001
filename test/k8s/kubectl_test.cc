// The fake API server validated against a client nobody here wrote:
// kubectl lists and watches pods and nodes from it and creates a binding.
// Runs when kubectl is installed (.ci/install-deps installs Debian's).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test/support/cluster_harness.h"

extern char** environ;

namespace fracpack::testing::kubectl_test {
namespace {

std::string find_kubectl() {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');) {
    const std::string candidate = dir + "/kubectl";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts kubectl with its output in files; returns the pid.
pid_t spawn(const std::string& kubectl, const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {kubectl};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // No kubeconfig of the machine's: only --server.
  std::vector<std::string> env = {"KUBECONFIG=/dev/null", "HOME=" + ::testing::TempDir(), "PATH=/usr/bin:/bin"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kubectl.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int run(const std::string& kubectl, const std::vector<std::string>& args, std::string& out, std::string& err) {
  const std::string o = ::testing::TempDir() + "/kubectl.out", e = ::testing::TempDir() + "/kubectl.err";
  const pid_t pid = spawn(kubectl, args, o, e);
  if (pid < 0) return -1;
  int status = 0;
  for (int i = 0; i < 300; ++i) {  // 30 s at most
    if (waitpid(pid, &status, WNOHANG) == pid) {
      out = slurp(o);
      err = slurp(e);
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -2;
}

TEST(Kubectl, ListsWatchesAndBindsAgainstTheFakeApiServer) {
  const std::string kubectl = find_kubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed (apt-get install kubernetes-client)";
  FakeApiServer s;
  s.create("nodes", node_object("n1", 2));
  s.create("pods", pod_object({"p1", "default", "", "Pending", {{"fracpack.io/gpu", "1"}}, {}}));
  const std::string server = "--server=" + s.url();

  // get -A -w -o json: the existing pod, then the one created later (a watch event).
  const std::string out = ::testing::TempDir() + "/watch.out", err = ::testing::TempDir() + "/watch.err";
  const pid_t watcher = spawn(kubectl, {server, "get", "pods", "-A", "-w", "-o", "json"}, out, err);
  ASSERT_GT(watcher, 0);
  ASSERT_TRUE(Cluster::wait_for([&] { return slurp(out).find("\"p1\"") != std::string::npos; }, std::chrono::seconds(30)))
      << slurp(err);
  s.create("pods", pod_object({"p2", "ml", "n1", "Running", {}, {}}));
  const bool watched = Cluster::wait_for([&] { return slurp(out).find("\"p2\"") != std::string::npos; }, std::chrono::seconds(30));
  kill(watcher, SIGTERM);
  int status = 0;
  waitpid(watcher, &status, 0);
  EXPECT_TRUE(watched) << "kubectl's watch did not show the new pod; stderr: " << slurp(err);
  EXPECT_GE(s.requests("GET /api/v1/pods"), 2) << "a list and a watch";

  std::string o, e;
  ASSERT_EQ(run(kubectl, {server, "get", "nodes", "-o", "json"}, o, e), 0) << e;
  EXPECT_EQ(nlohmann::json::parse(o)["items"][0]["metadata"]["name"], "n1");

  // create --raw a binding; a second one gets the 409 kubectl prints.
  const std::string body = ::testing::TempDir() + "/binding.json";
  std::ofstream(body) << R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1","namespace":"default"},)"
                         R"("target":{"apiVersion":"v1","kind":"Node","name":"n1"}})";
  ASSERT_EQ(run(kubectl, {server, "create", "--raw", "/api/v1/namespaces/default/pods/p1/binding", "-f", body}, o, e), 0) << e;
  EXPECT_EQ(nlohmann::json::parse(*s.get("pods", "default", "p1"))["spec"]["nodeName"], "n1");
  EXPECT_NE(run(kubectl, {server, "create", "--raw", "/api/v1/namespaces/default/pods/p1/binding", "-f", body}, o, e), 0);
  EXPECT_NE(e.find("is already assigned to node \"n1\""), std::string::npos) << e;
}

}  // namespace
}  // namespace fracpack::testing::kubectl_test
