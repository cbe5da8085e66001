// The bind verb's steps, top-down in the order they run (bind_service.h):
// bind -> admit -> reserve (write_record) -> the hand-over of one job to the
// binder; then, on its worker, run_on_worker -> pre_bind (the node lock,
// fence_and_recheck) -> post_binding -> post_bind (the one rollback, the
// reservation's exit, the answer) -> settle. The binder only runs the job
// and lends it a connection (Binder::Worker); nothing calls back here: each
// step makes its own requests (k8s/contract/hami_node_lock.cc,
// k8s/bind_fence.cc, k8s/binding.cc).
#include "server/bind_service.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "common/error_body.h"
#include "k8s/binding.h"
#include "k8s/contract/node_lock.h"
#include "k8s/extender_codec.h"
#include "k8s/scheduler_names.h"
#include "server/answers.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

using scheduling::Ledger;
using scheduling::NodeState;
using Clock = Binder::Clock;
using Exit = k8s::Reservations::Exit;

}  // namespace

// What became of a bind's Binding: applied (ok), or the reason it was not;
// `pod_gone`: the pod no longer exists (404); `outcome_unknown`: it may have
// been applied (the answer was lost).
struct BindService::Posted {
  Status status = Status::Ok();
  bool pod_gone = false;
  bool outcome_unknown = false;
};

// The bind timeout ran out `doing` something, before the Binding was posted.
BindService::Posted BindService::too_late(const k8s::BindTarget& t, const std::string& doing) {
  return Posted{Error{"pod " + t.namespace_name + "/" + t.name + " was not bound to " + t.node +
                      ": fracpack's bind timeout (cluster.bindTimeout) ran out " + doing +
                      ", before the Binding could be posted; kube-scheduler will retry it"}};
}

// One bind's state, from admit to settle (kube-scheduler's CycleState and
// assumed pod in one): what kube-scheduler asked, what the steps decided,
// what the Binding writes, and the reply kube-scheduler waits on.
class BindService::BindCycle {
 public:
  BindCycle(k8s::BindingArgs asked, Reply answer, Clock::time_point arrival, std::chrono::milliseconds timeout)
      : args(std::move(asked)), who(args.pod_namespace + "/" + args.pod_name), reply(std::move(answer)), arrived(arrival),
        deadline(arrival + timeout) {}

  const k8s::BindingArgs args;  // node: kube-scheduler's choice
  const std::string who;        // "namespace/name"
  const Reply reply;
  // Not posted after the deadline: kube-scheduler has stopped waiting, and a
  // late Binding would only race whoever it asks next.
  const Clock::time_point arrived, deadline;
  // Decided by admit and reserve.
  k8s::Pod pod;               // as fracpack knows it
  k8s::BindTarget target;     // what the Binding writes: its annotations, the allocation record
  std::string reason;         // why these cards, for the placement log line (or why refused)
  bool reserved = false;      // this bind reserved (a retried one did not): the bind settles it
  bool gpu = false;           // cards to write (and fence)
  scheduling::PodRequest request;
  scheduling::Allocation allocation;
  // For pre-bind: the contract's node lock (null: none taken), and the
  // namespace whose bound pods the fence also counts (non-empty where it
  // has a GPU quota: another writer's binds on other nodes count against it).
  const k8s::NodeLock* node_lock = nullptr;
  std::string fence_namespace;
  // What pre-bind did.
  bool locked = false;  // the node lock is held
  bool moved = false;   // the recheck moved the reservation: `target` carries the new cards
};

BindService::BindService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                         RecentPods& recent, BindOptions options)
    : state_(state),
      reservations_(state.reservations()),
      contract_(state.contract()),
      evaluator_(evaluator),
      binder_(binder),
      metrics_(metrics),
      recent_(recent),
      options_(std::move(options)),
      record_keys_(contract_.record_keys()),
      node_lock_(options_.take_node_lock && contract_.node_lock() != nullptr && contract_.node_lock()->taken_by_binds()
                     ? contract_.node_lock()
                     : nullptr) {}

