#include "k8s/ledger_builder.h"

#include <algorithm>
#include <chrono>

#include "k8s/bound_pod_charge.h"
#include "k8s/contract/node_lock.h"
#include "k8s/contract/kubernetes_rules.h"
#include "scheduling/allocation_check.h"
#include "scheduling/fit.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::PodFacts;

LedgerBuilder::LedgerBuilder(const Contract& contract, ProblemSink problems, RecordTrust trust, RecordSink records)
    : contract_(contract),
      problems_(std::move(problems)),
      trust_(std::move(trust)),
      records_(std::move(records)),
      record_keys_(contract.record_keys()) {}

std::map<std::string, int> LedgerBuilder::records_by_key() const {
  std::map<std::string, int> out;
  for (const auto& [uid, c] : charged_) ++out[c.key];
  return out;
}

void LedgerBuilder::report_record(const Pod& pod, const char* reason, const std::string& message) {
  problems_("pod " + pod.key(), message);
  if (records_) records_(RecordReport{pod.meta.namespace_name, pod.meta.name, pod.meta.uid, reason, message});
}

void LedgerBuilder::charged(const Pod& pod, std::string digest, std::string key) {
  charged_[pod.meta.uid] = Charged{std::move(digest), std::move(key), false};
}

void LedgerBuilder::apply_node(const Node& node) {
  const std::string& name = node.meta.name;
  if (name.empty()) {
    problems_("node ?", "node without a name");
    return;
  }
  const NodeLock* lock = contract_.node_lock();
  if (std::string holder = lock != nullptr ? lock->held_by(node, std::chrono::system_clock::now()) : std::string(); !holder.empty()) {
    held_by_[name] = std::move(holder);
  } else {
    held_by_.erase(name);
  }
  auto spec = contract_.node_spec(node);
  if (spec) {
    auto old = specs_.find(name);
    const std::string before = old == specs_.end() ? std::string() : old->second.excluded;
    if (left_alone_ && spec->excluded != before) left_alone_(name, spec->excluded);
    // The node's ConfigMaps are checked against its cards when they are new
    // or changed (not on its every status update).
    const bool cards_changed = old == specs_.end() || old->second.cards != spec->cards;
    if (auto maps = config_maps_of_node_.find(name); maps != config_maps_of_node_.end() && cards_changed) {
      for (const std::string& key : maps->second) check_config_map(key, config_maps_.at(key), *spec);
    }
    specs_[name] = std::move(*spec);
    malformed_nodes_.erase(name);
  } else {
    ++counters_.malformed_nodes;
    problems_("node " + name, spec.message() + " (keeping its last good cards, cordoned)");
    malformed_nodes_.insert(name);
    if (!specs_.contains(name)) specs_[name] = scheduling::NodeSpec{name, 0, 0, {}, {}, {}, 0};
  }
  resolve_node(name);
}

std::string LedgerBuilder::held_by(std::string_view node) const {
  auto it = held_by_.find(node);
  return it == held_by_.end() ? std::string() : it->second;
}

void LedgerBuilder::delete_node(const std::string& name) {
  held_by_.erase(name);
  specs_.erase(name);
  malformed_nodes_.erase(name);
  ledger_.remove_node(name);
}

void LedgerBuilder::apply_config_map(const ConfigMap& config_map) {
  const std::string key = config_map.meta.namespace_name + "/" + config_map.meta.name;
  // A relist or a MODIFIED event that changes nothing it says: no work, no report again.
  if (auto same = config_maps_.find(key); same != config_maps_.end() && same->second.data == config_map.data) return;
  delete_config_map(config_map.meta.namespace_name, config_map.meta.name);
  const std::vector<std::string> nodes = contract_.config_map_nodes(config_map);
  if (nodes.empty()) return;
  config_maps_[key] = config_map;
  for (const std::string& node : nodes) {
    config_maps_of_node_[node].insert(key);
    auto spec = specs_.find(node);
    if (spec == specs_.end()) continue;  // checked when the node comes
    check_config_map(key, config_map, spec->second);
    push_effective_spec(node);
  }
}

void LedgerBuilder::check_config_map(const std::string& key, const ConfigMap& config_map, const scheduling::NodeSpec& spec) {
  scheduling::NodeSpec scratch = spec;
  if (Status s = contract_.apply_config_map(config_map, scratch); !s.ok()) problems_("configmap " + key, s.message());
}

