// Binding a pod to a node through the API server (../shared/reference/kubernetes-protocol.md
// §5.1): POST .../pods/{name}/binding with the pod's UID as a precondition
// and the allocation annotations in the Binding's metadata, so nodeName and
// the record are one atomic write. Idempotent: a 409 naming the same node,
// or a GET showing the pod already there, counts as success (a retry after
// a lost response).
#pragma once

#include <chrono>
#include <string>

#include "k8s/api_client.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

struct BindTarget {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node;
  StringMap annotations;
  std::string cards;  // the card indices the annotations name ("0,3"), for logs; not sent
};

enum class BindOutcome { kBound, kAlreadyBound };

// The Binding body (exposed for tests).
std::string binding_json(const BindTarget& target);

// Binds, or says why not with the API server's message. On failure,
// `pod_gone` (if given) tells whether the pod's UID no longer exists (404, or
// a UID precondition failure: the name holds another pod now), and
// `outcome_unknown` whether the Binding may have been applied after all (the
// request failed and so did the GET that would tell): the caller must then
// keep its reservation until the watch or the reconciler settles it.
// `timeout` (0: the client's request timeout) bounds the POST and the GET
// that may follow it.
Result<BindOutcome> post_binding(ApiClient& client, const BindTarget& target, bool* pod_gone = nullptr,
                             bool* outcome_unknown = nullptr, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

// The least time a read that settles a Binding's outcome is given (whatever
// the bind's own deadline left).
inline constexpr std::chrono::milliseconds kSettleReadTimeout{1000};

// Where the pod stands now, by one GET: on `target.node`, not bound there
// (pending, or bound elsewhere), gone (404, or its name holds another UID),
// or unknown (the read failed).
enum class Presence { kThere, kNotThere, kGone, kUnknown };
Presence already_there(ApiClient& client, const BindTarget& target, std::chrono::milliseconds timeout);

}  // namespace fracpack::k8s