// The bind: admit, reserve, then the hand-over of the rest to a binder's
// worker as one job.
void BindService::bind(std::string_view body, Reply reply, std::chrono::steady_clock::time_point arrived) {
  auto args = k8s::parse_binding_args(body);
  if (!args) return reply(bad_request(args.message()));
  auto cycle = std::make_shared<BindCycle>(std::move(*args), std::move(reply), arrived, options_.bind_timeout);
  BindCycle& c = *cycle;
  if (!admit(c)) return;
  if (const char* refusal = reserve(c); refusal != nullptr) return refuse(c, refusal, c.reason);
  // What pre-bind will do. A GPU bind first takes the contract's node lock
  // (HAMi's device plugin finds the pod through it); then the fence reads
  // what the API server has bound on the node (another writer's binds the
  // watch has not delivered), and the reservation is rechecked beside it.
  if (c.gpu) {
    c.node_lock = node_lock_;
    write_record(c, c.allocation);
  }
  reservations_.bind_started(c.target.uid, c.target.node, c.node_lock != nullptr);
  binder_.run([this, cycle](const Binder::Worker* worker) { run_on_worker(*cycle, worker); });
}

void BindService::refuse(BindCycle& c, const char* reason, const std::string& message) {
  metrics_.bind_failed(reason);
  log_warn("bind refused", {{"pod", c.who}, {"node", c.args.node}, {"reason", message}});
  c.reply(HttpResponse(200, k8s::format_binding_result(message)));
}

// Admit: false when refused (and answered).
bool BindService::admit(BindCycle& c) {
  const k8s::BindingArgs& args = c.args;
  const std::string& who = c.who;
  std::optional<k8s::Pod> pod = state_.pod(args.pod_uid);
  if (!pod) pod = recent_.recall(args.pod_uid);
  if (!pod && args.pod_uid.empty()) pod = state_.pod_by_name(args.pod_namespace, args.pod_name);
  if (!pod) {
    refuse(c, "unknown_pod", "pod " + who + " (uid " + args.pod_uid +
                                 ") is not known to fracpack yet (its informer has not seen it); kube-scheduler will retry");
    return false;
  }
  // The UID names the pod; its namespace and name must agree, and a pod
  // bound already is not bound again elsewhere.
  if (pod->meta.namespace_name != args.pod_namespace || pod->meta.name != args.pod_name) {
    refuse(c, "identity_mismatch", "pod uid " + args.pod_uid + " is " + pod->key() + ", not " + who);
    return false;
  }
  if (!pod->node_name.empty() && pod->node_name != args.node) {
    refuse(c, "already_bound", "pod " + who + " is bound to node " + pod->node_name + " already, not to " + args.node);
    return false;
  }
  // Only the pods fracpack places, and only after it judged them: whoever
  // can reach the verbs must not bind other pods with fracpack's rights.
  const auto& ours = options_.scheduler_names;
  if (!k8s::placed_by_fracpack(pod->scheduler_name, ours)) {
    std::string names;
    for (const auto& n : ours) names += (names.empty() ? "" : ", ") + n;
    refuse(c, "not_ours", "pod " + who + " has schedulerName \"" + pod->scheduler_name + "\"; fracpack binds only pods of " + names);
    return false;
  }
  if (!recent_.judged(pod->meta.uid)) {
    refuse(c, "not_judged", "pod " + who + " (uid " + pod->meta.uid +
                                ") was never sent to fracpack's filter or prioritize: bind places only pods it has judged");
    return false;
  }
  c.target = k8s::BindTarget{args.pod_namespace, args.pod_name, pod->meta.uid, args.node, {}, {}};
  c.pod = std::move(*pod);
  return true;
}

