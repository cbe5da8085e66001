// The node agent's view of the pods bound to its node: an informer sink
// (list+watch of /api/v1/pods with fieldSelector spec.nodeName=<node>, the
// query kubelet itself makes) that keeps the pods still waiting for
// kubelet's Allocate (records.h: may_wait) with the containers that ask the
// agent's resource, and hands them to DevicesAndPods's matcher on every change.
// A pod that asks nothing of the resource never reaches the matcher. The
// order pods are first seen bound is their `arrival` (the matcher's
// tie-break: kubelet admits them in that order).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "k8s/contract/fracpack.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "node/devices_and_pods.h"
#include "node/records.h"

namespace fracpack::node {

// The field selector of the agent's pod informer.
std::string pods_on_node_selector(const std::string& node);

class PodWatch : public k8s::InformerSink {
 public:
  PodWatch(DevicesAndPods& state, std::string node, RecordRules rules, k8s::Selection selection);

  void begin_list(bool consistent) override;
  Status list_item(std::string_view object_json) override;
  void end_list(const std::string& resource_version) override;
  void abort_list() override;
  Result<std::string> event(k8s::WatchEventType type, std::string_view object_json) override;

  // A complete list has been applied (Allocate answers can be trusted).
  bool synced() const;
  // Waiting pods whose record cannot serve them (missing, malformed, for
  // another node), with the reason: "namespace/name: why".
  std::vector<std::string> unusable() const;

 private:
  // The pod as the matcher sees it, or nothing when it does not wait or
  // asks nothing of the resource.
  std::optional<WaitingPod> waiting(const k8s::Pod& pod) const;
  // Keeps the pod in `waiting` or `live` (or neither, when it is finished
  // or not on this node); `arrival` for a newly waiting one.
  void place(const k8s::Pod& pod, bool deleted, std::map<std::string, WaitingPod>& waiting, std::map<std::string, LivePod>& live,
             uint64_t arrival);
  void publish();  // with mu_ held

  DevicesAndPods& state_;
  const std::string node_;
  const RecordRules rules_;
  const k8s::Selection selection_;
  mutable std::mutex mu_;
  std::map<std::string, WaitingPod> pods_;     // uid -> waiting pod
  std::map<std::string, WaitingPod> listing_;  // a list in progress
  std::map<std::string, LivePod> live_;        // uid -> live pod that no longer waits (the agent's account)
  std::map<std::string, LivePod> live_listing_;
  bool synced_ = false;
  uint64_t arrivals_ = 0;      // the last arrival number given (WaitingPod::arrival)
  uint64_t list_arrival_ = 0;  // the one the list in progress gives its new pods
};

}  // namespace fracpack::node