void LedgerBuilder::delete_config_map(const std::string& namespace_name, const std::string& name) {
  const std::string key = namespace_name + "/" + name;
  auto it = config_maps_.find(key);
  if (it == config_maps_.end()) return;
  const std::vector<std::string> nodes = contract_.config_map_nodes(it->second);
  config_maps_.erase(it);
  for (const std::string& node : nodes) {
    auto of = config_maps_of_node_.find(node);
    if (of == config_maps_of_node_.end()) continue;
    of->second.erase(key);
    if (of->second.empty()) config_maps_of_node_.erase(of);
    push_effective_spec(node);
  }
}

void LedgerBuilder::push_effective_spec(const std::string& node) {
  auto it = specs_.find(node);
  if (it == specs_.end()) return;
  auto u = unresolved_.find(node);
  const bool closed = malformed_nodes_.contains(node) || (u != unresolved_.end() && !u->second.empty());
  auto maps = config_maps_of_node_.find(node);
  if (!closed && maps == config_maps_of_node_.end()) {
    ledger_.upsert_node(it->second);
    return;
  }
  scheduling::NodeSpec effective = it->second;
  if (maps != config_maps_of_node_.end()) {
    for (const std::string& key : maps->second) {
      (void)contract_.apply_config_map(config_maps_.at(key), effective);  // reported when it or the node changed
    }
  }
  if (closed) {
    for (auto& c : effective.cards) c.cordoned = true;
  }
  ledger_.upsert_node(std::move(effective));
}

void LedgerBuilder::unresolve(const std::string& uid) {
  auto p = unresolved_pods_.find(uid);
  if (p == unresolved_pods_.end()) return;
  const std::string node = p->second.node_name;
  unresolved_pods_.erase(p);
  auto u = unresolved_.find(node);
  if (u != unresolved_.end() && u->second.erase(uid) > 0) {
    if (u->second.empty()) unresolved_.erase(u);
    push_effective_spec(node);
  }
}

void LedgerBuilder::forget_unresolved(const std::string& uid) { unresolve(uid); }

void LedgerBuilder::remove_pod(const std::string& uid) {
  ledger_.remove(uid);
  unresolve(uid);
  charged_.erase(uid);
  rejected_.erase(uid);
}

void LedgerBuilder::confirm_record(const Pod& pod, const PodFacts& facts, scheduling::Allocation allocation) {
  const int over = ledger_.confirm(facts, std::move(allocation));
  if (over > 0) {
    ++counters_.overcommit_reports;
    problems_("pod " + facts.key, "its allocation record over-commits " + std::to_string(over) + " card(s) of " + pod.node_name);
  }
}

const scheduling::PodRecord* LedgerBuilder::kept_charge(const Pod& pod) const {
  if (!charged_.contains(pod.meta.uid) || unresolved_pods_.contains(pod.meta.uid)) return nullptr;
  const scheduling::PodRecord* held = ledger_.pod(pod.meta.uid);
  if (held == nullptr || held->phase != scheduling::PodPhase::kConfirmed || held->node != pod.node_name) return nullptr;
  return held;
}

const scheduling::NodeSpec* LedgerBuilder::cards_of(const std::string& node) const {
  auto spec = specs_.find(node);
  return spec == specs_.end() ? nullptr : &spec->second;
}

std::vector<scheduling::CardCharge> LedgerBuilder::counted_record(const Pod& pod) const {
  if (const scheduling::PodRecord* held = kept_charge(pod)) return held->charges;
  return charge_bound_pod(contract_, trust_, record_keys_, pod, cards_of(pod.node_name)).charges();
}

