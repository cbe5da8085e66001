// Binding a pod to a node through the API server (kubernetes-protocol.md
// §5.1): POST .../pods/{name}/binding with the pod's UID as a precondition
// and the allocation annotations in the Binding's metadata, so nodeName and
// the record are one atomic write. Idempotent: a 409 naming the same node,
// or a GET showing the pod already there, counts as success (a retry after
// a lost response).
#pragma once

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
Result<BindOutcome> bind_pod(ApiClient& client, const BindTarget& target, bool* pod_gone = nullptr,
                             bool* outcome_unknown = nullptr, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

class ClusterState;

// Resolves assumed reservations that stayed unconfirmed for `min_age` (and,
// past their TTL, releases those whose pod the API server shows unbound): the
// watch may have missed the pod's whole life (a relist after a 410 shows
// only the present). One GET each: gone, re-created (another UID), finished
// or bound elsewhere -> released; bound here or still pending -> kept, for
// the informer to confirm (never from the GET: it may predate a deletion
// the watch already applied) or the TTL to expire. Returns how many were
// released.
size_t reconcile_assumptions(ApiClient& client, ClusterState& state, std::chrono::milliseconds min_age);

class BindFence;
struct OverCommittedCard;

// The cards the ledger holds over-committed that the API server confirms:
// the allocation records of the pods it has bound on the node (read as the
// bind fence reads them) sum past the card too. A ledger over-commit the
// API server does not show is the watch lagging behind a deletion, not a
// double booking, and is not reported. Cards whose node cannot be read are
// left out (tried again at the next pass).
std::vector<OverCommittedCard> confirm_overcommitted(ApiClient& client, BindFence& fence, const ClusterState& state);

}  // namespace fracpack::k8s
