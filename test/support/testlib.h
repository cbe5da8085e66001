// Helpers shared by the tests: where the shared data is, and small builders
// for model objects.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduling/model.h"
#include "scheduling/workload.h"

namespace fracpack::testing {

// The shared data folder: $FRACPACK_SHARED, else the build's default.
std::string shared_dir();
// The contents of a file under the shared folder, or nullopt if absent.
std::optional<std::string> read_shared(const std::string& relative);

// The share of a large experiment a test runs: FRACPACK_TEST_SCALE_DOWN=k
// (the sanitizer presets set it) runs 1/k of it — the same code paths at a
// size a sanitizer gets through in minutes. 1 when unset or not a number
// above 1.
int test_scale_down();
std::optional<std::string> read_file(const std::string& path);

// A node with `gpus` identical cards.
scheduling::NodeSpec node(const std::string& name, int gpus, int64_t memory_mib = 16384, const std::string& model = "T4",
                          int64_t cpu_milli = 64000, int64_t memory_bytes = int64_t{256} << 30);
// A pod shape as the fragmentation measures see it (cards x cores milli).
scheduling::PodShape gpu_shape(int64_t cpu_milli, int cores, int cards, std::string models = "");
// A pod with one GPU container.
scheduling::PodRequest pod(const std::string& name, int cards, int cores_milli, int64_t memory_mib = 0,
                           int64_t cpu_milli = 1000);

// The fracpack binary run as a process (the CLI as a user meets it): its
// exit code, standard output and standard error. `argv` excludes the binary.
struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
CommandResult run_fracpack(const std::vector<std::string>& argv);

}  // namespace fracpack::testing
