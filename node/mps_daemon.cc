#include "node/mps_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
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
  if (pipes && ::pipe2(in, O_CLOEXEC) != 0) return Error{"cannot make pipes"};
  if (pipes && ::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Error{"cannot make pipes"};
  }
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
  // Its own process group; and the signal state of a fresh process: this
  // one blocks SIGTERM and SIGINT (for its signal wait) and ignores
  // SIGPIPE, which the control daemon and its MPS servers must not inherit.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
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

// Ends a process group (its leader's pid is the group's id) and reaps what
// of it is this process's to reap. The group outlives its leader: the MPS
// servers the control daemon started are in it, and when they outlive it
// they still hold their cards' contexts (in EXCLUSIVE_PROCESS mode the next
// daemon's server could not open them).
void end_group(pid_t pgid) {
  if (pgid <= 0) return;
  ::kill(-pgid, SIGKILL);
  int status = 0;
  while (::waitpid(-pgid, &status, 0) > 0) {
  }
}

// <dir>/modes: "uuid=mode" lines, the compute modes the cards had before.
std::map<std::string, int> read_modes(const std::string& path) {
  std::map<std::string, int> out;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return out;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq + 1 >= l.size()) continue;
    out[l.substr(0, eq)] = std::atoi(l.c_str() + eq + 1);
  }
  std::fclose(f);
  return out;
}

Status write_modes(const std::string& path, const std::map<std::string, int>& modes) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return Error{"cannot write " + tmp + ": " + std::strerror(errno)};
  for (const auto& [uuid, mode] : modes) std::fprintf(f, "%s=%d\n", uuid.c_str(), mode);
  const bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) return Error{"cannot write " + path + ": " + std::strerror(errno)};
  return Status::Ok();
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
    end_group(child->pid);
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

Result<std::string> prepare_mps_shm(const std::string& dir, int64_t size_bytes) {
  namespace fs = std::filesystem;
  const std::string path = fs::weakly_canonical(fs::path(dir) / "shm").string();
  // Mounted already (the init container ran before, the pod restarted)?
  std::FILE* f = std::fopen("/proc/self/mountinfo", "r");
  if (f == nullptr) return Error{"cannot read /proc/self/mountinfo"};
  char line[4096];
  bool mounted = false;
  while (!mounted && std::fgets(line, sizeof line, f) != nullptr) {
    // "id parent major:minor root mount-point ..."
    char mount_point[4096] = {};
    if (std::sscanf(line, "%*s %*s %*s %*s %4095s", mount_point) == 1 && path == mount_point) mounted = true;
  }
  std::fclose(f);
  if (mounted) return path + ": a tmpfs is there already";
  std::error_code ec;
  fs::create_directories(path, ec);
  if (!fs::is_directory(path)) return Error{"cannot make " + path + ": " + ec.message()};
  const std::string options = "size=" + std::to_string(size_bytes) + ",mode=1777";
  if (::mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return Error{"cannot mount a tmpfs at " + path + ": " + std::strerror(errno) + " (needs CAP_SYS_ADMIN: a privileged container)"};
  }
  return path + ": tmpfs of " + std::to_string(size_bytes >> 20) + " MiB mounted";
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

  // Said first: a status a killed supervisor left may still say ready.
  (void)write_status("starting", "");

  // Only the MPS server may hold a context on a card that takes shares.
  // The modes the cards had before MPS are kept in <dir>/modes until a clean
  // stop puts them back: a supervisor that was killed left its cards in
  // EXCLUSIVE_PROCESS, and the next one must not take that for their own.
  const std::string modes_file = options_.dir + "/modes";
  std::map<std::string, int> before = read_modes(modes_file);
  const bool inherited = !before.empty();
  for (const std::string& uuid : cards_) {
    if (before.contains(uuid)) continue;
    auto mode = (*nvml)->compute_mode(uuid);
    before[uuid] = mode ? *mode : Nvml::kComputeDefault;
  }
  if (Status w = write_modes(modes_file, before); !w.ok()) return w;
  if (inherited) say(false, "compute modes from before a supervisor that did not stop cleanly: " + modes_file);
  auto restore = [&] {
    bool all = true;
    for (const auto& [uuid, mode] : before) {
      if (Status s = (*nvml)->set_compute_mode(uuid, mode); !s.ok()) {
        say(true, "compute mode not restored: " + s.message());
        all = false;
      }
    }
    if (all) ::unlink(modes_file.c_str());
  };
  for (const std::string& uuid : cards_) {
    if (Status s = (*nvml)->set_compute_mode(uuid, Nvml::kComputeExclusiveProcess); !s.ok()) {
      restore();
      (void)write_status("stopped", s.message());
      return s;
    }
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
  pid_t pgid = 0;  // the running control daemon's process group
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
      pgid = child->pid;  // its own group: the MPS servers it starts join it
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
    end_group(pgid);  // the daemon if it still runs, and servers it left
    pgid = 0;
    pid_ = 0;
    (void)write_status("down", reason);
    say(true, reason + "; starting it again in " + std::to_string(backoff.count()) + " ms");
    pause(backoff);
    backoff = std::min(backoff * 2, options_.backoff_max);
    ++restarts_;
  }

  stats_.ready.store(false);
  if (pgid > 0) {
    if (alive()) (void)ask("quit");
    const auto deadline = Clock::now() + milliseconds(5000);
    while (alive() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(20));
    end_group(pgid);  // what did not quit within 5 s, and servers left behind
    pid_ = 0;
  }
  restore();
  (void)write_status("stopped", "");
  say(false, "stopped; compute modes restored");
  return Status::Ok();
}

}  // namespace fracpack::node
