// Which container is kubelet admitting? kubelet's Allocate carries device
// IDs only (../shared/reference/node-side.md §B1.3, §B2): the agent finds the container from
// the allocation records the extender wrote at bind (fracpack.io/allocation)
// on the pods bound to its node, and answers with exactly the cards the
// record names, or refuses.
//
// What is known for certain: kubelet admits one pod at a time and, within a
// pod, allocates its containers in order (init containers, then app
// containers; only those asking the device resource), one Allocate each.
// So once a pod's first container is identified, the pod's next Allocate
// calls are its next containers (a refusal of ours ends the pod's
// admission). The first container is identified by the number of devices
// kubelet asks for, among the pods still waiting, and then by the order
// kubelet admits pods in: the order their binds reach it. kubelet's pod
// source and the agent's pod watch are the same query (spec.nodeName=<node>)
// on the same ordered stream, and kubelet takes each added pod as one
// update, so the pod the agent saw bound first is the one kubelet admits
// first (`arrival`). Pods the agent first saw in one list (its start, a
// relist) have no known order among themselves:
//
//   one candidate                 it.
//   several, one seen first       it, unless another is older on other
//                                 cards (kubelet takes pods that reach it
//                                 together, after its own relist or
//                                 restart, oldest first): refused.
//   several seen together,        the oldest: equivalent pods (the same
//     all equivalent              remaining containers on the same cards
//                                 with the same shares) get the same cards,
//                                 so the choice cannot differ from the
//                                 extender's.
//   several seen together,        refused, naming them: handing one pod
//     not equivalent              another's cards would put the ledger and
//                                 the cards out of step for good: when one
//                                 leaves, the wrong card is freed. kubelet
//                                 reports the refusal on the pod.
//   the first is a pod whose      refused at once, naming it (its record is
//     record cannot serve         missing, forged, another's): it is
//                                 kubelet's turn, and it is passed over
//                                 from then on (kubelet fails it). Waiting
//                                 for a pod that can be served would hand
//                                 that pod's cards to it.
//   none                          refused: no record names this container
//                                 (the caller waits for its pod watch
//                                 first, when the API server lists one).
//
// kubelet's view may be ahead of the agent's watch (its own relist across an
// API server restart hands it pods the agent's watch has not delivered
// yet). So when an Allocate begins a pod, the agent lists the pods waiting
// on its node from the API server (DevicesAndPods::set_waiting_lister) and
// those its watch has not shown are rivals as later-bound pods
// (add_unseen): an older one on other cards makes the answer a refusal.
// kubelet fails the pod it was admitting on that refusal, which looks
// waiting until its status arrives: none of the pods it may have been is
// served before that verdict (undecided()); the next Allocate waits a
// moment for it, so that one ambiguity costs one pod, not the whole burst.
//
// What this cannot see: the list is read from one API server's cache; with
// several behind a load balancer, the agent's may lag the one kubelet
// relisted from, and a pod kubelet knows can still be missing from it.
// And a pod kubelet rejects before its devices are
// allocated (an eviction or sysctl admission handler runs first) stays a
// candidate until its status says Failed; the next pod's Allocate in that
// window would be matched to it. Those handlers reject pods the scheduler
// should not have bound (node pressure); the window is one status update.
// And kubelet's own relist hands it the pods bound meanwhile at once,
// sorted by creation time, ties (one creation second) in no set order. The
// agent merges arrivals when it may be so (merge_arrivals_upto): for a
// minute after its own watch of the API server broke (kubelet's broke
// too: PodWatch::watch_interrupted), when kubelet restarted (the pods
// waiting then: merge_arrivals), and once a pod has waited unasked
// longer than kubelet takes (DevicesAndPods::set_stale_wait). A relist of
// kubelet's alone (its watch expired, the agent's did not) within that
// wait, of pods created in the same second on different cards, is still
// taken in the agent's arrival order, which kubelet may not follow; so is
// such a pod the API server lists and the watch has not shown yet
// (add_unseen rules ties only while the chosen pod's arrival is merged).
// So is a pod kubelet's first list after its restart held that a lagging
// watch shows only later; but kubelet 1.20 admits that list's pods before
// a device plugin can register again and fails them (README, "Kubernetes
// versions"), and none is bound here once the agent's cards read
// unregistered (about a second after kubelet stops).
//
// Pure and deterministic: the agent feeds it the pods and serialises calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::node {

