// The node agent's view of the pods bound to its node: an informer sink
// (list+watch of /api/v1/pods with fieldSelector spec.nodeName=<node>, the
// query kubelet itself makes) that keeps the pods still waiting for
// kubelet's Allocate (records.h: may_wait) with the containers that ask the
// agent's resource, and hands them to DevicesAndPods's matcher on every change.
// A pod that asks nothing of the resource never reaches the matcher. The
// order pods are first seen bound is their `arrival` (the matcher's
// tie-break: kubelet admits them in that order).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "k8s/contract/fracpack.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "node/devices_and_pods.h"
#include "node/records.h"

namespace fracpack::node {

// The field selector of the agent's pod informer: kubelet's own.
std::string pods_on_node_selector(const std::string& node);

// The pod as the matcher sees it, or nothing when it is not on `node`, does
// not wait for kubelet (records.h: may_wait) or asks nothing of the
// contract's device resource.
std::optional<WaitingPod> waiting_on_node(const k8s::Pod& pod, const RecordRules& rules, const std::string& node);
// The waiting pods of a PodList (the API server's answer to the informer's
// query), as waiting_on_node reads each.
Result<std::vector<WaitingPod>> waiting_in_list(std::string_view list_json, const RecordRules& rules, const std::string& node,
                                                const k8s::Selection& selection);

class PodWatch : public k8s::InformerSink {
 public:
  PodWatch(DevicesAndPods& state, std::string node, RecordRules rules, k8s::Selection selection);

  void begin_list(bool consistent) override;
  Status list_item(std::string_view object_json) override;
  void end_list(const std::string& resource_version) override;
  void abort_list() override;
  Result<std::string> event(k8s::WatchEventType type, std::string_view object_json) override;
  // The API server went away or refused the watch: kubelet's watch of it
  // broke too, and kubelet relists — it takes the pods bound meanwhile, and
  // those still waiting, in one batch, oldest first, ties (the same second)
  // in no set order. Until kRelistWindow after the last interruption, the
  // pods first seen bound share one arrival with those waiting (the
  // matcher's "seen together": only equivalent ones are told apart).
  // Found on the real tier (Real.E2, 2026-11-28): six pods created in the
  // same second were bound during kube-apiserver's restart; the agent's
  // watch showed them one by one, kubelet relisted 12 s later and admitted
  // restart-0, bound last, first; the agent answered with restart-2's
  // cards (the earliest seen, same creation second).
  void watch_interrupted() override;
  static constexpr std::chrono::seconds kRelistWindow{60};

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
  // With mu_ held. `finished`: pods that were waiting and kubelet has
  // failed at admission (its verdict, DevicesAndPods::set_pods).
  void publish(std::vector<std::string> finished = {});

  DevicesAndPods& state_;
  const std::string node_;
  const RecordRules rules_;
  const k8s::Selection selection_;
  mutable std::mutex mu_;
  std::map<std::string, WaitingPod> pods_;     // uid -> waiting pod
  std::map<std::string, WaitingPod> listing_;  // a list in progress
  std::map<std::string, LivePod> live_;        // uid -> live pod that no longer waits (the agent's account)
  std::map<std::string, LivePod> live_listing_;
  // Waiting pods the list in progress shows failed at admission
  // (failed_at_allocate).
  std::vector<std::string> finished_listing_;
  bool synced_ = false;
  uint64_t arrivals_ = 0;      // the last arrival number given (WaitingPod::arrival)
  uint64_t list_arrival_ = 0;  // the one the list in progress gives its new pods
  // watch_interrupted(): until then, new pods get `window_arrival_`.
  std::chrono::steady_clock::time_point window_until_{};
  uint64_t window_arrival_ = 0;
  // The arrival a pod first seen now gets (with mu_ held).
  uint64_t next_arrival();
};

}  // namespace fracpack::node
