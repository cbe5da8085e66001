#include "server/extender_service.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/error_body.h"
#include "k8s/extender.h"
#include "scheduling/model.h"
#include "scheduling/preemption.h"
#include "server/reply_cache.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

using scheduling::Ledger;
using scheduling::NodeState;
using scheduling::Verdict;

HttpResponse json_response(int status, std::string body) { return HttpResponse{status, std::move(body)}; }
HttpResponse bad_request(const std::string& message) { return json_response(400, error_body(message)); }

}  // namespace

ExtenderService::ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                                 ExtenderOptions options)
    : state_(state),
      contract_(state.contract()),
      evaluator_(evaluator),
      binder_(binder),
      metrics_(metrics),
      options_(options),
      recent_(options.recent_pods, options.recent_pod_bytes),
      record_keys_(contract_.record_keys()),
      replies_(options.unresolvable_as_failed) {}

namespace {

// Each distinct node is answered once: a name repeated in the request is
// dropped (kube-scheduler never repeats one; a reply that repeated its
// reason would grow with every copy).
template <class T>
void drop_repeated(std::vector<T>& items, const std::vector<uint8_t>& repeated) {
  if (repeated.empty()) return;
  size_t kept = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (repeated[i]) continue;
    if (kept != i) items[kept] = std::move(items[i]);  // (never onto itself: a self-moved string is emptied)
    ++kept;
  }
  items.resize(kept);
}

std::vector<std::string_view> names_of(const std::vector<k8s::ExtenderNode>& nodes) {
  std::vector<std::string_view> out;
  out.reserve(nodes.size());
  for (const auto& n : nodes) out.push_back(n.name);
  return out;
}

HttpResponse reply_too_large(size_t budget) {
  return bad_request("the reply would exceed " + std::to_string(budget) +
                     " bytes (twice limits.maxRequestBytes): ask about fewer nodes at once");
}

}  // namespace