void LedgerBuilder::apply_bound_pod(const Pod& pod) {
  const std::string& uid = pod.meta.uid;
  const std::string key = pod.key();
  const std::string message = record_message(uid, pod.node_name, record_keys_, pod.meta.annotations);
  std::string digest = sha256(message);
  // Charged already: what it holds does not change after its bind. The
  // same record again is no news (a status update); another record is a
  // patch by whoever may edit the pod, reported and never followed —
  // following it would free the card its container really holds.
  if (kept_charge(pod) != nullptr) {
    Charged& c = charged_.at(uid);
    if (c.digest != digest && !c.change_reported) {
      c.change_reported = true;
      ++counters_.changed_records;
      report_record(pod, "FracpackRecordChanged",
                    "the pod's allocation record was changed after its bind; fracpack keeps what it charged at the bind "
                    "and its node agent serves only the record fracpack signed");
    }
    return;
  }
  unresolve(uid);  // the previous version may have been waiting on its node
  rejected_.erase(uid);
  BoundPodCharge charge = charge_bound_pod(contract_, trust_, record_keys_, pod, cards_of(pod.node_name));
  if (!charge.request_problem.empty() && charge.request) {
    ++counters_.malformed_pods;
    problems_("pod " + key, charge.request_problem + " (charged by what its containers ask)");
  }
  const PodFacts facts{uid, key, charge.cpu_milli, charge.memory_bytes};
  if (charge.kind == BoundPodCharge::Kind::kNoGpu) {
    if (charge.has_record) {
      ++counters_.ignored_records;
      report_record(pod, "FracpackRecordIgnored", "the pod asks for no GPU: its allocation record is ignored and charges nothing");
    }
    ledger_.confirm(facts, Allocation{pod.node_name, {}});
    charged(pod, std::move(digest), "none");
    return;
  }
  if (charge.rejection != BoundPodCharge::Rejection::kNone) {
    ++counters_.rejected_records;
    rejected_.insert(uid);
  }
  if (charge.rejection == BoundPodCharge::Rejection::kNotFracpacks) report_record(pod, "FracpackRecordRejected", charge.rejection_message);
  if (!charge.request) {
    ++counters_.malformed_pods;
    problems_("pod " + key, charge.request_problem);
    if (charge.kind == BoundPodCharge::Kind::kRecord) {
      confirm_record(pod, facts, std::move(charge.record.allocation));
      charged(pod, std::move(digest), std::move(charge.signed_by));
      return;
    }
    ledger_.confirm(PodFacts{uid, key, 0, 0}, Allocation{pod.node_name, {}});
    if (contract_.requests_gpu(pod) && !trust_.verifies()) {
      // Its GPU holdings cannot be known: close its node to new placements.
      unresolved_[pod.node_name].insert(uid);
      unresolved_pods_[uid] = pod;
      push_effective_spec(pod.node_name);
      return;
    }
    charged(pod, std::move(digest), "none");
    return;
  }
  if (charge.kind == BoundPodCharge::Kind::kRecord) {
    confirm_record(pod, facts, std::move(charge.record.allocation));
    charged(pod, std::move(digest), std::move(charge.signed_by));
    return;
  }
  if (charge.rejection == BoundPodCharge::Rejection::kHoldsMore) report_record(pod, "FracpackRecordRejected", charge.rejection_message);
  if (!charge.record.problem.empty()) {
    ++counters_.malformed_pods;
    problems_("pod " + key, charge.record.problem);
  }
  // A bound GPU pod without a usable record: infer what it holds.
  unresolved_[pod.node_name].insert(uid);
  unresolved_pods_[uid] = pod;
  resolve_node(pod.node_name);
}

void LedgerBuilder::resolve_node(const std::string& node) {
  auto u = unresolved_.find(node);
  if (u != unresolved_.end() && !u->second.empty() && specs_.count(node)) {
    // Infer against the node's cards with every cordon open (the pods are
    // already there); the effective spec is pushed below.
    scheduling::NodeSpec open = specs_.at(node);
    for (auto& c : open.cards) c.cordoned = false;
    ledger_.upsert_node(std::move(open));
    for (auto it = u->second.begin(); it != u->second.end();) {
      auto p = unresolved_pods_.find(*it);
      if (p == unresolved_pods_.end() || infer(p->second)) {
        if (p != unresolved_pods_.end()) unresolved_pods_.erase(p);
        it = u->second.erase(it);
      } else {
        ++it;
      }
    }
    if (u->second.empty()) unresolved_.erase(u);
  }
  push_effective_spec(node);
}

