#include "server/bind_service.h"

#include <algorithm>
#include <optional>

#include "common/error_body.h"
#include "k8s/extender_codec.h"
#include "k8s/scheduler_names.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

using scheduling::Ledger;
using scheduling::NodeState;
using scheduling::Verdict;
using Settlement = k8s::Reservations::Settlement;

HttpResponse json_response(int status, std::string body) { return HttpResponse{status, std::move(body)}; }
HttpResponse bad_request(const std::string& message) { return json_response(400, error_body(message)); }

}  // namespace

// One bind between the binder's hand-over and its answer: what the service
// decided at arrival, and the reply kube-scheduler waits on.
class BindService::BindInFlight final : public Binder::Listener {
 public:
  // `pod`: for a fenced bind, the pod as it was at arrival (its record is
  // rewritten from it if the reservation moves); otherwise only its UID is kept.
  BindInFlight(BindService& service, std::string uid, k8s::Pod pod, std::string node, Placement placement, std::string who,
               bool per_node, Reply reply)
      : service_(service),
        uid_(std::move(uid)),
        pod_(std::move(pod)),
        node_(std::move(node)),
        placement_(std::move(placement)),
        who_(std::move(who)),
        per_node_(per_node),
        reply_(std::move(reply)) {}

  Status recheck(const std::vector<k8s::Pod>& fresh, const std::vector<k8s::Pod>& in_namespace, k8s::BindTarget& target,
                 bool* moved) override {
    return service_.recheck(pod_, placement_.request, who_, fresh, in_namespace, target, moved);
  }
  bool watch_caught_up(const std::string& marker_value, Binder::Clock::time_point until) override {
    return service_.state_.wait_fence_marker(marker_value, until);
  }
  void finished(Binder::Outcome outcome, const k8s::BindTarget& written) override {
    service_.uncount_in_flight(written.uid, written.node, per_node_);
    service_.finish(std::move(outcome), written, who_, placement_.reserved, placement_.reason, reply_);
  }
  void settled(k8s::Presence presence) override { service_.settle(presence, uid_, who_, node_); }

 private:
  BindService& service_;
  const std::string uid_;
  const k8s::Pod pod_;
  const std::string node_;  // kube-scheduler's choice
  const Placement placement_;
  const std::string who_;
  const bool per_node_;  // counted in binding_to_
  const Reply reply_;
};

BindService::BindService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                         RecentPods& recent, BindOptions options)
    : state_(state),
      contract_(state.contract()),
      evaluator_(evaluator),
      binder_(binder),
      metrics_(metrics),
      recent_(recent),
      options_(std::move(options)),
      record_keys_(contract_.record_keys()) {}

void BindService::bind(const std::string& body, Reply reply, std::chrono::steady_clock::time_point arrived) {
  auto args = k8s::parse_binding_args(body);
  if (!args) return reply(bad_request(args.message()));
  const std::string who = args->pod_namespace + "/" + args->pod_name;
  auto refuse = [&](const char* reason, const std::string& message) {
    metrics_.bind_failed(reason);
    log_warn("bind refused", {{"pod", who}, {"node", args->node}, {"reason", message}});
    reply(json_response(200, k8s::format_binding_result(message)));
  };
  std::optional<k8s::Pod> pod = state_.pod(args->pod_uid);
  if (!pod) pod = recent_.recall(args->pod_uid);
  if (!pod && args->pod_uid.empty()) pod = state_.pod_by_name(args->pod_namespace, args->pod_name);
  if (!pod) {
    return refuse("unknown_pod", "pod " + who + " (uid " + args->pod_uid +
                                     ") is not known to fracpack yet (its informer has not seen it); kube-scheduler will retry");
  }
  // The UID names the pod; its namespace and name must agree, and a pod
  // bound already is not bound again elsewhere.
  if (pod->meta.namespace_name != args->pod_namespace || pod->meta.name != args->pod_name) {
    return refuse("identity_mismatch", "pod uid " + args->pod_uid + " is " + pod->key() + ", not " + who);
  }
  if (!pod->node_name.empty() && pod->node_name != args->node) {
    return refuse("already_bound", "pod " + who + " is bound to node " + pod->node_name + " already, not to " + args->node);
  }
  // Only the pods fracpack places, and only after it judged them: whoever
  // can reach the verbs must not bind other pods with fracpack's rights.
  const auto& ours = options_.scheduler_names;
  if (!k8s::placed_by_fracpack(pod->scheduler_name, ours)) {
    std::string names;
    for (const auto& n : ours) names += (names.empty() ? "" : ", ") + n;
    return refuse("not_ours", "pod " + who + " has schedulerName \"" + pod->scheduler_name + "\"; fracpack binds only pods of " + names);
  }
  if (!recent_.judged(pod->meta.uid)) {
    return refuse("not_judged", "pod " + who + " (uid " + pod->meta.uid +
                                    ") was never sent to fracpack's filter or prioritize: bind places only pods it has judged");
  }
  Placement placement = place(*pod, args->node, who);
  if (placement.refusal != nullptr) return refuse(placement.refusal, placement.reason);
  Binder::Job job;
  job.target = k8s::BindTarget{args->pod_namespace, args->pod_name, pod->meta.uid, args->node, {}, {}};
  job.arrived = arrived;
  job.deadline = job.arrived + options_.bind_timeout;
  // Before the Binding is posted, the fence reads what the API server has
  // bound on the node (another writer's binds the watch has not
  // delivered): the reservation is checked beside it, moved or refused.
  job.fenced = placement.gpu;
  // Its namespace's too where it has a GPU quota: another writer's binds
  // on other nodes count against it.
  if (placement.gpu && placement.quota) job.fence_namespace = pod->meta.namespace_name;
  if (placement.gpu) write_record(*pod, placement.allocation, job.target);
  // A bind whose outcome was unknown is settled by a read of the pod as
  // soon as the binder can make one, not left to the reservation's TTL.
  job.settle_unknown = placement.reserved;
  const bool gpu = placement.gpu;
  const bool per_node = gpu && options_.one_bind_per_node;
  auto in_flight = std::make_shared<BindInFlight>(*this, pod->meta.uid, gpu ? *pod : k8s::Pod{}, args->node, std::move(placement), who,
                                                  per_node, std::move(reply));
  job.pod = std::move(*pod);
  count_in_flight(job.target.uid, job.target.node, per_node);
  binder_.bind(std::move(job), std::move(in_flight));
}