HttpResponse ExtenderService::filter(const std::string& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), body.capacity(), names_.known());
  if (!args) return bad_request(args.message());
  if (!args->pod) return bad_request("ExtenderArgs: no Pod");
  const k8s::Pod& pod = *args->pod;
  const bool full = args->nodes.has_value();
  const bool gpu = contract_.requests_gpu(pod);
  // Names mode drops repeats after resolving them (the resolution is cached).
  if (full) drop_repeated(*args->nodes, NodeNameCache::repeats(names_of(*args->nodes)));
  if (!full && !gpu && args->node_names) drop_repeated(*args->node_names, NodeNameCache::repeats(*args->node_names));
  const size_t count = full ? args->nodes->size() : (args->node_names ? args->node_names->size() : 0);
  // Room is reserved by the paths that write every node: a names-mode
  // request answered from a kept reply writes none.
  k8s::FilterReplyWriter reply(full, 0, options_.max_reply_bytes);
  reply.list_unresolvable_as_failed(options_.unresolvable_as_failed);
  auto reserve_for_all = [&] {
    size_t bytes = count * 24;  // a name and its separator, about
    if (full) {
      bytes = 0;  // the most the passing objects can take
      for (const auto& n : *args->nodes) bytes += n.json.size() + 1;
    }
    reply.reserve(bytes);
  };
  const bool no_nodes = !args->nodes && !args->node_names;
  if (!gpu) {
    // Not a fracpack pod: every node passes, untouched.
    recent_.judge(pod.meta.uid);
    reserve_for_all();
    if (full) {
      for (const auto& n : *args->nodes) reply.pass(n.json);
    } else if (args->node_names) {
      for (const auto& n : *args->node_names) reply.pass(n);
    }
    if (reply.over_budget()) return reply_too_large(options_.max_reply_bytes);
    return json_response(200, reply.finish("", no_nodes));
  }
  const bool first_seen = recent_.remember(pod);
  auto req = contract_.pod_request(pod);
  if (!req) return json_response(200, reply.finish("pod " + pod.key() + ": " + req.message(), no_nodes));

  FilterTally tally;
  std::optional<FilterReplyCache::Reply> kept;  // a kept reply, when names mode answers with one
  // Verdicts are valid only while visited: each is written out at once.
  auto judge = [&](std::string_view name, std::string_view passed_text, const Verdict& v) {
    tally.add(v);
    if (v.fits) {
      reply.pass(passed_text);
    } else {
      reply.fail(name, v.reason, v.unresolvable);
    }
  };
  state_.read([&](const Ledger& ledger) {
    // The policy counts each pod once, when it first arrives (placed or
    // not), before judging it, as the replay does.
    if (first_seen) evaluator_.observe(*req, ledger);
    std::vector<const NodeState*> nodes(count);
    if (!full) {
      if (!args->node_names) return 0;  // neither list: nothing to judge
      auto& names = *args->node_names;
      std::vector<uint8_t> repeated;
      auto list = names_.resolve(ledger, names, args->node_names_text, args->known_names, nodes, repeated);
      if (auto generation = evaluator_.cache_generation(); list && generation) {
        kept = replies_.answer(list, repeated, nodes, *req, ledger, evaluator_, *generation, options_.max_reply_bytes);
        return 0;
      }
      drop_repeated(names, repeated);
      drop_repeated(nodes, repeated);
      reserve_for_all();
      evaluator_.evaluate(*req, nodes, [&](size_t i, const Verdict& v) { judge(names[i], names[i], v); });
      return 0;
    }
    // Full Node objects: the ledger's node when it knows it (the informer's
    // view of the same object, with fail-closed cordons), evaluated in one
    // batch; otherwise the cards the object describes, with what the ledger
    // has placed there. Answers keep the request's order.
    const auto& objects = *args->nodes;
    reserve_for_all();
    for (size_t i = 0; i < count; ++i) {
      const NodeState* known = ledger.node(objects[i].name);
      nodes[i] = known != nullptr && known->present() ? known : nullptr;
    }
    std::vector<std::optional<Verdict>> projected(count);
    for (size_t i = 0; i < count; ++i) {
      if (nodes[i] != nullptr) continue;
      // Decoded only now: a node the ledger knows needs no more than its name.
      auto object = k8s::parse_node(objects[i].json, state_.selection());
      if (!object) {
        Verdict v;
        v.reason = "Nodes.items[" + std::to_string(objects[i].item) + "] cannot be read: " + object.message();
        projected[i] = std::move(v);
        continue;
      }
      auto spec = contract_.node_spec(*object);
      if (!spec) {
        Verdict v;
        v.reason = "node's GPU description cannot be read: " + spec.message();
        projected[i] = std::move(v);
      } else {
        projected[i] = evaluator_.evaluate_one(*req, ledger.project(*spec));
      }
    }
    size_t next = 0;  // objects before `next` are answered
    auto flush_projected = [&](size_t upto) {
      for (; next < upto; ++next) {
        if (projected[next]) judge(objects[next].name, objects[next].json, *projected[next]);
      }
    };
    std::vector<const NodeState*> batch;
    std::vector<size_t> where;
    batch.reserve(count);
    where.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (nodes[i] == nullptr) continue;
      batch.push_back(nodes[i]);
      where.push_back(i);
    }
    evaluator_.evaluate(*req, batch, [&](size_t k, const Verdict& v) {
      const size_t i = where[k];
      flush_projected(i);
      judge(objects[i].name, objects[i].json, v);
      next = i + 1;
    });
    flush_projected(count);
    return 0;
  });
  if (kept) {
    kept->tally.report(metrics_);
    if (!kept->body) return reply_too_large(options_.max_reply_bytes);
    HttpResponse r;
    r.shared_body = std::move(kept->body);
    return r;
  }
  tally.report(metrics_);
  if (reply.over_budget()) return reply_too_large(options_.max_reply_bytes);
  return json_response(200, reply.finish("", no_nodes));
}

