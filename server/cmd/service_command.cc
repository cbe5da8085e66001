// What the long-running commands (serve, node-agent) share: their
// configuration from --config, and the process set-up.
#include <signal.h>

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

void start_service_process(const config::Config& c) {
  server::LogLevel level = server::LogLevel::kInfo;
  server::LogFormat format = server::LogFormat::kJson;
  server::parse_log_level(c.log.level, &level);  // validate() accepted them
  server::parse_log_format(c.log.format, &format);
  server::configure_log(level, format);
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
