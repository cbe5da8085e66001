// The node agent's state file: what the allocation matcher has served (how
// many containers of each waiting pod kubelet has been given cards for,
// and the pod it allocated to last), so that a restarted agent does not
// take a pod that is admitted but not yet running for a new one.
//
// kubelet wipes the files of its device-plugin directory when it starts,
// so the file lives elsewhere (a hostPath of its own: the DaemonSet mounts
// /var/lib/fracpack). Written whole to a temporary file, flushed and
// renamed: a crash leaves the old state or the new, never half of one.
//
//   # fracpack node agent: containers allocated per waiting pod
//   last <uid>
//   served <uid> <containers>
#pragma once

#include <map>
#include <string>

#include "scheduling/result.h"

namespace fracpack::node {

struct AgentState {
  std::map<std::string, int> served;  // pod UID -> containers allocated
  std::string last_uid;
  bool operator==(const AgentState&) const = default;
};

std::string format_agent_state(const AgentState& state);
// Errors name the file and line; `source` is the file's name.
Result<AgentState> parse_agent_state(const std::string& text, const std::string& source);

// A missing file is an empty state (the first start); an unreadable or
// malformed one is an error.
Result<AgentState> load_agent_state(const std::string& path);
Status save_agent_state(const std::string& path, const AgentState& state);

}  // namespace fracpack::node