// What a container's spec sets itself that a limiter cares about: it may
// not lift its own limit (k8s/limiter_guard.h; checked at Allocate).
struct SpecSettings {
  std::vector<std::string> env;          // env[].name
  std::vector<std::string> env_from;     // envFrom[].prefix
  std::vector<std::string> mount_paths;  // volumeMounts[].mountPath
  bool operator==(const SpecSettings&) const = default;
};

// A container that asks kubelet for the agent's devices.
struct GpuContainer {
  std::string name;
  bool init = false;
  int devices = 0;  // resources.limits[<resource>]: how many IDs kubelet allocates
  SpecSettings spec;
  // Each of its cards must hold no other share (the contract's request:
  // HAMi's 100 % cores), as the extender placed it.
  bool alone = false;
};

// A pod bound to this node that has not started yet.
struct WaitingPod {
  std::string uid;
  std::string key;                 // namespace/name
  std::string creation_timestamp;  // RFC 3339: kubelet sorts pods that arrive together by it
  // When the agent first saw the pod bound to its node (a sequence number;
  // pods first seen in one list share theirs).
  uint64_t arrival = 0;
  std::vector<GpuContainer> containers;  // in kubelet's Allocate order
  // The record's cards per container (same order), or why the record
  // cannot serve (missing, malformed, another node, a container missing,
  // not signed by fracpack's extender, another scheduler's pod).
  Result<std::vector<std::vector<scheduling::CardShare>>> cards = Error{"no allocation record"};
  // What the whole record holds per card (scheduling::charges_of): what
  // the pod holds once kubelet admits it. Empty when `cards` is an error.
  std::vector<scheduling::CardCharge> holding;
};

// What a pod on the node holds per card, for the agent's own account.
struct Holding {
  std::string key;  // namespace/name, for the agent's log
  std::vector<scheduling::CardCharge> charges;
  bool operator==(const Holding&) const = default;
};

// A pod bound to the node that no longer waits (running, or being
// deleted): it holds what the agent served it, or else what its record
// says when fracpack signed it (`charges` empty: nothing known).
struct LivePod {
  std::string key;
  std::optional<std::vector<scheduling::CardCharge>> charges;
};

struct Assignment {
  std::string pod_uid;
  std::string pod_key;
  std::string container;
  std::vector<scheduling::CardShare> cards;
  SpecSettings spec;  // the container's own settings
  bool alone = false;  // GpuContainer::alone
};

class AllocationMatcher {
 public:
  // The pods waiting on the node and the other live pods there (the agent's
  // pod watch): pods in neither are gone, and what they held is forgotten.
  void set_pods(std::vector<WaitingPod> pods, std::map<std::string, LivePod> live = {});
  // The container kubelet allocates `devices` IDs to, marked as served.
  Result<Assignment> allocate(int devices);
  // What allocate would answer, without serving it (GetPreferredAllocation).
  Result<Assignment> peek(int devices) const;

  // Whether an allocate(devices) refusal is for want of a candidate (a
  // later pod event may bring it) rather than ambiguity.
  bool lacks_candidate(int devices) const;
  // Whether `listed` (the API server's waiting pods) holds a pod that could
  // begin with a container asking `devices` (not refused, not begun).
  bool lists_candidate(const std::vector<WaitingPod>& listed, int devices) const { return !first_candidates_in(listed, devices).empty(); }

