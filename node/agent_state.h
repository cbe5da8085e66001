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
// And what each pod it served holds (its record's charges, per card), for
// as long as the pod lives: the agent's own account, which a record
// changed after the pod was served cannot move.
//
//   # fracpack node agent: containers allocated per waiting pod
//   last <uid>
//   served <uid> <containers>
//   holds <uid> <namespace/name> <card>:<memory MiB>:<cores milli>:<shares>,... ("-": none)
//
// And the pods kubelet may have failed on a refusal whose verdict is not in
// yet (AllocationMatcher::undecided), and those the agent refused (kubelet
// fails them; AllocationMatcher::exclude), while they still look waiting:
// a restarted agent must not serve one of them either.
//
//   undecided <uid> <namespace/name>
//   owed <verdicts>
//   refused <uid>
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "node/allocation_matcher.h"
#include "common/result.h"

namespace fracpack::node {

struct AgentState {
  std::map<std::string, int> served;  // pod UID -> containers allocated
  std::string last_uid;
  std::map<std::string, Holding> holdings;  // pod UID -> what it holds
  std::vector<std::pair<std::string, std::string>> undecided;  // (uid, namespace/name)
  size_t verdicts_owed = 0;
  std::vector<std::string> refused;  // pod UIDs
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