HttpResponse ExtenderService::prioritize(const std::string& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), body.capacity(), names_.known());
  if (!args) return bad_request(args.message());
  if (!args->pod) return bad_request("ExtenderArgs: no Pod");
  std::vector<std::string_view> names;
  if (args->node_names) names = *args->node_names;
  if (args->nodes) {
    for (const auto& n : *args->nodes) names.push_back(n.name);
  }
  const k8s::Pod& pod = *args->pod;
  // Pods without cards are scored too (when kube-scheduler asks, i.e. no
  // managedResources): where they take CPU and memory changes what GPU
  // pods can still use, which the policy weighs as the replay does.
  recent_.remember(pod);
  auto req = contract_.pod_request(pod);
  if (!req) {
    drop_repeated(names, NodeNameCache::repeats(names));
    std::vector<k8s::HostPriority> zero(names.size());
    for (size_t i = 0; i < names.size(); ++i) zero[i].host = names[i];
    return json_response(200, k8s::format_host_priorities(zero));
  }
  // Nodes ranked last below (a node lock, a bind in flight here) are
  // per-request: a kept reply answers only when there are none.
  const bool none_ranked_last = !state_.any_held() && !(options_.one_bind_per_node && binds_in_flight());
  std::vector<std::optional<int64_t>> raw(names.size());
  std::shared_ptr<const std::string> kept;
  state_.read([&](const Ledger& ledger) {
    std::vector<const NodeState*> nodes(names.size());
    std::vector<uint8_t> repeated;
    if (args->node_names) {
      // (NodeNames alone: with Nodes too, `names` is not the list as sent.)
      auto list = names_.resolve(ledger, names, args->nodes ? std::string_view() : args->node_names_text, args->known_names, nodes, repeated);
      auto generation = evaluator_.cache_generation();
      if (list && generation && none_ranked_last) {
        kept = priorities_.answer(list, repeated, nodes, *req, ledger, evaluator_, *generation);
        return 0;
      }
    } else {
      for (size_t i = 0; i < names.size(); ++i) nodes[i] = ledger.node(names[i]);
      repeated = NodeNameCache::repeats(names);
    }
    // Each distinct node is scored once.
    drop_repeated(names, repeated);
    drop_repeated(nodes, repeated);
    raw.resize(names.size());
    evaluator_.evaluate(*req, nodes, [&](size_t i, const Verdict& v) {
      if (v.fits) raw[i] = v.score;
    });
    return 0;
  });
  if (kept) {
    HttpResponse r;
    r.shared_body = std::move(kept);
    return r;
  }
  const std::vector<int64_t> scores = scheduling::extender_scores(raw, names);
  std::vector<k8s::HostPriority> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) out[i] = k8s::HostPriority{names[i], scores[i]};
  // A node whose agent is serving another pod's bind (HAMi's node lock)
  // takes this pod's bind only after that pod's Allocate: rank it last.
  const std::vector<std::string> held = state_.held_by(names);
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i].empty() && held[i] != pod.key()) out[i].score = 0;
  }
  // So is a node this replica is binding a pod to: its lock may not be
  // visible yet, and the bind holds it until that pod's Allocate.
  if (options_.one_bind_per_node) {
    std::lock_guard lock(binding_mu_);
    if (!binding_to_.empty()) {
      for (size_t i = 0; i < names.size(); ++i) {
        if (binding_to_.find(names[i]) != binding_to_.end()) out[i].score = 0;
      }
    }
  }
  return json_response(200, k8s::format_host_priorities(out));
}

