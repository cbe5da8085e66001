#include "node/mps_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "node/mps_status.h"
#include "node/nvml.h"

extern char** environ;

namespace fracpack::node {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::vector<std::string> merged_env(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) all[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

struct Child {
  pid_t pid = -1;
  int in = -1;   // its standard input (write end), with `pipes`
  int out = -1;  // its standard output and error (read end), with `pipes`
};

// Starts `program` in a process group of its own (so that it and whatever
// it starts can be ended together).
Result<Child> spawn(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& env, bool pipes) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipes && (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)) return Error{"cannot make pipes"};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (pipes) {
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  Child c;
  const int rc = posix_spawnp(&c.pid, program.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (pipes) {
    ::close(in[0]);
    ::close(out[1]);
  }
  if (rc != 0) {
    if (pipes) {
      ::close(in[1]);
      ::close(out[0]);
    }
    return Error{"cannot run " + program + ": " + std::strerror(rc)};
  }
  if (pipes) {
    c.in = in[1];
    c.out = out[0];
  }
  return c;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended";
}

// Ends a process group and reaps its leader.
void end(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace

Result<std::string> mps_control_command(const std::string& control, const std::map<std::string, std::string>& env,
                                        const std::string& command, milliseconds timeout) {
  auto child = spawn(control, {}, merged_env(env), true);
  if (!child) return Error{child.message()};
  const std::string line = command + "\n";
  const bool written = ::write(child->in, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(child->in);
  std::string output;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{child->out, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t got = ::read(child->out, buf, sizeof buf);
    if (got <= 0) break;
    output.append(buf, static_cast<size_t>(got));
  }
  ::close(child->out);
  if (timed_out) {
    end(child->pid);
    return Error{control + " gave no answer to " + command + " within " + std::to_string(timeout.count()) + " ms"};
  }
  int status = 0;
  ::waitpid(child->pid, &status, 0);
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  if (!written || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{control + " " + command + ": " + exit_text(status) + (output.empty() ? std::string() : ": " + output)};
  }
  return output;
}

MpsDaemon::MpsDaemon(MpsDaemonOptions options) : options_(std::move(options)) {}

void MpsDaemon::say(bool problem, const std::string& message) const {
  if (options_.report) {
    options_.report(problem, message);
  } else {
    std::fprintf(stderr, "mps-control-daemon: %s\n", message.c_str());
  }
}

std::map<std::string, std::string> MpsDaemon::control_env() const {
  std::map<std::string, std::string> env{{"CUDA_MPS_PIPE_DIRECTORY", options_.dir + "/pipe"},
                                         {"CUDA_MPS_LOG_DIRECTORY", options_.dir + "/log"}};
  if (name_cards_) {
    // MIG instances beside them: the daemon serves the full cards only, by
    // UUID (an index list would renumber the clients' devices).
    std::string uuids;
    for (const std::string& u : cards_) uuids += (uuids.empty() ? "" : ",") + u;
    env["CUDA_VISIBLE_DEVICES"] = uuids;
  }
  return env;
}

Status MpsDaemon::write_status(const std::string& state, const std::string& message) {
  MpsStatus s;
  s.state = state;
  s.heartbeat = std::chrono::system_clock::now();
  s.pid = pid_;
  s.cards = cards_;
  s.restarts = restarts_;
  s.message = message;
  Status w = write_mps_status(options_.dir + "/status", s);
  if (!w.ok()) say(true, "status not written: " + w.message());
  return w;
}

Status MpsDaemon::run(std::stop_token stop) {
  auto nvml = Nvml::open(options_.nvml_library, options_.sysfs);
  if (!nvml) return Error{nvml.message()};
  auto found = (*nvml)->discover();
  if (!found) return Error{found.message()};
  for (const GpuDevice& d : found->devices) {
    if (!d.parent_uuid.empty()) {
      name_cards_ = true;  // a MIG instance: MPS does not serve it
      continue;
    }
    cards_.push_back(d.uuid);
  }
  if (cards_.empty()) return Error{"no card MPS can serve on this node (" + std::to_string(found->devices.size()) + " devices, MIG instances or none)"};

  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& [sub, mode] : {std::pair{"pipe", static_cast<fs::perms>(0755)}, std::pair{"log", static_cast<fs::perms>(0755)},
                                  std::pair{"shm", static_cast<fs::perms>(01777)}}) {
    const fs::path p = fs::path(options_.dir) / sub;
    fs::create_directories(p, ec);
    // The clients run as any user: they must reach the pipe and the shared memory.
    fs::permissions(p, mode, ec);
    if (!fs::is_directory(p)) return Error{"cannot make " + p.string() + ": " + ec.message()};
  }

  // Only the MPS server may hold a context on a card that takes shares.
  std::map<std::string, int> before;
  auto restore = [&] {
    for (const auto& [uuid, mode] : before) {
      if (Status s = (*nvml)->set_compute_mode(uuid, mode); !s.ok()) say(true, "compute mode not restored: " + s.message());
    }
  };
  for (const std::string& uuid : cards_) {
    auto mode = (*nvml)->compute_mode(uuid);
    const int was = mode ? *mode : Nvml::kComputeDefault;
    if (Status s = (*nvml)->set_compute_mode(uuid, Nvml::kComputeExclusiveProcess); !s.ok()) {
      restore();
      (void)write_status("stopped", s.message());
      return s;
    }
    before[uuid] = was;
  }
  say(false, "compute mode EXCLUSIVE_PROCESS on " + std::to_string(cards_.size()) + " card(s)");

  std::mutex mu;
  std::condition_variable_any cv;
  auto pause = [&](milliseconds d) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, d, [] { return false; });
  };
  const auto env = control_env();
  auto ask = [&](const std::string& command) { return mps_control_command(options_.control, env, command, options_.answer_timeout); };
  int exit_status = 0;
  auto alive = [&] {
    if (pid_ <= 0) return false;
    if (::waitpid(static_cast<pid_t>(pid_), &exit_status, WNOHANG) == 0) return true;
    pid_ = 0;  // reaped
    return false;
  };
  // A control daemon left by a supervisor that was killed (its container
  // restarted: the daemon is in a process group of its own) still holds
  // the pipe; a second one would refuse to start. Ask it to quit.
  if (ask("get_default_active_thread_percentage")) {
    say(false, "a control daemon from before is running: asking it to quit");
    (void)ask("quit");
    const auto gone_by = Clock::now() + options_.start_timeout;
    while (Clock::now() < gone_by && !stop.stop_requested() && ask("get_default_active_thread_percentage")) pause(milliseconds(200));
  }
  milliseconds backoff(1000);
  while (!stop.stop_requested()) {
    (void)write_status("starting", "");
    std::string reason;
    auto child = spawn(options_.control, {"-f"}, merged_env(env), false);
    if (!child) {
      reason = child.message();
    } else {
      pid_ = child->pid;
      stats_.starts.fetch_add(1);
      bool up = false;
      const auto deadline = Clock::now() + options_.start_timeout;
      while (!stop.stop_requested() && Clock::now() < deadline && alive()) {
        if (ask("get_default_active_thread_percentage")) {
          up = true;
          break;
        }
        pause(milliseconds(200));
      }
      if (up) {
        stats_.ready.store(true);
        (void)write_status("ready", "");
        say(false, "MPS control daemon ready (pid " + std::to_string(pid_) + ", " + std::to_string(cards_.size()) + " card(s))");
        backoff = milliseconds(1000);
        int misses = 0;
        while (!stop.stop_requested()) {
          pause(options_.heartbeat);
          if (stop.stop_requested()) break;
          if (!alive()) {
            reason = "nvidia-cuda-mps-control " + exit_text(exit_status);
            break;
          }
          if (auto answer = ask("get_default_active_thread_percentage"); !answer) {
            if (++misses >= 2) {
              reason = "nvidia-cuda-mps-control stopped answering: " + answer.message();
              break;
            }
            continue;
          }
          misses = 0;
          (void)write_status("ready", "");
        }
      } else if (!stop.stop_requested()) {
        reason = alive() ? "nvidia-cuda-mps-control gave no answer within " + std::to_string(options_.start_timeout.count()) + " ms"
                         : "nvidia-cuda-mps-control " + exit_text(exit_status) + " at start";
      }
    }
    if (stop.stop_requested()) break;
    stats_.ready.store(false);
    stats_.failures.fetch_add(1);
    end(static_cast<pid_t>(pid_));
    pid_ = 0;
    (void)write_status("down", reason);
    say(true, reason + "; starting it again in " + std::to_string(backoff.count()) + " ms");
    pause(backoff);
    backoff = std::min(backoff * 2, options_.backoff_max);
    ++restarts_;
  }

  stats_.ready.store(false);
  if (alive()) {
    (void)ask("quit");
    const auto deadline = Clock::now() + milliseconds(5000);
    while (alive() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(20));
    if (alive()) end(static_cast<pid_t>(pid_));
    pid_ = 0;
  }
  restore();
  (void)write_status("stopped", "");
  say(false, "stopped; compute modes restored");
  return Status::Ok();
}

}  // namespace fracpack::node
