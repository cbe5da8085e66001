// The fracpack binary's subcommands. Each takes its arguments (after the
// subcommand words) and returns the process exit code: 0 success, 1 failure,
// 2 usage error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "scheduling/replay/openb.h"
#include "common/result.h"
#include "server/cmd/args.h"

namespace fracpack::cli {

int cmd_replay_openb(const std::vector<std::string>& argv);
int cmd_replay_snapshot(const std::vector<std::string>& argv);
int cmd_convert_openb(const std::vector<std::string>& argv);
int cmd_mix_openb(const std::vector<std::string>& argv);
int cmd_serve(const std::vector<std::string>& argv);
int cmd_node_agent(const std::vector<std::string>& argv);
int cmd_inspect(const std::vector<std::string>& argv);
int cmd_mps_control_daemon(const std::vector<std::string>& argv);

// The configuration file --config names (defaults without it); the
// error names the file, key and line.
Result<config::Config> config_from_flag(const Args& args);

// A long-running command's process (serve, node-agent): the log as
// configured; SIGTERM and SIGINT blocked in every thread (started after
// this) for wait_for_stop_signal; SIGPIPE ignored.
void start_service_process(const config::Config& c);
// Waits for SIGTERM or SIGINT; its name.
const char* wait_for_stop_signal();
// --log-level and --log-format over the file's log section (the long-running
// commands'); the error names the flag.
Status apply_log_flags(const Args& args, config::LogConfig& log);

// Prints "fracpack: <message>" to stderr and returns 2 (usage) or 1 (failure).
int usage_error(const std::string& message);
int fail(const std::string& message);

// Go's rngCooked table from rng.go; null (with a warning) when the default
// path is missing and none was given explicitly.
Result<std::shared_ptr<const std::vector<int64_t>>> load_go_rng(const std::string& path, bool explicit_path);

// What replay openb, convert openb and mix openb read: the trace's node and
// pod lists (--trace-dir, --nodes, --pods, --workload), a mix built from the
// pods (--mix, --mix-seed, --spec-source: scheduling/replay/mixes.h) and
// Go's seeding table (--go-rng). Errors name the file or the flag.
struct OpenbInputs {
  std::vector<replay::OpenbNode> nodes;
  std::vector<replay::OpenbPod> pods;
  std::shared_ptr<const std::vector<int64_t>> go_cooked;
  std::string pods_path;  // the pod list read
  std::string workload;   // its name in reports: "default", "default+multigpu40" with --mix
};
Result<OpenbInputs> load_openb_inputs(const Args& args);
// --tune: a positive number below 100 (default 1.3).
Result<double> parse_tune(const Args& args);

// replay openb --dynamic (after the common flags are read).
int replay_openb_dynamic(const Args& args, const OpenbInputs& inputs, const std::vector<std::string>& policies,
                         const std::vector<int64_t>& seeds, double tune, int threads);

}  // namespace fracpack::cli