  // When allocate(devices) would refuse because the pod whose turn it is
  // has a record that cannot serve: that pod's UID and key (the caller
  // confirms it still waits, and excludes it otherwise).
  std::optional<std::pair<std::string, std::string>> unservable_turn(int devices) const;

  // kubelet restarted: it sees every pod bound so far at once, so their
  // arrival order no longer says which it admits first.
  void merge_arrivals();
  // kubelet may relist: the pods waiting and those arriving up to
  // `arrival` reach it at once.
  void merge_arrivals_upto(uint64_t arrival) { merged_upto_ = std::max(merged_upto_, arrival); }

  // The pods the API server lists as waiting on the node now, read when
  // an Allocate begins a pod: kubelet may know pods bound here that the
  // watch has not shown yet (found on the real tier, CI of 2026-11-27:
  // kubelet relisted across an API server restart and admitted the older
  // of two pods, bound second; the agent's watch had shown only the first,
  // its one candidate, and answered with that pod's cards). Those the
  // watch has not shown (nor seen leave) are rivals of the candidate until
  // forget_unseen() or the next set_pods(): bound after every pod the watch
  // shows, they are ruled as a later-bound pod the watch shows is (an older
  // one on other cards makes the choice ambiguous; one created in the same
  // second too, while the chosen pod's arrival is merged, as kubelet's
  // relist has no order for ties). They are never chosen:
  // what the agent serves is what its watch shows.
  void add_unseen(const std::vector<WaitingPod>& listed);
  void forget_unseen() { unseen_.clear(); }
  size_t unseen() const { return unseen_.size(); }
  // Whether `a` would begin its pod's admission (its first container).
  bool begins_pod(const Assignment& a) const { return !served_.contains(a.pod_uid); }

  // After a refusal for ambiguity, the pods kubelet may have been admitting
  // (uid, namespace/name): it fails that one, and until it is known which
  // (its status reaches the API server a moment later, or much later when
  // kubelet's status update fails), any of them may be dead at kubelet. A
  // pod in that set is never served: when the rules choose one, the answer
  // is refused as ambiguous too (the pod kubelet admits is that one or,
  // were it dead, another), and the caller first waits a little for
  // verdicts. Each refusal owes one verdict: a member seen Failed (or
  // finished) is excluded and pays one; once every refusal's verdict is
  // in, the rest are candidates again. Two refusals, one verdict: the other
  // dead pod is still among them (found by the project's CI on the real
  // tier, 2026-11-28: the verdict on a first refusal settled a second one
  // too, and the next pod was answered with the cards of the pod kubelet
  // had failed on the second). A pod deleted meanwhile is dropped from the
  // set and pays nothing (it may have been the live one).
  const std::vector<std::pair<std::string, std::string>>& undecided() const { return undecided_; }
  size_t verdicts_owed() const { return verdicts_owed_; }
  // The pod is Failed or Succeeded at the API server: kubelet's verdict.
  void verdict(const std::string& failed_uid);
  // A refusal that could be any of these pods' (kubelet fails one).
  void add_undecided(const std::vector<std::pair<std::string, std::string>>& pods);
  // One of them is gone for another reason than kubelet's verdict (deleted,
  // re-created): it tells nothing; the others are still undecided.
  void drop_undecided(const std::string& uid);
  bool is_undecided(const std::string& uid) const;
  // Whether allocate(devices) would refuse because the pod the rules choose
  // may be one kubelet failed (a verdict would settle it).
  bool awaits_verdict(int devices) const;
  // Whether the watch shows the pod waiting.
  bool waits(const std::string& uid) const;
  // Whether kubelet has yet to ask for the pod: it waits, none of its
  // containers served, not refused, not one a refusal may have hit.
  bool unasked(const std::string& uid) const {
    return waits(uid) && !served_.contains(uid) && !excluded_.contains(uid) && !is_undecided(uid);
  }