void ExtenderService::bind(const std::string& body, Reply reply, std::chrono::steady_clock::time_point arrived) {
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
  if (std::find(ours.begin(), ours.end(), pod->scheduler_name) == ours.end()) {
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
  if (placement.gpu) {
    write_record(*pod, placement.allocation, job.target);
    // Before the Binding is posted, the fence reads what the API server has
    // bound on the node (another writer's binds the watch has not
    // delivered): the reservation is checked beside it, moved or refused.
    job.recheck = [this, pod = *pod, req = placement.request, who](const std::vector<k8s::Pod>& fresh, k8s::BindTarget& target,
                                                                   bool* rechosen) -> Status {
      auto caught = state_.catch_up(target.node, fresh, pod.meta.uid,
                                    [&](const Ledger& l) { return choose_cards(req, l, target.node, who, nullptr); });
      if (!caught) return Error{caught.message()};
      *rechosen = caught->rechosen;
      write_record(pod, caught->allocation, target);
      return Status::Ok();
    };
  }
  job.pod = std::move(*pod);
  if (placement.reserved) {
    // A bind whose outcome was unknown is settled by a read of the pod as
    // soon as the binder can make one, not left to the reservation's TTL.
    job.settled = [this, uid = job.target.uid, who, node = args->node](k8s::Presence p) { settle_bind(p, uid, who, node); };
  }
  const bool counted = placement.gpu && options_.one_bind_per_node;
  {
    std::lock_guard lock(binding_mu_);
    if (counted) ++binding_to_[args->node];
    binding_uids_.insert(job.target.uid);
  }
  binder_.bind(std::move(job), [this, reply, who, counted, reserved = placement.reserved, reason = placement.reason](
                                   Binder::Outcome o, const k8s::BindTarget& written) {
    {
      std::lock_guard lock(binding_mu_);
      if (counted) {
        if (auto it = binding_to_.find(written.node); it != binding_to_.end() && --it->second == 0) binding_to_.erase(it);
      }
      if (auto it = binding_uids_.find(written.uid); it != binding_uids_.end()) binding_uids_.erase(it);
    }
    finish_bind(std::move(o), written, who, reserved, reason, reply);
  });
}

void ExtenderService::settle_bind(k8s::Presence p, const std::string& uid, const std::string& who, const std::string& node) {
  switch (p) {
    case k8s::Presence::kThere:
      state_.note_bound(uid);
      log_info("bind outcome settled: bound", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kGone:
      state_.note_gone(uid);
      log_info("bind outcome settled: the pod is gone; reservation released", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
    case k8s::Presence::kNotThere: {
      // Unless kube-scheduler's retry is binding it right now (it reuses
      // this reservation and settles it itself).
      {
        std::lock_guard lock(binding_mu_);
        if (binding_uids_.contains(uid)) return;
      }
      if (state_.forget(uid)) {
        log_info("bind outcome settled: not bound; reservation released", {{"pod", who}, {"uid", uid}, {"node", node}});
      }
      return;
    }
    case k8s::Presence::kUnknown:
      log_warn("bind outcome still unknown: reservation kept until the reconciler settles it", {{"pod", who}, {"uid", uid}, {"node", node}});
      return;
  }
}

ExtenderService::Placement ExtenderService::place(const k8s::Pod& pod, const std::string& node, const std::string& who) {
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
      out.reserved = state_.assume_chosen(facts, [&](const Ledger&) -> Result<scheduling::Allocation> {
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
  auto chosen = state_.assume_chosen(facts, [&](const Ledger& l) { return choose_cards(*req, l, node, who, &out.reason); },
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

Result<scheduling::Allocation> ExtenderService::choose_cards(const scheduling::PodRequest& req, const Ledger& ledger,
                                                             const std::string& node, const std::string& who, std::string* reason) {
  const NodeState* n = ledger.node(node);
  if (n == nullptr || !n->present()) return Error{"node " + node + " is not known to fracpack"};
  Verdict v = evaluator_.evaluate_one(req, *n);
  if (!v.fits) return Error{"pod " + who + " no longer fits node " + node + ": " + v.reason};
  if (reason != nullptr) *reason = "the policy's best cards on the node (score " + std::to_string(v.score) + ")";
  return scheduling::materialize(req, *n, v.picks);
}

void ExtenderService::write_record(const k8s::Pod& pod, const scheduling::Allocation& allocation, k8s::BindTarget& target) const {
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

void ExtenderService::finish_bind(Binder::Outcome o, const k8s::BindTarget& written, const std::string& who, bool reserved,
                                  const std::string& reason, const Reply& reply) {
  const std::string& uid = written.uid;
  const std::string& node = written.node;
  if (o.status.ok()) {
    if (reserved) {
      state_.note_bound(uid);
      metrics_.placed(evaluator_.policy_name());
    }
    // One line per placement: where, and on which cards (the record the device plugin reads).
    log_info("placed", {{"pod", who}, {"uid", uid}, {"node", node}, {"cards", written.cards.empty() ? "-" : written.cards},
                        {"policy", std::string(evaluator_.policy_name())},
                        {"reason", o.rechosen ? reason + "; changed after reading what the API server has bound on the node" : reason}});
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
      state_.note_gone(uid);
    } else if (o.outcome_unknown) {
      // Releasing now could free cards the pod holds: it stays assumed
      // until the informer confirms it, or the reconciler proves it unbound.
      log_warn("bind outcome unknown: reservation kept", {{"pod", who}, {"uid", uid}, {"node", node}});
    } else {
      state_.forget(uid);
    }
  }
  metrics_.bind_failed(o.pod_gone ? "pod_gone" : "api_error");
  reply(json_response(200, k8s::format_binding_result(o.status.message())));
}

HttpResponse ExtenderService::preempt(const std::string& body) {
  auto args = k8s::parse_preemption_args(body, state_.selection());
  if (!args) return bad_request(args.message());
  if (!args->pod) return bad_request("ExtenderPreemptionArgs: no Pod");
  std::map<std::string, k8s::MetaVictims> out;
  auto pass_through = [&] {
    for (const auto& [node, uids] : args->victims) {
      auto pdb = args->pdb_violations.find(node);
      out[node] = k8s::MetaVictims{uids, pdb == args->pdb_violations.end() ? 0 : pdb->second};
    }
  };
  const k8s::Pod& pod = *args->pod;
  if (!contract_.requests_gpu(pod)) {
    pass_through();  // not ours to judge
    metrics_.preempted("not_gpu");
    return json_response(200, k8s::format_preemption_result(out));
  }
  auto req = contract_.pod_request(pod);
  if (!req) {
    metrics_.preempted("invalid_pod");
    return json_response(200, k8s::format_preemption_result(out));  // no preemption for a pod that cannot be placed
  }
  // kube-scheduler's dry run ignores the contract's resources
  // (ignoredByScheduler), so on a node where only cards are short it
  // proposes no victims at all: there fracpack picks them itself, among the
  // pods it holds on the node with a lower priority than the preemptor's
  // (kube-scheduler checks they are pods of that node).
  std::map<std::string, std::vector<std::string>> proposed;
  for (const auto& [node, uids] : args->victims) proposed[node] = uids;
  state_.read([&](const Ledger& ledger) {
    for (auto& [node_name, uids] : proposed) {
      if (!uids.empty()) continue;
      const NodeState* node = ledger.node(node_name);
      if (node == nullptr) continue;
      for (const scheduling::PodRecord* r : node->pods()) uids.push_back(r->uid);
    }
    return 0;
  });
  // Victims' priorities, read before taking the ledger's lock.
  std::map<std::string, std::vector<scheduling::VictimCandidate>> candidates;
  for (const auto& [node, uids] : proposed) {
    const bool ours = args->victims.at(node).empty();
    for (const auto& uid : uids) {
      auto p = state_.pod(uid);
      const int32_t priority = p ? p->priority : 0;
      if (ours && (!p || priority >= pod.priority)) continue;  // kube-scheduler evicts only lower priorities
      candidates[node].push_back(scheduling::VictimCandidate{uid, priority});
    }
  }
  const scheduling::FitOptions fit_options = evaluator_.options();
  state_.read([&](const Ledger& ledger) {
    for (const auto& [node_name, uids] : args->victims) {
      const NodeState* node = ledger.node(node_name);
      if (node == nullptr || !node->present()) continue;  // cannot judge: drop the node
      const int64_t pdb = args->pdb_violations.count(node_name) ? args->pdb_violations.at(node_name) : 0;
      auto choice = scheduling::choose_victims(*req, ledger, *node, candidates[node_name], fit_options);
      if (!choice) continue;  // even all of them would not free enough: drop the node
      if (choice->fits_already) {
        // The cards are not what is short: kube-scheduler's victims stand
        // (none proposed: nothing to evict here; a node with no victims is
        // an error to kube-scheduler, so it is left out).
        if (!uids.empty()) out[node_name] = k8s::MetaVictims{uids, pdb};
      } else if (!choice->victims.empty()) {
        out[node_name] = k8s::MetaVictims{choice->victims, std::min<int64_t>(pdb, static_cast<int64_t>(choice->victims.size()))};
      }
    }
    return 0;
  });
  metrics_.preempted(out.empty() ? "none" : "victims");
  return json_response(200, k8s::format_preemption_result(out));
}

}  // namespace fracpack::server
