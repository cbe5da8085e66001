// The API server's version (GET /version): what fracpack adapts to where
// Kubernetes releases differ (README "Compatibility"): the bind fence's
// read (a consistent LIST is served from the watch cache from 1.31 on,
// read from etcd before), and whether the scheduler knows
// FailedAndUnresolvableNodes (1.21 on; kube-scheduler may be one minor
// older than its API server).
#pragma once

#include <string>
#include <string_view>

#include "k8s/api_client.h"
#include "common/result.h"

namespace fracpack::k8s {

struct ServerVersion {
  int major = 0;
  int minor = 0;            // "20+" (a vendor's build) reads as 20
  std::string git_version;  // "v1.20.2"

  bool at_least(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

// The /version document.
Result<ServerVersion> parse_server_version(std::string_view json);
Result<ServerVersion> read_server_version(ApiClient& client, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// A consistent LIST is cheap (served from the watch cache) from 1.31 on.
inline bool consistent_list_from_cache(const ServerVersion& v) { return v.at_least(1, 31); }
// The oldest kube-scheduler an API server of this version may have knows
// FailedAndUnresolvableNodes (1.21 on; one minor of skew).
inline bool scheduler_knows_unresolvable(const ServerVersion& v) { return v.at_least(1, 22); }

}  // namespace fracpack::k8s