  // The API server showed this pod gone, finished, being deleted or
  // changed since the watch saw it, or the agent refused its Allocate (so
  // kubelet fails it): it is no candidate, and is not continued, while it
  // waits. `refusal`: what the agent refused it with, answered again when
  // kubelet asks again while no other pod waits.
  void exclude(const std::string& uid, const std::string& refusal = "");
  // allocate() served this pod's container, but the agent could not build
  // its answer (its limiter refused it, a card turned unusable meanwhile):
  // kubelet fails the pod, so the serve is taken back and the pod excluded
  // with `refusal` — otherwise the next pod's Allocate would continue this
  // one (its next container's cards).
  void refuse_served(const std::string& uid, const std::string& refusal);

  // The agent's account: per card, what the live pods other than `uid`
  // hold — those it served (holdings()) and those running with a record
  // fracpack signed.
  std::map<int, scheduling::CardCharge> held_by_others(const std::string& uid) const;
  // The pods served at least one container, with what their record holds.
  const std::map<std::string, Holding>& holdings() const { return holdings_; }

  // Containers served per pod UID (the agent persists it across restarts).
  const std::map<std::string, int>& served() const { return served_; }
  void restore(std::map<std::string, int> served, std::string last_uid, std::map<std::string, Holding> holdings = {},
               std::vector<std::pair<std::string, std::string>> undecided = {}, size_t verdicts_owed = 0,
               const std::vector<std::string>& excluded = {});
  // exclude()d pods that still wait (the agent persists them).
  std::vector<std::string> excluded() const { return {excluded_.begin(), excluded_.end()}; }
  const std::string& last_uid() const { return last_uid_; }
  size_t pods() const { return pods_.size(); }

 private:
  // The pod and its next container index for `devices`.
  // `refused_uid`: set when the refusal is the turn of a pod whose record
  // cannot serve.
  // `undecided`: set when the refusal is ambiguity, to the pods kubelet
  // may be admitting. `suspect`: set when it is because the rules chose a
  // pod kubelet may have failed (undecided()).
  Result<std::pair<const WaitingPod*, size_t>> find(int devices, std::string* refused_uid,
                                                    std::vector<const WaitingPod*>* undecided = nullptr, bool* suspect = nullptr) const;
  // No more verdicts owed than undecided pods; none owed: none undecided.
  void bound_verdicts_owed();
  // The pods waiting to begin admission with a container asking `devices`,
  // their records usable or not.
  std::vector<const WaitingPod*> first_candidates(int devices) const;
  // Those of `pods` asking `devices` first, not begun, not excluded.
  std::vector<const WaitingPod*> first_candidates_in(const std::vector<WaitingPod>& pods, int devices) const;
  size_t next_of(const WaitingPod& p) const;

  std::vector<WaitingPod> pods_;
  std::vector<WaitingPod> unseen_;          // add_unseen(): listed, not shown by the watch yet
  std::vector<std::pair<std::string, std::string>> undecided_;  // undecided()
  size_t verdicts_owed_ = 0;                                     // verdicts_owed()
  // Pods the watch showed and then saw leave the node (deleted, finished):
  // a list read from a lagging cache may still show them waiting. The
  // newest kDepartedKept, oldest first.
  std::vector<std::string> departed_;
  static constexpr size_t kDepartedKept = 1024;
  std::map<std::string, LivePod> live_;     // live pods that no longer wait
  std::map<std::string, Holding> holdings_; // pods served, by uid, until they are gone
  std::set<std::string> excluded_;          // exclude()d, while they wait
  std::map<std::string, std::string> refusals_;  // uid -> the refusal it had, while it waits
  std::map<std::string, int> served_;  // uid -> containers allocated
  std::string last_uid_;               // the pod kubelet allocated to last
  uint64_t merged_upto_ = 0;           // arrivals up to this one count as one (merge_arrivals)
};

// Whether a's containers from index `from_a` on and b's from `from_b` on ask
// the same devices on the same cards with the same shares.
bool equivalent(const WaitingPod& a, size_t from_a, const WaitingPod& b, size_t from_b);

}  // namespace fracpack::node