// Reserve: the cards (or, for a pod without cards, its CPU and memory),
// chosen and reserved in one step. Returns the refusal's class (null:
// reserved, or nothing to reserve); c.reason says why.
const char* BindService::reserve(BindCycle& c) {
  const k8s::Pod& pod = c.pod;
  const std::string& node = c.args.node;
  auto req = contract_.pod_request(pod);
  if (!contract_.requests_gpu(pod)) {
    // No cards to choose: kube-scheduler's choice stands. Its CPU and memory
    // are reserved at once (the informer confirms), so the next pod's
    // verdicts see them.
    c.reason = "no GPU share asked: kube-scheduler's node, CPU and memory reserved";
    if (req) {
      // kube-scheduler shows fracpack such a pod only at bind: the policy counts it here.
      state_.read([&](const Ledger& ledger) {
        evaluator_.observe(*req, ledger);
        return 0;
      });
      const scheduling::PodFacts facts{pod.meta.uid, c.who, req->cpu_milli, req->memory_bytes};
      c.reserved = reservations_.reserve(facts, scheduling::Allocation{node, {}}, scheduling::Clock::now()).ok();
    }
    return nullptr;
  }
  if (!req) {
    c.reason = "pod " + c.who + ": " + req.message();
    return "invalid_pod";
  }
  c.gpu = true;
  c.request = *req;
  // A retried bind (its answer was lost) reuses what its first attempt reserved.
  const scheduling::PodFacts facts{pod.meta.uid, c.who, req->cpu_milli, req->memory_bytes};
  auto reserved = reservations_.reserve(facts, k8s::Reservations::CardChoice{evaluator_, c.request, node, c.who, &c.reason},
                                        scheduling::Clock::now());
  if (!reserved) {
    c.reason = reserved.message();
    return "no_longer_fits";
  }
  c.allocation = std::move(reserved->allocation);
  c.fence_namespace = reserved->namespace_quota ? pod.meta.namespace_name : std::string();
  c.reserved = !reserved->retried;
  if (reserved->retried) c.reason = "a retried bind: the cards reserved by the first attempt";
  return nullptr;
}

// The contract's allocation record for `allocation`, into c.target: written
// with the Binding (one write, §5.1), at reserve and again after a recheck.
void BindService::write_record(BindCycle& c, const scheduling::Allocation& allocation) {
  // Some records name what the node's cards are (gpushare's per-card memory).
  // Written under the ledger's shared lock rather than copying the node's cards.
  const k8s::Pod& pod = c.pod;
  k8s::BindTarget& target = c.target;
  const auto now = std::chrono::system_clock::now();
  target.annotations = state_.read([&](const Ledger& l) {
    const NodeState* n = l.node(allocation.node);
    if (n != nullptr) return contract_.allocation_annotations(pod, allocation, n->spec(), now);
    return contract_.allocation_annotations(pod, allocation, scheduling::NodeSpec{allocation.node, 0, 0, {}, {}, {}, 0}, now);
  });
  // Signed over the pod's UID, the node and the record (k8s/record_signature.h):
  // the node agent and every replica's ledger take no other.
  if (options_.signer) {
    const std::string message = k8s::record_message(pod.meta.uid, allocation.node, record_keys_, target.annotations);
    target.annotations.emplace_back(std::string(k8s::kRecordSignatureAnnotation), options_.signer->sign(message));
  }
  target.cards = scheduling::card_indices_text(allocation);
}

// The job on the binder's worker: pre-bind and bind, then post-bind, then,
// after an unknown outcome, settle. A null Worker: the binder is shutting
// down and nothing was sent.
void BindService::run_on_worker(BindCycle& c, const Binder::Worker* w) {
  if (w == nullptr) return post_bind(c, nullptr, Posted{Error{"fracpack is shutting down; the pod was not bound"}});
  const Posted posted = pre_bind(c, *w);
  post_bind(c, w, posted);
  // A bind that reserved and whose outcome was unknown is settled by a read
  // of the pod as soon as one can be made, not left to the reservation's TTL.
  if (posted.outcome_unknown && c.reserved) settle(c, *w);
}

// Pre-bind, then bind: a bind past its deadline is refused before anything
// is sent; a GPU bind takes the contract's node lock, then the fence and
// the recheck; then the Binding is posted.
BindService::Posted BindService::pre_bind(BindCycle& c, const Binder::Worker& w) {
  const k8s::BindTarget& t = c.target;
  // Standalone (no API server) nothing can race a late Binding.
  if (w.client != nullptr && Clock::now() >= c.deadline) return too_late(t, "while the bind waited for a worker");
  // Under the contract's node lock: taken first, kept when the Binding is
  // applied (or may have been: the device plugin releases it), released at
  // post-bind when it certainly was not.
  if (c.node_lock != nullptr && w.client != nullptr) {
    if (Status s = c.node_lock->acquire(*w.client, t, c.deadline); !s.ok()) {
      return Posted{Error{"pod " + c.who + " was not bound to " + t.node + ": " + s.message()}};
    }
    c.locked = true;
  }
  if (c.gpu && w.fence != nullptr && w.client != nullptr) {
    if (Posted refused = fence_and_recheck(c, w); !refused.status.ok()) return refused;
  }
  return post_binding(c, w);
}

