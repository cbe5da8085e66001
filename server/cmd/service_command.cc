// What the long-running commands (serve, node-agent) share: their
// configuration from --config and the log flags, and the process set-up.
#include <signal.h>

#include "config/values.h"
#include "server/cmd/commands.h"
#include "server/log.h"

namespace fracpack::cli {

namespace {

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

Result<config::Config> config_from_flag(const Args& args) {
  if (auto file = args.get("config")) return config::load_config(*file);
  return config::Config{};
}

Status apply_log_flags(const Args& args, config::LogConfig& log) {
  if (auto v = args.get("log-level")) {
    auto level = config::parse_log_level(*v);
    if (!level) return Error{"--log-level: " + level.message()};
    log.level = *level;
  }
  if (auto v = args.get("log-format")) {
    auto format = config::parse_log_format(*v);
    if (!format) return Error{"--log-format: " + format.message()};
    log.format = *format;
  }
  return Status::Ok();
}

void start_service_process(const config::Config& c) {
  server::configure_log(c.log.level, c.log.format);
  // Every thread inherits the blocked signals; wait_for_stop_signal takes them.
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

const char* wait_for_stop_signal() {
  const sigset_t signals = stop_signals();
  int sig = 0;
  sigwait(&signals, &sig);
  return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

}  // namespace fracpack::cli
