// The reconciler's passes (Daemon::control runs them every
// cluster.reconcileInterval): reservations the watch has not confirmed are
// checked with the API server, and cards the ledger holds over-committed are
// checked against what the API server says before they are reported.
#pragma once

#include <chrono>
#include <vector>

#include "k8s/api_client.h"

namespace fracpack::k8s {

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
class ClusterState;
struct OverCommittedCard;

// The cards the ledger holds over-committed that the API server confirms:
// the pods it has bound on the node (read as the bind fence reads them),
// counted as the ledger counts them (ClusterState::counted_record: what the
// ledger keeps charged for a pod it knows, else its record by the ledger's
// rules; a record it rejects counts nothing), sum
// past the card too (scheduling::card_over_capacity). A ledger over-commit the
// API server does not show is the watch lagging behind a deletion, not a
// double booking, and is not reported. Cards whose node cannot be read are
// left out (tried again at the next pass).
std::vector<OverCommittedCard> confirm_overcommitted(ApiClient& client, BindFence& fence, const ClusterState& state);

}  // namespace fracpack::k8s
