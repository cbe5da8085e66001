#include "server/extender_service.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/error_body.h"
#include "k8s/extender_codec.h"
#include "scheduling/model.h"
#include "scheduling/fit.h"
#include "scheduling/preemption.h"
#include "scheduling/quota.h"
#include "scheduling/quota_gate.h"
#include "server/answers.h"
#include "server/reply_cache.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

using scheduling::Ledger;
using scheduling::NodeState;
using scheduling::Verdict;


}  // namespace

ExtenderService::ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Metrics& metrics, RecentPods& recent,
                                 const BindService& binds, ExtenderOptions options)
    : state_(state),
      contract_(state.contract()),
      evaluator_(evaluator),
      metrics_(metrics),
      recent_(recent),
      binds_(binds),
      options_(options),
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

HttpResponse ExtenderService::filter(const PaddedText& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), names_.known());
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
    return HttpResponse(200, reply.finish("", no_nodes));
  }
  const bool first_seen = recent_.remember(pod);
  auto req = contract_.pod_request(pod);
  if (!req) return HttpResponse(200, reply.finish("pod " + pod.key() + ": " + req.message(), no_nodes));

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
    // The namespace's GPU quota (scheduling/quota_gate.h): judged once for
    // every node, unless a share sized by the card meets a memory limit;
    // then each node's chosen cards are counted (and no kept reply answers,
    // as it knows nothing of quotas).
    const scheduling::QuotaGate quota(ledger, pod.meta.namespace_name, *req, pod.meta.uid);
    if (const Status& s = quota.everywhere(); !s.ok()) {
      // Refused on every node alike (not unresolvable: the quota may grow,
      // the namespace's pods may finish).
      Verdict refused;
      refused.reason = "pod " + pod.key() + ": " + s.message();
      if (full) {
        reserve_for_all();
        for (const auto& n : *args->nodes) judge(n.name, n.json, refused);
      } else if (args->node_names) {
        drop_repeated(*args->node_names, NodeNameCache::repeats(*args->node_names));
        reserve_for_all();
        for (const auto& n : *args->node_names) judge(n, n, refused);
      }
      return 0;
    }
    // A fitting verdict whose cards on `node` would take the namespace past
    // its quota is a refusal.
    Verdict over_quota;
    auto within_quota = [&](const NodeState& node, const Verdict& v) -> const Verdict& {
      if (!v.fits) return v;
      Status s = quota.admits(node, v.picks);
      if (s.ok()) return v;
      over_quota = Verdict{};
      over_quota.reason = "pod " + pod.key() + ": " + s.message();
      return over_quota;
    };
    std::vector<const NodeState*> nodes(count);
    if (!full) {
      if (!args->node_names) return 0;  // neither list: nothing to judge
      auto& names = *args->node_names;
      std::vector<uint8_t> repeated;
      auto list = names_.resolve(ledger, names, args->node_names_text, args->known_names, nodes, repeated);
      if (auto generation = evaluator_.cache_generation(); list && generation && !quota.per_node()) {
        kept = replies_.answer(list, repeated, nodes, *req, ledger, evaluator_, *generation, options_.max_reply_bytes);
        return 0;
      }
      drop_repeated(names, repeated);
      drop_repeated(nodes, repeated);
      reserve_for_all();
      evaluator_.evaluate(*req, nodes, [&](size_t i, const Verdict& v) {
        judge(names[i], names[i], nodes[i] != nullptr ? within_quota(*nodes[i], v) : v);
      });
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
        const NodeState node = ledger.project(*spec);
        projected[i] = within_quota(node, evaluator_.evaluate_one(*req, node));
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
      judge(objects[i].name, objects[i].json, within_quota(*batch[k], v));
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
  return HttpResponse(200, reply.finish("", no_nodes));
}

HttpResponse ExtenderService::prioritize(const PaddedText& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), names_.known());
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
    return HttpResponse(200, k8s::format_host_priorities(zero));
  }
  // Nodes ranked last below (a node lock, a bind in flight here) are
  // per-request: a kept reply answers only when there are none.
  const bool none_ranked_last = !any_node_held();
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
  rank_held_nodes_last(pod, out);
  return HttpResponse(200, k8s::format_host_priorities(out));
}

bool ExtenderService::any_node_held() const {
  if (contract_.node_lock() == nullptr) return false;
  return state_.any_held() || binds_.any_binding();
}

void ExtenderService::rank_held_nodes_last(const k8s::Pod& pod, std::vector<k8s::HostPriority>& scores) const {
  if (contract_.node_lock() == nullptr) return;  // the contract's node agent serves binds in any order
  std::vector<std::string_view> names;
  names.reserve(scores.size());
  for (const auto& s : scores) names.push_back(s.host);
  const std::vector<std::string> held = state_.held_by(names);
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i].empty() && held[i] != pod.key()) scores[i].score = 0;
  }
  const std::vector<bool> binding = binds_.binding_to(names);
  for (size_t i = 0; i < binding.size(); ++i) {
    if (binding[i]) scores[i].score = 0;
  }
}

HttpResponse ExtenderService::preempt(std::string_view body) {
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
    return HttpResponse(200, k8s::format_preemption_result(out));
  }
  auto req = contract_.pod_request(pod);
  if (!req) {
    metrics_.preempted("invalid_pod");
    return HttpResponse(200, k8s::format_preemption_result(out));  // no preemption for a pod that cannot be placed
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
    const std::string& ns = pod.meta.namespace_name;
    const scheduling::QuotaGate quota(ledger, ns, *req, pod.meta.uid);
    // Evicting pods never lets a pod past its namespace's GPU quota, unless
    // the victims are of its own namespace: a node whose victims leave the
    // preemptor over its quota is dropped (its bind would be refused, the
    // victims evicted for nothing, likely other teams'). Victims of the
    // preemptor's own namespace are not sought out when quota, not
    // capacity, blocks: such a pod waits for its namespace's pods to end.
    // The quota counts the cards the filter would give once the victims are
    // gone, as filter and bind count them (scheduling/quota_gate.h).
    auto within_quota = [&](const NodeState& node, const std::vector<std::string>& victims, bool victims_free_cards) {
      if (ledger.quota(ns) == nullptr) return true;
      scheduling::QuotaUse freed;
      for (const std::string& uid : victims) {
        const scheduling::PodRecord* r = ledger.pod(uid);
        if (r != nullptr && scheduling::namespace_of_key(r->key) == ns) freed += r->quota;
      }
      std::optional<NodeState> after;
      if (victims_free_cards) after.emplace(ledger.project(node.spec(), victims));
      const NodeState& there = after ? *after : node;
      const Verdict v = evaluator_.evaluate_one(*req, there);
      if (!v.fits) return false;  // the filter would not place it there either
      return quota.admits(there, v.picks, freed).ok();
    };
    for (const auto& [node_name, uids] : args->victims) {
      const NodeState* node = ledger.node(node_name);
      if (node == nullptr || !node->present()) continue;  // cannot judge: drop the node
      const int64_t pdb = args->pdb_violations.count(node_name) ? args->pdb_violations.at(node_name) : 0;
      auto choice = scheduling::choose_victims(*req, ledger, *node, candidates[node_name], fit_options);
      if (!choice) continue;  // even all of them would not free enough: drop the node
      if (!within_quota(*node, choice->fits_already ? uids : choice->victims, !choice->fits_already)) continue;
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
  return HttpResponse(200, k8s::format_preemption_result(out));
}

}  // namespace fracpack::server
