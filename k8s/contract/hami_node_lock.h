// HAMi's per-node lock (the hami profile's Contract::node_lock, behind the
// NodeLock interface of k8s/contract/node_lock.h), taken as HAMi's own scheduler takes it
// (../shared/reference/node-side.md §A2.4): node annotation hami.io/mutex.lock =
// "<RFC 3339 time>,<namespace>,<pod>", set with a merge patch that carries
// the node's resourceVersion (two writers cannot both take it). HAMi's
// device plugin serves the pod the lock names at Allocate, then releases it;
// a bind that fails releases it here.
//
//   free, ours          take (ours: a retried bind takes it afresh)
//   held, expired       take over (older than `expire`, HAMi's 5 min)
//   held, owner gone    take over (the pod no longer exists)
//   held, unreadable    take over (HAMi cannot read it either)
//   held by a live pod  wait (poll) until the bind's deadline, then refuse
//                       naming the holder: kube-scheduler retries the pod
//
// The cost: binds to one node are serialised until Allocate (README,
// "Replacing HAMi's scheduler"; bench/hami_lock_bench).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "k8s/contract/node_lock.h"

namespace fracpack::k8s {

struct HamiNodeLockOptions {
  std::string annotation = "hami.io/mutex.lock";
  std::chrono::milliseconds expire{std::chrono::minutes(5)};
  // Whether fracpack's binds take it (the hami profile's nodeLock). Either
  // way a lock someone else holds ranks its node last.
  bool taken_by_binds = true;
  std::chrono::milliseconds poll{20};  // while another pod holds it
};

struct NodeLockValue {
  std::chrono::system_clock::time_point at;
  std::string namespace_name;  // empty: a bare time (HAMi's ParseNodeLock accepts it)
  std::string name;
};
std::string format_node_lock(std::chrono::system_clock::time_point at, const std::string& ns, const std::string& name);
std::optional<NodeLockValue> parse_node_lock(std::string_view text);

class HamiNodeLock final : public NodeLock {
 public:
  explicit HamiNodeLock(HamiNodeLockOptions options = {}) : options_(std::move(options)) {}

  bool taken_by_binds() const override { return options_.taken_by_binds; }
  // Takes the lock of `target.node` for the target pod before `deadline`.
  Status acquire(ApiClient& client, const BindTarget& target, std::chrono::steady_clock::time_point deadline) const override;
  // Releases it if the lock still names the target pod (HAMi's owner check).
  void release(ApiClient& client, const BindTarget& target) const override;
  // The pod ("namespace/name") the node's lock names at `now`, unless it is
  // older than `expire`; "" when none.
  std::string held_by(const Node& node, std::chrono::system_clock::time_point now) const override;

  const HamiNodeLockOptions& options() const { return options_; }

 private:
  HamiNodeLockOptions options_;
};

}  // namespace fracpack::k8s
