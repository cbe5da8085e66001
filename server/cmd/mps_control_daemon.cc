// fracpack mps-control-daemon: the privileged half of the MPS backend
// (node/mps_daemon.h), a container of its own beside the node agent.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <thread>

#include "node/mps_daemon.h"
#include "scheduling/quantity.h"
#include "server/cmd/commands.h"
#include "server/log.h"

namespace fracpack::cli {
namespace {

constexpr const char* kMpsControlDaemonHelp = R"(usage: fracpack mps-control-daemon [options]

Runs NVIDIA's MPS control daemon for the node's cards, for the node agent's
isolation mode mps (nodeAgent.isolation: mps; README "Isolation: a share is
a limit"). It puts the full cards (not MIG instances) in EXCLUSIVE_PROCESS
compute mode, starts nvidia-cuda-mps-control -f with its pipe and log in
the MPS folder, asks it a question every 2 s, restarts it when it dies or
stops answering (1 s, doubling to 30 s) and writes <mps-dir>/status, which
the node agent reads: while it does not say ready the cards take nothing
new. Needs root (compute modes) and the driver's MPS binaries. SIGTERM or
SIGINT: quit the daemon and put the compute modes back.

options:
  --config FILE           the YAML configuration (nodeAgent.mpsControl, mpsDir, nvmlLibrary)
  --mps-control PATH      nvidia-cuda-mps-control (config: nodeAgent.mpsControl)
  --mps-dir DIR           the folder shared with the node agent (config: nodeAgent.mpsDir;
                          default /run/fracpack/mps)
  --nvml-library PATH     NVML (config: nodeAgent.nvmlLibrary; default libnvidia-ml.so.1)
  --prepare-shm SIZE      only mount the MPS shared memory: a tmpfs of SIZE (e.g. 1Gi) at
                          <mps-dir>/shm, unless one is there, then exit (the DaemonSet's
                          init container, with Bidirectional mount propagation)
  --log-level LEVEL       debug, info, warn, error (default info)
  --log-format FORMAT     json or logfmt (default json)
)";

}  // namespace

int cmd_mps_control_daemon(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"config", "mps-control", "mps-dir", "nvml-library", "prepare-shm", "log-level", "log-format"}, {"help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kMpsControlDaemonHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("mps-control-daemon takes no positional arguments (see --help)");
  auto loaded = config_from_flag(*args);
  if (!loaded) return fail(loaded.message());
  config::Config c = std::move(*loaded);
  config::NodeAgentConfig& a = c.node_agent;
  if (auto v = args->get("mps-control")) a.mps_control = *v;
  if (auto v = args->get("mps-dir")) a.mps_dir = *v;
  if (auto v = args->get("nvml-library")) a.nvml_library = *v;
  if (Status s = apply_log_flags(*args, c.log); !s.ok()) return usage_error(s.message());
  if (auto s = config::validate(c); !s.ok()) return fail("invalid configuration: " + s.message());
  if (auto v = args->get("prepare-shm")) {
    auto size = parse_memory_bytes(*v);
    if (!size || *size < (int64_t{1} << 20)) return usage_error("--prepare-shm: expected a size of at least 1Mi (e.g. 1Gi), got \"" + *v + "\"");
    auto done = node::prepare_mps_shm(a.mps_dir, *size);
    if (!done) return fail(done.message());
    std::cout << "mps-control-daemon: " << *done << "\n";
    return 0;
  }
  start_service_process(c);

  node::MpsDaemonOptions o;
  o.control = a.mps_control;
  o.dir = a.mps_dir;
  o.nvml_library = a.nvml_library;
  o.report = [](bool problem, const std::string& message) {
    if (problem) {
      server::log_warn("mps control daemon", {{"reason", message}});
    } else {
      server::log_info("mps control daemon", {{"event", message}});
    }
  };
  node::MpsDaemon daemon(o);
  Status result = Status::Ok();
  std::atomic<bool> ended{false};
  std::jthread runner([&](std::stop_token st) {
    result = daemon.run(st);
    ended.store(true);
    // An error ends the command: wake the signal wait below.
    if (!st.stop_requested()) ::kill(::getpid(), SIGTERM);
  });
  const char* sig = wait_for_stop_signal();
  if (!ended.load()) server::log_info("stopping", {{"signal", sig}});
  runner.request_stop();
  runner.join();
  if (!result.ok()) return fail(result.message());
  return 0;
}

}  // namespace fracpack::cli