Status BindService::recheck(const k8s::Pod& pod, const scheduling::PodRequest& req, const std::string& who,
                            const std::vector<k8s::Pod>& fresh, const std::vector<k8s::Pod>& in_namespace, k8s::BindTarget& target,
                            bool* moved) {
  auto rechecked = state_.reservations().recheck(target.node, fresh, pod.meta.uid,
                                                 [&](const Ledger& l) { return choose_cards(req, l, target.node, who, nullptr); }, in_namespace);
  if (!rechecked) return Error{rechecked.message()};
  *moved = rechecked->moved;
  write_record(pod, rechecked->allocation, target);
  return Status::Ok();
}

void BindService::count_in_flight(const std::string& uid, const std::string& node, bool per_node) {
  std::lock_guard lock(in_flight_mu_);
  if (per_node) ++binding_to_[node];
  binding_uids_.insert(uid);
}

void BindService::uncount_in_flight(const std::string& uid, const std::string& node, bool per_node) {
  std::lock_guard lock(in_flight_mu_);
  if (per_node) {
    if (auto it = binding_to_.find(node); it != binding_to_.end() && --it->second == 0) binding_to_.erase(it);
  }
  if (auto it = binding_uids_.find(uid); it != binding_uids_.end()) binding_uids_.erase(it);
}

bool BindService::any_binding() const {
  std::lock_guard lock(in_flight_mu_);
  return !binding_to_.empty();
}

std::vector<bool> BindService::binding_to(const std::vector<std::string_view>& nodes) const {
  std::lock_guard lock(in_flight_mu_);
  std::vector<bool> out;
  if (binding_to_.empty()) return out;
  out.reserve(nodes.size());
  for (std::string_view n : nodes) out.push_back(binding_to_.find(n) != binding_to_.end());
  return out;
}