// The fence (k8s/bind_fence.h), then the recheck: the pods the API server
// has bound on the node — and, where the namespace has a GPU quota, in the
// namespace unless the watch shows within a moment that the ledger has them
// — and the reservation kept, moved (the record written again), or refused
// beside them.
BindService::Posted BindService::fence_and_recheck(BindCycle& c, const Binder::Worker& w) {
  const k8s::BindTarget& t = c.target;
  const auto started = Clock::now();
  k8s::BindFence::ReadAt at;
  auto fresh = w.fence->node_pods(*w.client, t.node, c.arrived, c.deadline, &at);
  std::string where = "there";  // what the ledger could not be shown to hold
  Result<std::vector<k8s::Pod>> in_namespace = std::vector<k8s::Pod>{};
  if (fresh && !c.fence_namespace.empty()) {
    // A namespace's bound pods may be thousands: read them only when the
    // watch has not shown, within a moment, that the ledger has them.
    const bool caught_up =
        !at.marker_value.empty() && state_.wait_fence_marker(at.marker_value, std::min(c.deadline, Clock::now() + kWatchCatchUp));
    metrics_.bind_fence_quota(caught_up);
    if (!caught_up) {
      in_namespace = w.fence->namespace_pods(*w.client, c.fence_namespace, at, c.deadline);
      if (!in_namespace) {
        fresh = in_namespace.error();
        where = "in namespace " + c.fence_namespace + ", whose GPU quota it counts against";
      }
    }
  }
  metrics_.bind_fence(std::chrono::duration<double>(Clock::now() - started).count(), fresh.ok());
  if (!fresh && Clock::now() >= c.deadline) return too_late(t, "while reading bound pods from the API server (" + fresh.message() + ")");
  if (!fresh) {
    return Posted{Error{"pod " + c.who + " was not bound to " + t.node +
                        ": fracpack could not confirm that its ledger holds every pod the API server has bound " + where + " (" +
                        fresh.message() + "); kube-scheduler will retry it"}};
  }
  auto rechecked = reservations_.recheck(t.node, *fresh, t.uid, k8s::Reservations::CardChoice{evaluator_, c.request, c.args.node, c.who},
                                         *in_namespace);
  if (!rechecked) return Posted{Error{"pod " + c.who + " was not bound to " + t.node + ": " + rechecked.message()}};
  c.moved = rechecked->moved;
  write_record(c, rechecked->allocation);
  return Posted{};
}

// Bind: the Binding posted with what is left of the bind timeout — the
// node and the record in one write, with the UID precondition.
BindService::Posted BindService::post_binding(BindCycle& c, const Binder::Worker& w) {
  const k8s::BindTarget& t = c.target;
  if (w.client == nullptr) return bind_in_memory(c);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - Clock::now());
  if (left.count() <= 0) return too_late(t, "while the node's pods were read");
  // A Binding posted with a few milliseconds to go would time out while
  // the API server applies or refuses it: its outcome unknown, its
  // reservation held for nothing. Not posting it is an outcome known.
  // (A quarter of the whole bind timeout at most, for short ones.)
  const auto floor = std::min(kMinPostBudget, std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - c.arrived) / 4);
  if (left < floor) {
    return too_late(t, "while the node's pods were read (" + std::to_string(left.count()) + " ms were left, less than the " +
                           std::to_string(floor.count()) + " ms a Binding is given)");
  }
  Posted out;
  auto r = k8s::post_binding(*w.client, t, &out.pod_gone, &out.outcome_unknown, std::min(left, w.client->config().request_timeout));
  if (!r) out.status = Error{r.message()};
  return out;
}

// Standalone: the Binding applied to the store as the watch would show it
// (the record confirms the reservation).
BindService::Posted BindService::bind_in_memory(const BindCycle& c) {
  const k8s::BindTarget& t = c.target;
  if (auto current = state_.pod(t.uid); current && !current->node_name.empty() && current->node_name != t.node) {
    return Posted{Error{"pod " + t.namespace_name + "/" + t.name + " is already assigned to node " + current->node_name}};
  }
  k8s::Pod pod = c.pod;
  pod.node_name = t.node;
  for (const auto& kv : t.annotations) {
    auto it = std::find_if(pod.meta.annotations.begin(), pod.meta.annotations.end(), [&](const auto& e) { return e.first == kv.first; });
    if (it != pod.meta.annotations.end()) {
      it->second = kv.second;
    } else {
      pod.meta.annotations.emplace_back(kv.first, kv.second);
    }
  }
  pod.phase = "Running";
  state_.apply_pod(pod);
  return Posted{};
}

