#include "test/support/testlib.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fracpack::testing {

std::string shared_dir() {
  if (const char* env = std::getenv("FRACPACK_SHARED"); env != nullptr && *env != '\0') return env;
  return FRACPACK_SHARED_DIR;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_fracpack(const std::vector<std::string>& argv) {
  std::string command = "'" FRACPACK_BINARY "'";
  for (const auto& a : argv) {
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  char err_path[] = "/tmp/fracpack-test-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd < 0) return {};
  close(fd);
  command += std::string(" 2>'") + err_path + "'";
  CommandResult r;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[65536];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  r.err = read_file(err_path).value_or("");
  unlink(err_path);
  return r;
}

std::optional<std::string> read_shared(const std::string& relative) { return read_file(shared_dir() + "/" + relative); }

scheduling::NodeSpec node(const std::string& name, int gpus, int64_t memory_mib, const std::string& model,
                          int64_t cpu_milli, int64_t memory_bytes) {
  scheduling::NodeSpec n;
  n.name = name;
  n.cpu_milli = cpu_milli;
  n.memory_bytes = memory_bytes;
  for (int i = 0; i < gpus; ++i) {
    scheduling::Card c;
    c.index = i;
    c.uuid = "GPU-" + name + "-" + std::to_string(i);
    c.model = model;
    c.memory_mib = memory_mib;
    n.cards.push_back(c);
  }
  return n;
}

scheduling::PodShape gpu_shape(int64_t cpu_milli, int cores, int cards, std::string models) {
  scheduling::PodShape s;
  s.cpu_milli = cpu_milli;
  s.cores = cores;
  s.cards = cards;
  s.models = std::move(models);
  return s;
}

scheduling::PodRequest pod(const std::string& name, int cards, int cores_milli, int64_t memory_mib, int64_t cpu_milli) {
  scheduling::PodRequest p;
  p.uid = "uid-" + name;
  p.namespace_name = "default";
  p.name = name;
  p.cpu_milli = cpu_milli;
  if (cards > 0) {
    scheduling::ContainerRequest c;
    c.name = "main";
    c.cards = cards;
    c.cores = cores_milli;
    c.memory_mib = memory_mib;
    p.containers.push_back(c);
  }
  return p;
}

int test_scale_down() {
  const char* env = std::getenv("FRACPACK_TEST_SCALE_DOWN");
  if (env == nullptr) return 1;
  const int k = std::atoi(env);
  return k > 1 ? k : 1;
}

}  // namespace fracpack::testing