void BindService::settle(k8s::Presence p, const std::string& uid, const std::string& who, const std::string& node) {
  switch (p) {
    case k8s::Presence::kThere:
      state_.reservations().settle(uid, Settlement::kBindingAccepted);
      log_info("bind outcome settled: bound", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kGone:
      state_.reservations().settle(uid, Settlement::kPodGone);
      log_info("bind outcome settled: the pod is gone; reservation released", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kNotThere: {
      // Unless kube-scheduler's retry is binding it right now (it reuses
      // this reservation and settles it itself).
      {
        std::lock_guard lock(in_flight_mu_);
        if (binding_uids_.contains(uid)) return;
      }
      if (state_.reservations().settle(uid, Settlement::kNotBound)) {
        log_info("bind outcome settled: not bound; reservation released", {{"pod", who}, {"uid", uid}, {"node", node}});
      }
      return;
    }
    case k8s::Presence::kUnknown:
      log_warn("bind outcome still unknown: reservation kept until the reconciler settles it", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
  }
}


BindService::Placement BindService::place(const k8s::Pod& pod, const std::string& node, const std::string& who) {
  Placement out;
  auto req = contract_.pod_request(pod);
  if (!contract_.requests_gpu(pod)) {
    // No cards to choose: kube-scheduler's choice stands. Its CPU and memory
    // are reserved at once (the informer confirms), so the next pod's
    // verdicts see them.
    out.reason = "no GPU share asked: kube-scheduler's node, CPU and memory reserved";
    if (req) {
      // kube-scheduler shows fracpack such a pod only at bind: the policy counts it here.
      state_.read([&](const Ledger& ledger) {
        evaluator_.observe(*req, ledger);
        return 0;
      });
      const scheduling::PodFacts facts{pod.meta.uid, who, req->cpu_milli, req->memory_bytes};
      out.reserved = state_.reservations().reserve(facts, [&](const Ledger&) -> Result<scheduling::Allocation> {
                       return scheduling::Allocation{node, {}};
                     }, scheduling::Clock::now()).ok();
    }
    return out;
  }
  if (!req) {
    out.refusal = "invalid_pod";
    out.reason = "pod " + who + ": " + req.message();
    return out;
  }
  out.gpu = true;
  out.request = *req;
  // A retried bind (its answer was lost): the reservation is already there.
  const bool retry = state_.read([&](const Ledger& l) {
    out.quota = l.quota(pod.meta.namespace_name) != nullptr;
    const scheduling::PodRecord* r = l.pod(pod.meta.uid);
    if (r == nullptr || r->node != node) return false;
    out.allocation = r->allocation;
    return true;
  });
  if (retry) {
    out.reason = "a retried bind: the cards reserved by the first attempt";
    return out;
  }
  const scheduling::PodFacts facts{pod.meta.uid, who, req->cpu_milli, req->memory_bytes};
  auto chosen = state_.reservations().reserve(facts, [&](const Ledger& l) { return choose_cards(*req, l, node, who, &out.reason); },
                                     scheduling::Clock::now());
  if (!chosen) {
    out.refusal = "no_longer_fits";
    out.reason = chosen.message();
    return out;
  }
  out.reserved = true;
  out.allocation = std::move(*chosen);
  return out;
}


Result<scheduling::Allocation> BindService::choose_cards(const scheduling::PodRequest& req, const Ledger& ledger,
                                                             const std::string& node, const std::string& who, std::string* reason) {
  const NodeState* n = ledger.node(node);
  if (n == nullptr || !n->present()) return Error{"node " + node + " is not known to fracpack"};
  Verdict v = evaluator_.evaluate_one(req, *n);
  if (!v.fits) return Error{"pod " + who + " no longer fits node " + node + ": " + v.reason};
  if (reason != nullptr) *reason = "the policy's best cards on the node (score " + std::to_string(v.score) + ")";
  return scheduling::materialize(req, *n, v.picks);
}


void BindService::write_record(const k8s::Pod& pod, const scheduling::Allocation& allocation, k8s::BindTarget& target) const {
  // The contract's allocation record, written with the Binding (one write, §5.1).
  // Some records name what the node's cards are (gpushare's per-card memory).
  // Written under the ledger's shared lock rather than copying the node's cards.
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


void BindService::finish(Binder::Outcome o, const k8s::BindTarget& written, const std::string& who, bool reserved,
                                  const std::string& reason, const Reply& reply) {
  const std::string& uid = written.uid;
  const std::string& node = written.node;
  if (o.status.ok()) {
    if (reserved) {
      state_.reservations().settle(uid, Settlement::kBindingAccepted);
      metrics_.placed(evaluator_.policy_name());
    }
    // One line per placement: where, and on which cards (the record the device plugin reads).
    log_info("placed", {{"pod", who}, {"uid", uid}, {"node", node}, {"cards", written.cards.empty() ? "-" : written.cards},
                        {"policy", std::string(evaluator_.policy_name())},
                        {"reason", o.moved ? reason + "; changed after reading what the API server has bound on the node" : reason}});
    if (options_.events != nullptr && !written.cards.empty()) {
      options_.events->record(k8s::EventRef{written.namespace_name, written.name, uid}, "Normal", "GPUAllocated",
                              "fracpack placed the pod on node " + node + ", card(s) " + written.cards);
    }
    reply(json_response(200, k8s::format_binding_result("")));
    return;
  }
  log_warn("bind failed", {{"pod", who}, {"uid", uid}, {"node", node}, {"reason", o.status.message()}});
  if (reserved) {
    if (o.pod_gone) {
      state_.reservations().settle(uid, Settlement::kPodGone);
    } else if (o.outcome_unknown) {
      // Releasing now could free cards the pod holds: it stays assumed
      // until the informer confirms it, or the reconciler proves it unbound.
      log_warn("bind outcome unknown: reservation kept", {{"pod", who}, {"uid", uid}, {"node", node}});
    } else {
      state_.reservations().settle(uid, Settlement::kNotBound);
    }
  }
  metrics_.bind_failed(o.pod_gone ? "pod_gone" : "api_error");
  reply(json_response(200, k8s::format_binding_result(o.status.message())));
}


}  // namespace fracpack::server
