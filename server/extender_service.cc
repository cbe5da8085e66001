#include "server/extender_service.h"

#include <algorithm>
#include <cmath>

#include "k8s/contract.h"
#include "k8s/extender.h"
#include "k8s/json_write.h"
#include "scheduling/fragmentation.h"
#include "server/ledger_report.h"
#include "server/log.h"

namespace fracpack::server {
namespace {

using scheduling::Ledger;
using scheduling::NodeState;
using scheduling::Verdict;

HttpResponse json_response(int status, std::string body) { return HttpResponse{status, std::move(body)}; }
HttpResponse bad_request(const std::string& message) { return json_response(400, k8s::format_error(message)); }

// Counts rejections by class, then reports them once per request.
struct RejectionTally {
  std::map<std::string_view, double> by_class;
  size_t passed = 0, failed = 0, unresolvable = 0;
  void add(const Verdict& v) {
    if (v.fits) {
      ++passed;
      return;
    }
    (v.unresolvable ? unresolvable : failed) += 1;
    by_class[rejection_class(v.reason)] += 1;
  }
  void report(Metrics& m) const {
    m.filter_outcome(passed, failed, unresolvable);
    for (const auto& [c, n] : by_class) m.rejected(c, n);
  }
};


}  // namespace

void StateBinder::bind(Job job, std::function<void(Outcome, const k8s::BindTarget&)> done) {
  const k8s::BindTarget& target = job.target;
  if (auto current = state_.pod(target.uid); current && !current->node_name.empty() && current->node_name != target.node) {
    done(Outcome{Error{"pod " + target.namespace_name + "/" + target.name + " is already assigned to node " + current->node_name}}, target);
    return;
  }
  k8s::Pod& pod = job.pod;
  pod.node_name = target.node;
  for (const auto& kv : target.annotations) {
    auto it = std::find_if(pod.meta.annotations.begin(), pod.meta.annotations.end(), [&](const auto& e) { return e.first == kv.first; });
    if (it != pod.meta.annotations.end()) {
      it->second = kv.second;
    } else {
      pod.meta.annotations.emplace_back(kv.first, kv.second);
    }
  }
  pod.phase = "Running";
  state_.apply_pod(pod);  // confirms the reservation from the record, as the watch would
  done(Outcome{}, target);
}

ExtenderService::ExtenderService(k8s::ClusterState& state, scheduling::Evaluator& evaluator, Binder& binder, Metrics& metrics,
                                 ServiceOptions options)
    : state_(state), evaluator_(evaluator), binder_(binder), metrics_(metrics), options_(std::move(options)) {
  prefix_ = options_.url_prefix.empty() ? "/" : options_.url_prefix;
  if (prefix_.back() != '/') prefix_.push_back('/');
  metrics_.add_collector([this](std::vector<SampledFamily>& out) { collect(out); });
}

void ExtenderService::handle(HttpRequest&& request, Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  const std::string path(request.path());
  std::string verb = "other";
  for (const char* v : {"filter", "prioritize", "bind", "preempt"}) {
    if (path == prefix_ + v) verb = v;
  }
  // Every answer is timed and counted under its verb.
  Reply timed = [this, started, verb, reply = std::move(reply)](HttpResponse r) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.observe_request(verb, r.status, s);
    reply(std::move(r));
  };
  if (verb != "other") {
    if (request.method != "POST") {
      timed(json_response(405, k8s::format_error("use POST for " + path)));
      return;
    }
    if (verb == "filter") return timed(filter(request.body));
    if (verb == "prioritize") return timed(prioritize(request.body));
    if (verb == "preempt") return timed(preempt(request.body));
    return bind(request.body, std::move(timed));
  }
  if (request.method != "GET" && request.method != "HEAD") {
    timed(json_response(path == "/healthz" || path == "/readyz" || path == "/metrics" ? 405 : 404,
                        k8s::format_error("no " + request.method + " " + path)));
    return;
  }
  if (path == "/healthz") return timed(HttpResponse{200, "ok\n", "text/plain"});
  if (path == "/readyz") return timed(readyz());
  if (path == "/version") {
    std::string body = "{";
    k8s::append_json_field(body, "version", options_.version, false);
    k8s::append_json_field(body, "policy", evaluator_.policy_name());
    k8s::append_json_field(body, "mode", options_.mode);
    body += "}";
    return timed(json_response(200, body));
  }
  if (path == "/metrics") return timed(HttpResponse{200, metrics_.serialize(), "text/plain; version=0.0.4"});
  if (path == "/debug/ledger") return timed(json_response(200, ledger_json()));
  if (path == "/debug/snapshot") return timed(json_response(200, state_.snapshot_json()));
  timed(json_response(404, k8s::format_error("no route " + path + " (verbs are served under " + prefix_ + ")")));
}

