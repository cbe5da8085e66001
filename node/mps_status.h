// The MPS control daemon's status file (<mpsDir>/status): how `fracpack
// mps-control-daemon` (node/mps_daemon.h, privileged) tells the node agent
// (unprivileged, in another container) whether MPS can serve the node's
// cards. The daemon rewrites it at every heartbeat; the agent reads it
// every second and counts MPS as down when it says so, when it is missing
// or unreadable, or when its heartbeat is older than a few beats (the
// daemon itself gone: killed, or its container stopped).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fracpack::node {

struct MpsStatus {
  std::string state;  // "starting", "ready", "down" (the control daemon died; restarting), "stopped"
  std::chrono::system_clock::time_point heartbeat;
  int64_t pid = 0;                 // the control daemon's, when running
  std::vector<std::string> cards;  // the UUIDs it serves
  int64_t restarts = 0;            // control daemons started after the first
  std::string message;             // why not ready
  bool operator==(const MpsStatus&) const = default;
};

std::string format_mps_status(const MpsStatus& status);
Result<MpsStatus> parse_mps_status(std::string_view text);
// Written whole or not at all (a temporary file renamed over it).
Status write_mps_status(const std::string& path, const MpsStatus& status);

// Whether MPS serves `uuid` now, or why not: the file (its text, or an
// error reading it), read at `now`; a heartbeat older than `stale_after`
// is a daemon gone.
Status mps_serves(const Result<std::string>& file, const std::string& uuid, std::chrono::system_clock::time_point now,
                  std::chrono::milliseconds stale_after);

}  // namespace fracpack::node