bool LedgerBuilder::infer(const Pod& pod) {
  const std::string& uid = pod.meta.uid;
  const scheduling::NodeState* node = ledger_.node(pod.node_name);
  if (node == nullptr || !node->present()) return false;
  // Its placement annotations point inference at the cards it holds (a
  // pinned UUID or model); but where they cannot be read, or fit no card of
  // its node (rewritten after the bind, so that it would be charged
  // nothing while its container holds a card), only what it asks counts.
  auto req = contract_.pod_request(pod);
  if (!req) req = bound_request(contract_, pod);
  if (!req) return false;
  const PodFacts facts{uid, pod.key(), req->cpu_milli, req->memory_bytes};
  ledger_.remove(uid);  // infer against the node without this pod
  RecordedAllocation rec = rejected_.contains(uid) ? RecordedAllocation{} : contract_.recorded_allocation(pod, &node->spec());
  if (rec.kind == RecordedAllocation::Kind::kAllocation &&
      !scheduling::allocation_within_request(*req, rec.allocation, &node->spec()).ok()) {
    ++counters_.rejected_records;
    report_record(pod, "FracpackRecordRejected", "its allocation record holds more than the pod asks: it is charged as a pod without a record");
    rejected_.insert(uid);
    rec = RecordedAllocation{};
  }
  if (rec.kind == RecordedAllocation::Kind::kAllocation) {  // a record that needed the node's cards
    if (ledger_.confirm(facts, std::move(rec.allocation)) > 0) ++counters_.overcommit_reports;
    const std::string message = record_message(uid, pod.node_name, record_keys_, pod.meta.annotations);
    auto by = check_record_signature(pod, message, trust_);  // verified by apply_bound_pod (else rejected_)
    charged(pod, sha256(message), by ? *by : std::string("none"));
    return true;
  }
  // 1. A flat card list, if it matches the request.
  if (rec.kind == RecordedAllocation::Kind::kCards) {
    const std::vector<int>& indices = rec.cards;
    size_t needed = 0;
    for (const auto& c : req->containers) needed += c.init ? 0 : static_cast<size_t>(c.cards);
    bool usable = indices.size() == needed && needed > 0;
    for (size_t i = 0; usable && i < indices.size(); ++i) usable = node->position_of(indices[i]) >= 0;
    if (usable) {
      Allocation a;
      a.node = pod.node_name;
      size_t k = 0;
      for (const auto& c : req->containers) {
        if (c.init) continue;
        scheduling::ContainerAllocation ca{c.name, false, {}};
        for (int i = 0; i < c.cards; ++i, ++k) {
          const int index = indices[k];
          const auto& card = node->cards()[static_cast<size_t>(node->position_of(index))];
          ca.cards.push_back(scheduling::CardShare{index, card.uuid, c.memory_on(card.memory_mib), c.cores});
        }
        a.containers.push_back(std::move(ca));
      }
      if (ledger_.confirm(facts, std::move(a)) > 0) ++counters_.overcommit_reports;
      ++counters_.inferred_allocations;
      problems_("pod " + pod.key(), "cards inferred from " + rec.cards_source);
      return true;
    }
  }
  // 2. The cards its request would take now (the caller opened the node's
  // cordons: the pod is already there).
  static const scheduling::BestCardRanker kBest;
  scheduling::FitResult fit = scheduling::explain_fit(*req, *ledger_.node(pod.node_name), scheduling::FitOptions{false}, kBest);
  if (!fit.fits) {
    if (auto amounts = bound_request(contract_, pod)) {
      scheduling::FitResult anywhere = scheduling::explain_fit(*amounts, *ledger_.node(pod.node_name), scheduling::FitOptions{false}, kBest);
      if (anywhere.fits) {
        req = std::move(amounts);
        fit = std::move(anywhere);
      }
    }
  }
  const std::string digest = sha256(record_message(uid, pod.node_name, record_keys_, pod.meta.annotations));
  if (!fit.fits) {
    // Keep its CPU and memory; with trusted records the node stays closed
    // until this is resolved.
    ledger_.confirm(facts, Allocation{pod.node_name, {}});
    if (!trust_.verifies()) return false;
    report_record(pod, "FracpackRecordRejected",
                  "the pod has no allocation record of fracpack's and what it asks does not fit its node now: it is charged "
                  "no card, and the node agent does not serve it");
    charged(pod, digest, "none");
    return true;
  }
  ledger_.confirm(facts, scheduling::materialize(*req, *ledger_.node(pod.node_name), fit.picks));
  ++counters_.inferred_allocations;
  problems_("pod " + pod.key(), "no valid allocation record: cards inferred as the request would be placed now");
  charged(pod, digest, "none");
  return true;
}

}  // namespace fracpack::k8s