HttpResponse ExtenderService::readyz() const {
  if (state_.ready()) return HttpResponse{200, "ok\n", "text/plain"};
  std::string why = "initial lists not applied yet";
  if (options_.sources) {
    for (const auto& s : options_.sources()) {
      if (!s.stats.synced) why += "; " + s.resource + (s.stats.last_error.empty() ? ": listing" : ": " + s.stats.last_error);
    }
  }
  return json_response(503, k8s::format_error(why));
}

void ExtenderService::remember(const k8s::Pod& pod) {
  if (pod.meta.uid.empty()) return;
  std::lock_guard lock(recent_mu_);
  if (auto it = recent_by_uid_.find(pod.meta.uid); it != recent_by_uid_.end()) {
    // filter and prioritize send the same pod: copy it only if it changed.
    if (it->second->meta.resource_version != pod.meta.resource_version || pod.meta.resource_version.empty()) *it->second = pod;
    recent_.splice(recent_.begin(), recent_, it->second);
    return;
  }
  recent_.push_front(pod);
  recent_by_uid_[pod.meta.uid] = recent_.begin();
  if (recent_.size() > options_.recent_pods) {
    recent_by_uid_.erase(recent_.back().meta.uid);
    recent_.pop_back();
  }
}

std::optional<k8s::Pod> ExtenderService::recall(const std::string& uid) const {
  std::lock_guard lock(recent_mu_);
  auto it = recent_by_uid_.find(uid);
  if (it == recent_by_uid_.end()) return std::nullopt;
  return *it->second;
}

