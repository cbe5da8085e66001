// The per-node lock of a contract whose node agent serves one bind per node
// at a time and finds the pod through the lock (HAMi's, k8s/contract/
// hami_node_lock.h). A contract that has one returns it from
// Contract::node_lock; everything else asks it through this interface:
//
//   the ledger       notes who holds each node (held_by, LedgerBuilder);
//   prioritize       ranks a held node last for every other pod, so that a
//                    burst spreads instead of queueing behind one lock
//                    (ExtenderService);
//   the bind         when binds take it (taken_by_binds), a GPU bind's
//                    pre-bind step takes it before the fence and releases it
//                    when the Binding certainly failed (BindService hands it
//                    to the binder with the bind), and the nodes of its own
//                    binds in flight rank last too (Reservations::binding_to).
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "k8s/api_client.h"
#include "k8s/binding.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

class NodeLock {
 public:
  virtual ~NodeLock() = default;

  // Whether fracpack's binds take it. Either way a lock someone else holds
  // ranks its node last.
  virtual bool taken_by_binds() const = 0;
  // Takes the lock of `target.node` for the target pod before `deadline`,
  // or says why not (held by a live pod until then, the API server's error).
  virtual Status acquire(ApiClient& client, const BindTarget& target, std::chrono::steady_clock::time_point deadline) const = 0;
  // Releases it if the lock still names the target pod.
  virtual void release(ApiClient& client, const BindTarget& target) const = 0;
  // The pod ("namespace/name") the node's lock names at `now`, unless it
  // has expired; "" when none.
  virtual std::string held_by(const Node& node, std::chrono::system_clock::time_point now) const = 0;
};

}  // namespace fracpack::k8s
