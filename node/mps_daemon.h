// `fracpack mps-control-daemon`: runs and supervises NVIDIA's MPS control
// daemon for the node's cards (README "Isolation: a share is a limit",
// ../shared/reference/isolation.md). It is the privileged part of the MPS
// backend, a process (and container) of its own, so that the node agent
// keeps none of its rights: it sets each card's compute mode through NVML
// (root) and runs nvidia-cuda-mps-control as root.
//
// One control daemon for the node, not one per card: a container holding
// several cards reaches MPS through one pipe directory
// (CUDA_MPS_PIPE_DIRECTORY names one), as NVIDIA's device plugin serves a
// whole resource with one daemon. What that costs: MPS faults are contained
// per card anyway (a fatal fault ends every client of its card, not of the
// node), but a client that speaks the control protocol can stop it for
// every card (README "Security model").
//
//   start      the node's full cards (not MIG instances: MPS does not
//              serve them) go into EXCLUSIVE_PROCESS compute mode, so that
//              only the MPS server holds a context there; <dir>/pipe,
//              <dir>/log and <dir>/shm are made; nvidia-cuda-mps-control -f
//              starts with CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY
//              there (and CUDA_VISIBLE_DEVICES naming those cards by UUID
//              when the node also has MIG instances); once it answers, the
//              status file (node/mps_status.h) says ready.
//   heartbeat  every `heartbeat` the daemon is asked a question
//              (get_default_active_thread_percentage); the status file is
//              rewritten with the time.
//   failure    the control daemon exits or stops answering twice: the
//              status says down (the agent marks the cards unhealthy, so
//              nothing is placed or admitted onto them), and it is started
//              again after a back-off (1 s, doubling to 30 s).
//   stop       quit is sent, the daemon's process group (its MPS servers)
//              is ended, the cards go back to the compute mode they had
//              before MPS, the status says stopped. Those modes are kept in
//              <dir>/modes from the first change until a clean stop: a
//              supervisor that was killed left its cards in
//              EXCLUSIVE_PROCESS, and the next one restores the modes of
//              before, not that.
//
// No default limits are set on the control daemon: each client's limits
// come from its own environment (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), which the node agent writes per
// container at Allocate.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "common/result.h"

namespace fracpack::node {

struct MpsDaemonOptions {
  std::string control = "nvidia-cuda-mps-control";  // --mps-control
  std::string dir = "/run/fracpack/mps";            // --mps-dir
  std::string nvml_library = "libnvidia-ml.so.1";   // --nvml-library
  std::string sysfs = "/sys";
  std::chrono::milliseconds heartbeat{2000};
  std::chrono::milliseconds answer_timeout{5000};   // one control command
  std::chrono::milliseconds start_timeout{20000};   // until a started daemon answers
  std::chrono::milliseconds backoff_max{30000};
  // Where it reports (problem false: an event; true: a failure). Default: stderr.
  std::function<void(bool problem, const std::string& message)> report;
};

struct MpsDaemonStats {
  std::atomic<uint64_t> starts{0};     // control daemons started
  std::atomic<uint64_t> failures{0};   // exits and unanswered heartbeats
  std::atomic<bool> ready{false};
};

// Runs `control` with `env` (added to this process's), sends `command` on
// its standard input and returns what it wrote, within `timeout`; an exit
// status other than 0 is an error with its output.
Result<std::string> mps_control_command(const std::string& control, const std::map<std::string, std::string>& env,
                                        const std::string& command, std::chrono::milliseconds timeout);

// The MPS server's shared memory: the clients mount <dir>/shm on /dev/shm,
// and the daemon's own container does too (manifests/node-agent.yaml), so
// it must be one tmpfs of its own on the host — not the host's /dev/shm
// (hostIPC), not a folder of the host's /run that a client could fill.
// Mounts a tmpfs of `size_bytes` (mode 1777, nosuid, nodev) at <dir>/shm
// unless one is there already; the caller's mount propagation takes it to
// the host (the DaemonSet's init container, Bidirectional). Needs
// CAP_SYS_ADMIN. Returns what it did.
Result<std::string> prepare_mps_shm(const std::string& dir, int64_t size_bytes);

class MpsDaemon {
 public:
  explicit MpsDaemon(MpsDaemonOptions options);

  // Sets the compute modes and supervises the control daemon until `stop`,
  // then quits it and puts the modes back. Errors: NVML missing or no card
  // MPS can serve, a compute mode that cannot be set (not root), the
  // folder not writable; a control daemon that fails is restarted, never
  // an error.
  Status run(std::stop_token stop);

  const MpsDaemonStats& stats() const { return stats_; }
  // The environment the control daemon and its clients' commands get.
  std::map<std::string, std::string> control_env() const;

 private:
  void say(bool problem, const std::string& message) const;
  Status write_status(const std::string& state, const std::string& message);

  MpsDaemonOptions options_;
  MpsDaemonStats stats_;
  std::vector<std::string> cards_;  // UUIDs served
  bool name_cards_ = false;         // CUDA_VISIBLE_DEVICES: the node has MIG instances too
  int64_t pid_ = 0;
  int64_t restarts_ = 0;
};

}  // namespace fracpack::node