void ExtenderService::resolve(const Ledger& ledger, const std::vector<std::string_view>& names, std::string_view names_text,
                              std::vector<const NodeState*>& out) {
  out.resize(names.size());
  if (!names_text.empty()) {
    std::lock_guard lock(resolved_mu_);
    if (resolved_ledger_ == &ledger && resolved_layout_ == ledger.layout() && resolved_.size() == names.size() &&
        resolved_text_ == names_text) {
      std::copy(resolved_.begin(), resolved_.end(), out.begin());
      return;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) out[i] = ledger.node(names[i]);
  if (names_text.empty()) return;
  std::lock_guard lock(resolved_mu_);
  resolved_text_.assign(names_text);
  resolved_layout_ = ledger.layout();
  resolved_ledger_ = &ledger;
  resolved_ = out;
}

HttpResponse ExtenderService::filter(const std::string& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), body.capacity());
  if (!args) return bad_request(args.message());
  if (!args->pod) return bad_request("ExtenderArgs: no Pod");
  const k8s::Pod& pod = *args->pod;
  const bool full = args->nodes.has_value();
  const size_t count = full ? args->nodes->size() : (args->node_names ? args->node_names->size() : 0);
  k8s::FilterReplyWriter reply(full, count);
  const bool no_nodes = !args->nodes && !args->node_names;
  if (!k8s::requests_gpu(pod, state_.names())) {
    // Not a fracpack pod: every node passes, untouched.
    if (full) {
      for (const auto& n : *args->nodes) reply.pass(n.json);
    } else if (args->node_names) {
      for (const auto& n : *args->node_names) reply.pass(n);
    }
    return json_response(200, reply.finish("", no_nodes));
  }
  remember(pod);
  auto req = k8s::pod_request(pod, state_.names());
  if (!req) return json_response(200, reply.finish("pod " + pod.key() + ": " + req.message(), no_nodes));
  RejectionTally tally;
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
    std::vector<const NodeState*> nodes(count);
    if (!full) {
      if (!args->node_names) return 0;  // neither list: nothing to judge
      const auto& names = *args->node_names;
      resolve(ledger, names, args->node_names_text, nodes);
      evaluator_.evaluate(*req, nodes, [&](size_t i, const Verdict& v) { judge(names[i], names[i], v); });
      return 0;
    }
    // Full Node objects: the ledger's node when it knows it (the informer's
    // view of the same object, with fail-closed cordons), evaluated in one
    // batch; otherwise the cards the object describes, with what the ledger
    // has placed there. Answers keep the request's order.
    const auto& objects = *args->nodes;
    for (size_t i = 0; i < count; ++i) {
      const NodeState* known = ledger.node(objects[i].node.meta.name);
      nodes[i] = known != nullptr && known->present() ? known : nullptr;
    }
    std::vector<std::optional<Verdict>> projected(count);
    for (size_t i = 0; i < count; ++i) {
      if (nodes[i] != nullptr) continue;
      auto spec = k8s::node_spec(objects[i].node, state_.names());
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
        if (projected[next]) judge(objects[next].node.meta.name, objects[next].json, *projected[next]);
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
      judge(objects[i].node.meta.name, objects[i].json, v);
      next = i + 1;
    });
    flush_projected(count);
    return 0;
  });
  tally.report(metrics_);
  return json_response(200, reply.finish("", no_nodes));
}

HttpResponse ExtenderService::prioritize(const std::string& body) {
  auto args = k8s::parse_extender_args(body, state_.selection(), body.capacity());
  if (!args) return bad_request(args.message());
  if (!args->pod) return bad_request("ExtenderArgs: no Pod");
  std::vector<std::string_view> names;
  if (args->node_names) names = *args->node_names;
  if (args->nodes) {
    for (const auto& n : *args->nodes) names.push_back(n.node.meta.name);
  }
  std::vector<k8s::HostPriority> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) out[i].host = names[i];
  const k8s::Pod& pod = *args->pod;
  // Pods without cards are scored too (when kube-scheduler asks, i.e. no
  // managedResources): where they take CPU and memory changes what GPU
  // pods can still use, which the policy weighs as the replay does.
  remember(pod);
  auto req = k8s::pod_request(pod, state_.names());
  if (!req) return json_response(200, k8s::format_host_priorities(out));
  std::vector<std::optional<int64_t>> raw(names.size());
  state_.read([&](const Ledger& ledger) {
    std::vector<const NodeState*> nodes(names.size());
    if (args->node_names) {
      resolve(ledger, names, args->node_names_text, nodes);
    } else {
      for (size_t i = 0; i < names.size(); ++i) nodes[i] = ledger.node(names[i]);
    }
    evaluator_.evaluate(*req, nodes, [&](size_t i, const Verdict& v) {
      if (v.fits) raw[i] = v.score;
    });
    return 0;
  });
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& r : raw) {
    if (r) {
      lo = std::min(lo, *r);
      hi = std::max(hi, *r);
    }
  }
  for (size_t i = 0; i < names.size(); ++i) out[i].score = raw[i] ? scheduling::extender_score(*raw[i], lo, hi) : 0;
  return json_response(200, k8s::format_host_priorities(out));
}