// Post-bind. A failed bind's one rollback: the node lock released where
// the Binding certainly was not applied, a FailedBinding Event; then the
// reservation's exit — kept for the watch to confirm, or unreserved, or
// kept while the outcome is unknown: Reservations decides — then the answer.
void BindService::post_bind(BindCycle& c, const Binder::Worker* w, const Posted& o) {
  const k8s::BindTarget& written = c.target;
  const std::string& uid = written.uid;
  const std::string& node = written.node;
  if (w != nullptr && !o.status.ok()) {
    if (c.locked && !o.outcome_unknown) c.node_lock->release(*w->client, written);
    if (w->events != nullptr) {
      w->events->record(k8s::EventRef{written.namespace_name, written.name, uid}, "Warning", "FailedBinding", o.status.message());
    }
  }
  reservations_.bind_ended(uid, node, c.node_lock != nullptr);
  if (c.reserved) reservations_.bind_finished(uid, {o.status.ok(), o.pod_gone, o.outcome_unknown});
  if (o.status.ok()) {
    if (c.reserved) metrics_.placed(evaluator_.policy_name());
    // One line per placement: where, and on which cards (the record the device plugin reads).
    log_info("placed", {{"pod", c.who}, {"uid", uid}, {"node", node}, {"cards", written.cards.empty() ? "-" : written.cards},
                        {"policy", std::string(evaluator_.policy_name())},
                        {"reason", c.moved ? c.reason + "; changed after reading what the API server has bound on the node" : c.reason}});
    if (options_.events != nullptr && !written.cards.empty()) {
      options_.events->record(k8s::EventRef{written.namespace_name, written.name, uid}, "Normal", "GPUAllocated",
                              "fracpack placed the pod on node " + node + ", card(s) " + written.cards);
    }
    c.reply(HttpResponse(200, k8s::format_binding_result("")));
    return;
  }
  log_warn("bind failed", {{"pod", c.who}, {"uid", uid}, {"node", node}, {"reason", o.status.message()}});
  if (c.reserved && o.outcome_unknown && !o.pod_gone) {
    // Releasing now could free cards the pod holds: it stays assumed
    // until the informer confirms it, or the reconciler proves it unbound.
    log_warn("bind outcome unknown: reservation kept", {{"pod", c.who}, {"uid", uid}, {"node", node}});
  }
  metrics_.bind_failed(o.pod_gone ? "pod_gone" : "api_error");
  c.reply(HttpResponse(200, k8s::format_binding_result(o.status.message())));
}

// Settle, after an unknown outcome (post-bind has answered; only with an
// API server): a few reads of the pod, spaced, each with a budget of its
// own, until one tells where it stands; Reservations decides the exit.
void BindService::settle(BindCycle& c, const Binder::Worker& w) {
  const std::string& uid = c.target.uid;
  const std::string& node = c.args.node;
  k8s::Presence p = k8s::Presence::kUnknown;
  for (int attempt = 0; attempt < kSettleReads && p == k8s::Presence::kUnknown && w.client != nullptr; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kSettleSpacing);
    p = k8s::already_there(*w.client, c.target, k8s::kSettleReadTimeout);
  }
  const Exit exit = reservations_.bind_settled(uid, p);
  switch (p) {
    case k8s::Presence::kThere:
      log_info("bind outcome settled: bound", {{"pod", c.who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kGone:
      log_info("bind outcome settled: the pod is gone; reservation released", {{"pod", c.who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kNotThere:
      if (exit == Exit::kReleased) {
        log_info("bind outcome settled: not bound; reservation released", {{"pod", c.who}, {"uid", uid}, {"node", node}});
      }
      return;
    case k8s::Presence::kUnknown:
      log_warn("bind outcome still unknown: reservation kept until the reconciler settles it", {{"pod", c.who}, {"uid", uid}, {"node", node}});
      return;
  }
}

std::vector<bool> BindService::binding_to(const std::vector<std::string_view>& nodes) const { return reservations_.binding_to(nodes); }

bool BindService::any_binding() const { return reservations_.any_binding(); }

}  // namespace fracpack::server