void ExtenderService::bind(const std::string& body, Reply reply) {
  auto args = k8s::parse_binding_args(body);
  if (!args) return reply(bad_request(args.message()));
  const std::string who = args->pod_namespace + "/" + args->pod_name;
  auto fail = [&](const char* reason, const std::string& message) {
    metrics_.bind_failed(reason);
    log_warn("bind refused", {{"pod", who}, {"node", args->node}, {"reason", message}});
    reply(json_response(200, k8s::format_binding_result(message)));
  };
  std::optional<k8s::Pod> pod = state_.pod(args->pod_uid);
  if (!pod) pod = recall(args->pod_uid);
  if (!pod && args->pod_uid.empty()) pod = state_.pod_by_name(args->pod_namespace, args->pod_name);
  if (!pod) {
    return fail("unknown_pod", "pod " + who + " (uid " + args->pod_uid +
                                   ") is not known to fracpack yet (its informer has not seen it); kube-scheduler will retry");
  }
  const auto arrived = Binder::Clock::now();
  Binder::Job job;
  job.target = k8s::BindTarget{args->pod_namespace, args->pod_name, pod->meta.uid, args->node, {}};
  job.pod = *pod;
  job.arrived = arrived;
  job.deadline = arrived + options_.bind_timeout;
  // `reserved`: this bind made the reservation (a retried one did not).
  // `reason`: why these cards (the placement line says it).
  auto finish = [this, reply, uid = pod->meta.uid, who, node = args->node](Binder::Outcome o, const k8s::BindTarget& written,
                                                                           bool reserved, const std::string& reason) {
    if (o.status.ok()) {
      if (reserved) {
        state_.note_bound(uid);
        metrics_.placed(evaluator_.policy_name());
      }
      // One line per placement: where, and on which cards (the record the device plugin reads).
      const std::string* cards = k8s::find(written.annotations, state_.names().indices);
      log_info("placed", {{"pod", who}, {"uid", uid}, {"node", node}, {"cards", cards ? *cards : "-"},
                          {"policy", std::string(evaluator_.policy_name())},
                          {"reason", o.rechosen ? reason + "; changed after reading what the API server has bound on the node" : reason}});
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
  };
  auto req = k8s::pod_request(*pod, state_.names());
  if (!k8s::requests_gpu(*pod, state_.names())) {
    // No cards to choose: kube-scheduler's choice stands. Its CPU and memory
    // are reserved at once (the informer confirms), so the next pod's
    // verdicts see them.
    bool reserved = false;
    if (req) {
      const scheduling::PodFacts facts{pod->meta.uid, who, req->cpu_milli, req->memory_bytes};
      reserved = state_.assume_chosen(facts, [&](const Ledger&) -> Result<scheduling::Allocation> {
                   return scheduling::Allocation{args->node, {}};
                 }, scheduling::Clock::now()).ok();
      evaluator_.observe(*req);  // a learning policy counts every placed pod, as the replay does
    }
    return binder_.bind(std::move(job), [finish, reserved](Binder::Outcome o, const k8s::BindTarget& written) {
      finish(std::move(o), written, reserved, "no GPU share asked: kube-scheduler's node, CPU and memory reserved");
    });
  }
  if (!req) return fail("invalid_pod", "pod " + who + ": " + req.message());
  // The Binding carries the allocation record and the card indices (one write, §5.1).
  const k8s::ContractNames& names = state_.names();
  auto record = [&names](const scheduling::Allocation& a) {
    return k8s::StringMap{{names.allocation, k8s::format_allocation(a)}, {names.indices, k8s::format_indices(a)}};
  };
  // The policy's best cards on the node as the ledger has it now.
  auto choose = [this, req = *req, who, node = args->node](const Ledger& l, std::string* reason) -> Result<scheduling::Allocation> {
    const NodeState* n = l.node(node);
    if (n == nullptr || !n->present()) return Error{"node " + node + " is not known to fracpack"};
    Verdict v = evaluator_.evaluate_one(req, *n);
    if (!v.fits) return Error{"pod " + who + " no longer fits node " + node + ": " + v.reason};
    if (reason != nullptr) *reason = "the policy's best cards on the node (score " + std::to_string(v.score) + ")";
    return scheduling::materialize(req, *n, v.picks);
  };
  // Before the Binding is posted, the fence reads what the API server has
  // bound on the node (another writer's binds the watch has not delivered):
  // the reservation is checked beside it and moved or refused if it must.
  job.recheck = [this, uid = pod->meta.uid, node = args->node, choose, record](const std::vector<k8s::Pod>& fresh,
                                                                               bool* rechosen) -> Result<k8s::StringMap> {
    auto caught = state_.catch_up(node, fresh, uid, [&](const Ledger& l) { return choose(l, nullptr); });
    if (!caught) return caught.error();
    *rechosen = caught->rechosen;
    return record(caught->allocation);
  };
  // A retried bind (its answer was lost): the reservation is already there.
  const bool retry = state_.read([&](const Ledger& l) {
    const scheduling::PodRecord* r = l.pod(pod->meta.uid);
    if (r == nullptr || r->node != args->node) return false;
    job.target.annotations = record(r->allocation);
    return true;
  });
  if (retry) {
    return binder_.bind(std::move(job), [finish](Binder::Outcome o, const k8s::BindTarget& written) {
      finish(std::move(o), written, false, "a retried bind: the cards reserved by the first attempt");
    });
  }
  const scheduling::PodFacts facts{pod->meta.uid, who, req->cpu_milli, req->memory_bytes};
  std::string reason;
  auto chosen = state_.assume_chosen(facts, [&](const Ledger& l) { return choose(l, &reason); }, scheduling::Clock::now());
  if (!chosen) return fail("no_longer_fits", chosen.message());
  evaluator_.observe(*req);
  job.target.annotations = record(*chosen);
  binder_.bind(std::move(job), [finish, reason](Binder::Outcome o, const k8s::BindTarget& written) {
    finish(std::move(o), written, true, reason);
  });
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
  if (!k8s::requests_gpu(pod, state_.names())) {
    pass_through();  // not ours to judge
    metrics_.preempted("not_gpu");
    return json_response(200, k8s::format_preemption_result(out));
  }
  auto req = k8s::pod_request(pod, state_.names());
  if (!req) {
    metrics_.preempted("invalid_pod");
    return json_response(200, k8s::format_preemption_result(out));  // no preemption for a pod that cannot be placed
  }
  // Victims' priorities, read before taking the ledger's lock.
  std::map<std::string, int32_t> priority;
  for (const auto& [node, uids] : args->victims) {
    for (const auto& uid : uids) {
      if (auto p = state_.pod(uid)) priority[uid] = p->priority;
    }
  }
  const scheduling::FitOptions fit_options = evaluator_.options();
  state_.read([&](const Ledger& ledger) {
    for (const auto& [node_name, uids] : args->victims) {
      const NodeState* node = ledger.node(node_name);
      if (node == nullptr || !node->present()) continue;  // cannot judge: drop the node
      const int64_t pdb = args->pdb_violations.count(node_name) ? args->pdb_violations.at(node_name) : 0;
      if (scheduling::fits(*req, *node, fit_options)) {
        out[node_name] = k8s::MetaVictims{uids, pdb};  // the cards are not what is short
        continue;
      }
      // Lowest priority first; among equals, those holding more compute here.
      std::vector<std::pair<std::string, std::pair<int32_t, int64_t>>> candidates;
      for (const auto& uid : uids) {
        const scheduling::PodRecord* r = ledger.pod(uid);
        if (r == nullptr || r->node != node_name) continue;  // holds nothing fracpack counts here
        int64_t held = 0;
        for (const auto& c : r->charges) held += c.cores;
        candidates.push_back({uid, {priority.count(uid) ? priority[uid] : 0, -held}});
      }
      std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      std::vector<std::string> chosen;
      bool fits = false;
      for (const auto& c : candidates) {
        chosen.push_back(c.first);
        if (scheduling::fits(*req, ledger.project(node->spec(), chosen), fit_options)) {
          fits = true;
          break;
        }
      }
      if (!fits) continue;  // even all of them would not free enough: drop the node
      // Fewest: leave out every victim the pod does not need.
      for (size_t i = chosen.size(); i-- > 0;) {
        std::vector<std::string> without = chosen;
        without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
        if (scheduling::fits(*req, ledger.project(node->spec(), without), fit_options)) chosen = std::move(without);
      }
      out[node_name] = k8s::MetaVictims{chosen, std::min<int64_t>(pdb, static_cast<int64_t>(chosen.size()))};
    }
    return 0;
  });
  metrics_.preempted(out.empty() ? "none" : "victims");
  return json_response(200, k8s::format_preemption_result(out));
}

std::string ExtenderService::ledger_json() const {
  return state_.read([&](const Ledger& ledger) { return ledger_report_json(ledger, options_.workload.get()); });
}

void ExtenderService::collect(std::vector<SampledFamily>& out) const {
  using Type = SampledFamily::Type;
  SampledFamily mem{"fracpack_card_memory_allocated_bytes", "GPU memory reserved on a card.", Type::kGauge, {}};
  SampledFamily cap{"fracpack_card_memory_capacity_bytes", "GPU memory of a card.", Type::kGauge, {}};
  SampledFamily compute{"fracpack_card_compute_allocated_ratio", "Share of a card's compute reserved (0..1).", Type::kGauge, {}};
  SampledFamily sharers{"fracpack_card_sharers", "Pods holding a share of a card.", Type::kGauge, {}};
  SampledFamily cluster_gpus{"fracpack_cluster_gpus", "GPUs on the nodes fracpack knows.", Type::kGauge, {}};
  SampledFamily cluster_alloc{"fracpack_cluster_gpu_allocated_ratio", "Share of all GPU compute reserved (0..1).", Type::kGauge, {}};
  SampledFamily cluster_frag{"fracpack_cluster_gpu_fragmentation_ratio",
                             "Idle GPU compute the target workload cannot use, as a share of all (0..1).", Type::kGauge, {}};
  SampledFamily pod_count{"fracpack_pods", "Pods in the ledger, by phase.", Type::kGauge, {}};
  state_.read([&](const Ledger& ledger) {
    int64_t gpus = 0, used = 0;
    std::optional<scheduling::FragmentationModel> model;
    if (options_.workload) model.emplace(scheduling::Workload::typical(*options_.workload));
    double frag = 0;
    for (const auto& [name, node] : ledger.nodes()) {
      if (!node.present()) continue;
      for (size_t p = 0; p < node.cards().size(); ++p) {
        const auto& card = node.cards()[p];
        const auto& use = node.use()[p];
        std::vector<std::pair<std::string, std::string>> labels = {
            {"node", name}, {"card", std::to_string(card.index)}, {"model", card.model}};
        mem.samples.push_back({labels, static_cast<double>(use.memory_mib) * 1048576.0});
        cap.samples.push_back({labels, static_cast<double>(card.memory_mib) * 1048576.0});
        compute.samples.push_back({labels, static_cast<double>(use.cores) / 1000.0});
        sharers.samples.push_back({std::move(labels), static_cast<double>(use.sharers)});
        ++gpus;
        used += std::min(use.cores, scheduling::kCardMilli);
      }
      if (model) frag += model->frag(node);
    }
    cluster_gpus.samples.push_back({{}, static_cast<double>(gpus)});
    cluster_alloc.samples.push_back({{}, gpus > 0 ? static_cast<double>(used) / (1000.0 * static_cast<double>(gpus)) : 0});
    if (model) cluster_frag.samples.push_back({{}, gpus > 0 ? frag / (1000.0 * static_cast<double>(gpus)) : 0});
    const double assumed = static_cast<double>(ledger.assumed_count());
    pod_count.samples.push_back({{{"phase", "assumed"}}, assumed});
    pod_count.samples.push_back({{{"phase", "confirmed"}}, static_cast<double>(ledger.pod_count()) - assumed});
    return 0;
  });
  for (auto* f : {&mem, &cap, &compute, &sharers, &cluster_gpus, &cluster_alloc, &pod_count}) out.push_back(std::move(*f));
  if (!cluster_frag.samples.empty()) out.push_back(std::move(cluster_frag));

  const k8s::SyncCounters c = state_.counters();
  SampledFamily sync{"fracpack_sync_events_total", "Objects applied to the ledger, by kind.", Type::kCounter, {}};
  sync.samples = {{{{"kind", "pod"}}, static_cast<double>(c.pod_events)}, {{{"kind", "node"}}, static_cast<double>(c.node_events)}};
  SampledFamily problems{"fracpack_sync_problems_total", "Objects that could not be read or had to be inferred, by kind.",
                         Type::kCounter, {}};
  problems.samples = {{{{"kind", "malformed_pod"}}, static_cast<double>(c.malformed_pods)},
                      {{{"kind", "malformed_node"}}, static_cast<double>(c.malformed_nodes)},
                      {{{"kind", "inferred_allocation"}}, static_cast<double>(c.inferred_allocations)},
                      {{{"kind", "overcommit_report"}}, static_cast<double>(c.overcommit_reports)},
                      {{{"kind", "expired_assumption"}}, static_cast<double>(c.expired_assumptions)},
                      {{{"kind", "relist_deletion"}}, static_cast<double>(c.relist_deletions)},
                      {{{"kind", "reconciled_assumption"}}, static_cast<double>(c.reconciled_assumptions)},
                      {{{"kind", "stale_event"}}, static_cast<double>(c.stale_events)}};
  out.push_back(std::move(sync));
  out.push_back(std::move(problems));
  out.push_back(SampledFamily{"fracpack_bind_fence_caught_up_total",
                              "Bound pods a bind's fence read from the API server before the watch delivered them "
                              "(another writer's binds: the other replica after a failover, an old leader).",
                              Type::kCounter,
                              {{{}, static_cast<double>(c.fence_caught_up)}}});
  SampledFamily ready{"fracpack_ready", "1 once the initial lists are applied.", Type::kGauge, {{{}, state_.ready() ? 1.0 : 0.0}}};
  out.push_back(std::move(ready));

  const auto es = evaluator_.stats();
  SampledFamily cache{"fracpack_evaluation_cache_total", "Node evaluations served from the cache (hit) or computed (miss).",
                      Type::kCounter, {}};
  cache.samples = {{{{"result", "hit"}}, static_cast<double>(es.hits)}, {{{"result", "miss"}}, static_cast<double>(es.misses)}};
  out.push_back(std::move(cache));

  if (options_.sources) {
    SampledFamily synced{"fracpack_informer_synced", "1 once the informer's initial list is applied.", Type::kGauge, {}};
    SampledFamily lists{"fracpack_informer_lists_total", "Complete lists applied (the first and every relist).", Type::kCounter, {}};
    SampledFamily relists{"fracpack_informer_relists_total", "Lists after the first.", Type::kCounter, {}};
    SampledFamily events{"fracpack_informer_events_total", "Watch events applied.", Type::kCounter, {}};
    SampledFamily errors{"fracpack_informer_errors_total", "Failed requests and broken streams.", Type::kCounter, {}};
    SampledFamily age{"fracpack_informer_last_event_age_seconds", "Seconds since the last watch event or bookmark (-1: none).",
                      Type::kGauge, {}};
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [resource, s] : options_.sources()) {
      std::vector<std::pair<std::string, std::string>> l = {{"resource", resource}};
      synced.samples.push_back({l, s.synced ? 1.0 : 0.0});
      lists.samples.push_back({l, static_cast<double>(s.lists)});
      relists.samples.push_back({l, static_cast<double>(s.relists)});
      events.samples.push_back({l, static_cast<double>(s.events)});
      errors.samples.push_back({l, static_cast<double>(s.errors)});
      const bool never = s.last_event == std::chrono::steady_clock::time_point{};
      age.samples.push_back({l, never ? -1.0 : std::chrono::duration<double>(now - s.last_event).count()});
    }
    for (auto* f : {&synced, &lists, &relists, &events, &errors, &age}) out.push_back(std::move(*f));
  }
}

}  // namespace fracpack::server
