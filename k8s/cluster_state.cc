#include "k8s/cluster_state.h"

#include <algorithm>
#include <charconv>

#include "k8s/snapshot.h"
#include "scheduling/fit.h"

namespace fracpack::k8s {

using scheduling::Allocation;
using scheduling::PodFacts;

namespace {

constexpr size_t kMaxProblems = 200;
constexpr auto kTombstoneLife = std::chrono::minutes(10);
// Deletions remembered for the bind fence: far longer than any read takes,
// and bounded in count in a cluster that deletes thousands of pods a minute.
constexpr auto kDeletedLife = std::chrono::minutes(5);
constexpr size_t kMaxDeleted = 200000;

// "0,3" -> {0, 3}; nullopt if malformed.
std::optional<std::vector<int>> parse_indices(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    int v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size() || v < 0) return std::nullopt;
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

ClusterState::ClusterState(SyncOptions options) : options_(std::move(options)), selection_(options_.names.selection()) {}

bool ClusterState::ready() const {
  std::shared_lock lock(mu_);
  return pods_synced_ && nodes_synced_;
}

std::optional<Pod> ClusterState::pod(const std::string& uid) const {
  std::shared_lock lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod;
}

std::optional<Pod> ClusterState::pod_by_name(const std::string& ns, const std::string& name) const {
  std::shared_lock lock(mu_);
  auto k = uid_by_key_.find(ns + "/" + name);
  if (k == uid_by_key_.end()) return std::nullopt;
  auto it = pods_.find(k->second);
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod;
}

// No expiry here: a reservation past its TTL may belong to a bound pod whose
// watch event is late; only the reconciler, with the API server's word that
// the pod is unbound, releases it (reconcile_assumptions). Found by the chaos
// soak: expiring here let the next pod take a bound pod's cards.
Status ClusterState::assume(const PodFacts& pod, Allocation allocation, scheduling::Clock::time_point now) {
  std::unique_lock lock(mu_);
  return ledger_.assume(pod, std::move(allocation), now + options_.assume_ttl);
}

Result<Allocation> ClusterState::assume_chosen(const PodFacts& pod, const Chooser& choose, scheduling::Clock::time_point now) {
  std::unique_lock lock(mu_);
  auto chosen = choose(ledger_);
  if (!chosen) return chosen;
  if (Status s = ledger_.assume(pod, *chosen, now + options_.assume_ttl); !s.ok()) return Error{s.message()};
  return chosen;
}

Result<ClusterState::CaughtUp> ClusterState::catch_up(const std::string& node, const std::vector<Pod>& fresh,
                                                      const std::string& uid, const Chooser& choose) {
  std::unique_lock lock(mu_);
  // What the API server has bound here that the ledger does not hold as
  // bound: unknown pods, and pods held only by a reservation (this replica's
  // bind whose Binding landed — or lost to another writer's, whose record
  // is the one that counts).
  std::vector<const Pod*> missing;
  const Pod* mine_bound = nullptr;  // this very pod, already bound here
  size_t unknown = 0;               // of `missing`: pods the ledger held nothing for, or other cards
  for (const Pod& p : fresh) {
    if (p.meta.uid.empty() || p.node_name != node || p.terminal()) continue;
    const scheduling::PodRecord* r = ledger_.pod(p.meta.uid);
    if (r != nullptr && r->node == node && r->phase == scheduling::PodPhase::kConfirmed) continue;
    if (deleted_.contains(p.meta.uid)) continue;  // the read predates a deletion the watch applied
    if (p.meta.uid == uid) {
      mine_bound = &p;
      continue;
    }
    missing.push_back(&p);
    const std::string* record = p.meta.annotation(options_.names.allocation);
    auto a = record != nullptr ? parse_allocation(*record) : Result<Allocation>(Error{"no record"});
    if (r == nullptr || r->node != node || !a || scheduling::charges_of(*a) != r->charges) ++unknown;
  }
  auto apply_missing = [&] {
    for (const Pod* p : missing) apply_pod_locked(*p);
    counters_.fence_caught_up += unknown;
  };
  const scheduling::PodRecord* mine = ledger_.pod(uid);
  if (mine == nullptr || mine->node != node) return Error{"its reservation on node " + node + " was released meanwhile"};
  if (mine_bound != nullptr) {
    // Bound here already (an earlier attempt's Binding landed, or another
    // replica bound it): the API server's record is what it holds.
    const scheduling::Allocation reserved = mine->allocation;
    apply_missing();
    apply_pod_locked(*mine_bound);
    const scheduling::PodRecord* now = ledger_.pod(uid);
    if (now == nullptr) return Error{"pod is bound to " + node + " but its record could not be read"};
    return CaughtUp{now->allocation, missing.size(), now->allocation != reserved};
  }
  if (mine->phase == scheduling::PodPhase::kConfirmed) return CaughtUp{mine->allocation, 0, false};
  // Nothing new, and no card it holds over capacity: it stands as it is.
  const scheduling::NodeState* here = ledger_.node(node);
  auto holds_overcommitted = [&] {
    for (const auto& c : mine->charges) {
      const int pos = here != nullptr ? here->position_of(c.index) : -1;
      if (pos < 0 || here->use()[static_cast<size_t>(pos)].cores > scheduling::kCardMilli || here->free_memory(static_cast<size_t>(pos)) < 0) {
        return true;
      }
    }
    return false;
  };
  if (missing.empty() && !holds_overcommitted()) return CaughtUp{mine->allocation, 0, false};
  // Judge the reservation beside the pods the watch has not delivered, and
  // beside what other binds' fences applied since it was made (confirm()
  // records a bound pod even where it over-commits a reservation): lift it,
  // apply them, then put it back where it still fits.
  const scheduling::PodRecord saved = *mine;
  const PodFacts facts{saved.uid, saved.key, saved.cpu_milli, saved.memory_bytes};
  ledger_.forget(uid);
  apply_missing();
  const scheduling::NodeState* state = ledger_.node(node);
  if (state != nullptr && scheduling::allocation_fits(*state, saved.allocation).ok() &&
      ledger_.assume(facts, saved.allocation, saved.deadline).ok()) {
    return CaughtUp{saved.allocation, missing.size(), false};
  }
  auto chosen = choose(ledger_);
  if (chosen) {
    if (Status st = ledger_.assume(facts, *chosen, saved.deadline); !st.ok()) chosen = Error{st.message()};
  }
  if (!chosen) {
    bound_at_.erase(uid);
    return Error{"node " + node + " holds pods bound by another scheduler that fracpack's watch had not delivered yet: " + chosen.message()};
  }
  return CaughtUp{std::move(*chosen), missing.size(), true};
}

void ClusterState::load_snapshot(const ObjectList& list) {
  for (const Node& n : list.nodes) apply_node(n);
  std::unique_lock lock(mu_);
  for (const Pod& p : list.pods) apply_pod_locked(p);
  pods_synced_ = true;
  nodes_synced_ = true;
}

bool ClusterState::forget(const std::string& uid) {
  std::unique_lock lock(mu_);
  return drop_locked(uid);
}

bool ClusterState::drop_locked(const std::string& uid) {
  bound_at_.erase(uid);
  return ledger_.forget(uid);
}

std::vector<ClusterState::Stale> ClusterState::stale_assumptions(scheduling::Clock::time_point now,
                                                                std::chrono::milliseconds min_age) const {
  std::shared_lock lock(mu_);
  std::vector<Stale> out;
  for (const auto& uid : ledger_.assumed_pods()) {
    const scheduling::PodRecord* r = ledger_.pod(uid);
    if (r == nullptr || r->deadline - options_.assume_ttl + min_age > now) continue;
    const size_t slash = r->key.find('/');
    out.push_back(Stale{uid, r->key.substr(0, slash), slash == std::string::npos ? r->key : r->key.substr(slash + 1), r->node,
                        now >= r->deadline});
  }
  return out;
}

void ClusterState::note_reconciled(const std::string& uid) {
  std::unique_lock lock(mu_);
  if (drop_locked(uid)) ++counters_.reconciled_assumptions;
}

void ClusterState::note_expired(const std::string& uid) {
  std::unique_lock lock(mu_);
  const scheduling::PodRecord* r = ledger_.pod(uid);
  if (r == nullptr || r->phase != scheduling::PodPhase::kAssumed) return;
  problem_locked("pod " + r->key, "assumed reservation on " + r->node + " expired: the pod is not bound");
  if (drop_locked(uid)) ++counters_.expired_assumptions;
}

void ClusterState::note_gone(const std::string& uid) {
  std::unique_lock lock(mu_);
  if (drop_locked(uid)) ++counters_.reconciled_assumptions;
  gone_[uid] = Tombstone{scheduling::Clock::now(), 0};
}

void ClusterState::note_bound(const std::string& uid, std::chrono::steady_clock::time_point when) {
  std::unique_lock lock(mu_);
  const scheduling::PodRecord* r = ledger_.pod(uid);
  if (r != nullptr && r->phase == scheduling::PodPhase::kAssumed) bound_at_[uid] = when;
}

size_t ClusterState::expire(scheduling::Clock::time_point now) {
  std::unique_lock lock(mu_);
  const auto gone = ledger_.expire(now);
  counters_.expired_assumptions += gone.size();
  for (const auto& r : gone) bound_at_.erase(r.uid);
  for (const auto& r : gone) problem_locked("pod " + r.key, "assumed reservation on " + r.node + " expired without confirmation");
  // Tombstones outlive any event still in flight long before this.
  for (auto it = gone_.begin(); it != gone_.end();) {
    it = now - it->second.at > kTombstoneLife ? gone_.erase(it) : std::next(it);
  }
  return gone.size();
}

void ClusterState::problem_locked(std::string object, std::string message) {
  if (problems_.size() >= kMaxProblems) problems_.erase(problems_.begin());
  problems_.push_back(SyncProblem{std::move(object), std::move(message)});
}

std::vector<OverCommittedCard> ClusterState::overcommitted() const {
  std::shared_lock lock(mu_);
  std::vector<OverCommittedCard> out;
  for (const auto& [name, node] : ledger_.nodes()) {
    for (size_t p = 0; p < node.use().size(); ++p) {
      const auto& use = node.use()[p];
      if (use.cores <= scheduling::kCardMilli && node.free_memory(p) >= 0) continue;
      const auto& card = node.cards()[p];
      OverCommittedCard o{name, card.index, use.cores, use.memory_mib, card.memory_mib, {}};
      for (const scheduling::PodRecord* r : node.pods()) {
        for (const auto& c : r->charges) {
          if (c.index == card.index) o.pods.emplace_back(r->key, r->uid);
        }
      }
      std::sort(o.pods.begin(), o.pods.end());
      out.push_back(std::move(o));
    }
  }
  return out;
}

SyncCounters ClusterState::counters() const {
  std::shared_lock lock(mu_);
  return counters_;
}

std::vector<SyncProblem> ClusterState::problems() const {
  std::shared_lock lock(mu_);
  return problems_;
}

void ClusterState::apply_pod(const Pod& pod) {
  std::unique_lock lock(mu_);
  apply_pod_locked(pod);
}

void ClusterState::delete_pod(const Pod& pod) {
  std::unique_lock lock(mu_);
  delete_pod_locked(pod.meta.uid);
}

void ClusterState::apply_node(const Node& node) {
  std::unique_lock lock(mu_);
  ++counters_.node_events;
  const std::string& name = node.meta.name;
  if (name.empty()) {
    problem_locked("node ?", "node without a name");
    return;
  }
  nodes_[name] = node;
  auto spec = node_spec(node, options_.names);
  if (spec) {
    specs_[name] = std::move(*spec);
    malformed_nodes_.erase(name);
  } else {
    ++counters_.malformed_nodes;
    problem_locked("node " + name, spec.message() + " (keeping its last good cards, cordoned)");
    malformed_nodes_.insert(name);
    if (!specs_.contains(name)) specs_[name] = scheduling::NodeSpec{name, 0, 0, {}};
  }
  resolve_node_locked(name);
}

void ClusterState::delete_node(const std::string& name) {
  std::unique_lock lock(mu_);
  ++counters_.node_events;
  nodes_.erase(name);
  specs_.erase(name);
  malformed_nodes_.erase(name);
  ledger_.remove_node(name);
}

void ClusterState::push_effective_spec_locked(const std::string& node) {
  auto it = specs_.find(node);
  if (it == specs_.end()) return;
  const bool closed = malformed_nodes_.contains(node) || !unresolved_[node].empty();
  if (!closed) {
    ledger_.upsert_node(it->second);
    return;
  }
  scheduling::NodeSpec cordoned = it->second;
  for (auto& c : cordoned.cards) c.cordoned = true;
  ledger_.upsert_node(std::move(cordoned));
}

bool ClusterState::infer_locked(const std::string& uid) {
  auto pit = pods_.find(uid);
  if (pit == pods_.end()) return true;  // gone: nothing to resolve
  const Pod& pod = pit->second.pod;
  const scheduling::NodeState* node = ledger_.node(pod.node_name);
  if (node == nullptr || !node->present()) return false;
  auto req = pod_request(pod, options_.names);
  if (!req) return false;
  const PodFacts facts{uid, pod.key(), req->cpu_milli, req->memory_bytes};
  ledger_.remove(uid);  // infer against the node without this pod
  // 1. The flat index list, if it matches the request.
  if (const std::string* idx = pod.meta.annotation(options_.names.indices)) {
    auto indices = parse_indices(*idx);
    size_t needed = 0;
    for (const auto& c : req->containers) needed += c.init ? 0 : static_cast<size_t>(c.cards);
    bool usable = indices && indices->size() == needed && needed > 0;
    for (size_t i = 0; usable && i < indices->size(); ++i) usable = node->position_of((*indices)[i]) >= 0;
    if (usable) {
      Allocation a;
      a.node = pod.node_name;
      size_t k = 0;
      for (const auto& c : req->containers) {
        if (c.init) continue;
        scheduling::ContainerAllocation ca{c.name, false, {}};
        for (int i = 0; i < c.cards; ++i, ++k) {
          const int index = (*indices)[k];
          const auto& card = node->cards()[static_cast<size_t>(node->position_of(index))];
          ca.cards.push_back(scheduling::CardShare{index, card.uuid, c.memory_on(card.memory_mib), c.cores});
        }
        a.containers.push_back(std::move(ca));
      }
      if (ledger_.confirm(facts, std::move(a)) > 0) ++counters_.overcommit_reports;
      inferred_.insert(uid);
      ++counters_.inferred_allocations;
      problem_locked("pod " + pod.key(), "cards inferred from annotation " + options_.names.indices);
      return true;
    }
  }
  // 2. The cards its request would take now (the caller opened the node's
  // cordons: the pod is already there).
  static const scheduling::BestCardRanker kBest;
  scheduling::FitResult fit = scheduling::fit(*req, *ledger_.node(pod.node_name), scheduling::FitOptions{false}, kBest);
  if (!fit.fits) {
    // Keep its CPU and memory; the node stays closed until this is resolved.
    ledger_.confirm(facts, Allocation{pod.node_name, {}});
    return false;
  }
  ledger_.confirm(facts, scheduling::materialize(*req, *ledger_.node(pod.node_name), fit.picks));
  inferred_.insert(uid);
  ++counters_.inferred_allocations;
  problem_locked("pod " + pod.key(), "no valid allocation record: cards inferred as the request would be placed now");
  return true;
}

void ClusterState::resolve_node_locked(const std::string& node) {
  auto& pending = unresolved_[node];
  if (!pending.empty() && specs_.count(node)) {
    // Infer against the node's cards with every cordon open (the pods are
    // already there); the effective spec is pushed below.
    scheduling::NodeSpec open = specs_.at(node);
    for (auto& c : open.cards) c.cordoned = false;
    ledger_.upsert_node(std::move(open));
    for (auto it = pending.begin(); it != pending.end();) {
      it = infer_locked(*it) ? pending.erase(it) : std::next(it);
    }
  }
  push_effective_spec_locked(node);
  if (pending.empty()) unresolved_.erase(node);
}

ClusterState::PodEntry* ClusterState::apply_pod_locked(Pod incoming) {
  ++counters_.pod_events;
  if (incoming.meta.uid.empty()) {
    problem_locked("pod " + incoming.key(), "pod without metadata.uid");
    return nullptr;
  }
  if (incoming.terminal()) {
    delete_pod_locked(incoming.meta.uid);
    return nullptr;
  }
  if (auto t = gone_.find(incoming.meta.uid); t != gone_.end()) {
    // Older than what proved it gone (a lagging watch, a stale list).
    ++counters_.stale_events;
    t->second.listed = current_list_generation_;
    return nullptr;
  }
  auto [it, inserted] = pods_.try_emplace(incoming.meta.uid);
  const std::string& uid = it->first;
  PodEntry& entry = it->second;
  if (!inserted && !entry.pod.node_name.empty()) {
    // The previous version may have been unresolved on its node.
    auto u = unresolved_.find(entry.pod.node_name);
    if (u != unresolved_.end() && u->second.erase(uid) > 0) {
      const std::string n = entry.pod.node_name;
      push_effective_spec_locked(n);
      if (u->second.empty()) unresolved_.erase(u);
    }
  }
  std::string key = incoming.key();
  entry.pod = std::move(incoming);
  const Pod& pod = entry.pod;
  if (pod.node_name.empty()) {
    uid_by_key_[std::move(key)] = uid;
    return &entry;  // pending: holds nothing (an assumed bind stays assumed)
  }
  auto who = [&] { return "pod " + key; };
  auto req = pod_request(pod, options_.names);
  if (!req) {
    ++counters_.malformed_pods;
    problem_locked(who(), req.message());
    ledger_.confirm(PodFacts{uid, key, 0, 0}, Allocation{pod.node_name, {}});
    if (requests_gpu(pod, options_.names)) {
      // Its GPU holdings cannot be known: close its node to new placements.
      unresolved_[pod.node_name].insert(uid);
      push_effective_spec_locked(pod.node_name);
    }
    uid_by_key_[std::move(key)] = uid;
    return &entry;
  }
  const PodFacts facts{uid, key, req->cpu_milli, req->memory_bytes};
  uid_by_key_[std::move(key)] = uid;
  if (const std::string* record = pod.meta.annotation(options_.names.allocation)) {
    auto a = parse_allocation(*record);
    if (a && a->node == pod.node_name) {
      bound_at_.erase(uid);
      const int over = ledger_.confirm(facts, std::move(*a));
      if (over > 0) {
        ++counters_.overcommit_reports;
        problem_locked("pod " + facts.key,
                       "its allocation record over-commits " + std::to_string(over) + " card(s) of " + pod.node_name);
      }
      inferred_.erase(uid);
      return &entry;
    }
    ++counters_.malformed_pods;
    problem_locked("pod " + facts.key, a ? "annotation " + options_.names.allocation + " names node " + a->node +
                                               " but the pod is bound to " + pod.node_name
                                         : "annotation " + options_.names.allocation + ": " + a.message());
  }
  if (!req->wants_gpu()) {
    ledger_.confirm(facts, Allocation{pod.node_name, {}});
    return &entry;
  }
  // A bound GPU pod without a usable record: infer what it holds.
  unresolved_[pod.node_name].insert(uid);
  resolve_node_locked(pod.node_name);  // reads pods_, never changes it: `entry` stays valid
  return &entry;
}

void ClusterState::delete_pod_locked(const std::string& uid) {
  const auto now = scheduling::Clock::now();
  if (deleted_.insert(uid).second) deleted_order_.emplace_back(now, uid);
  while (!deleted_order_.empty() &&
         (deleted_order_.size() > kMaxDeleted || now - deleted_order_.front().first > kDeletedLife)) {
    deleted_.erase(deleted_order_.front().second);
    deleted_order_.pop_front();
  }
  auto it = pods_.find(uid);
  ledger_.remove(uid);
  inferred_.erase(uid);
  bound_at_.erase(uid);
  gone_.erase(uid);  // the informer has seen it go: nothing older can follow
  if (it == pods_.end()) return;
  const std::string node = it->second.pod.node_name;
  auto k = uid_by_key_.find(it->second.pod.key());
  if (k != uid_by_key_.end() && k->second == uid) uid_by_key_.erase(k);
  pods_.erase(it);
  auto u = unresolved_.find(node);
  if (u != unresolved_.end() && u->second.erase(uid) > 0) {
    push_effective_spec_locked(node);
    if (u->second.empty()) unresolved_.erase(u);
  }
}

// --- informer sinks ---

void ClusterState::PodSink::begin_list(bool consistent) {
  ++generation_;
  {
    std::unique_lock lock(s_.mu_);
    s_.current_list_generation_ = generation_;
  }
  listing_ = true;
  consistent_ = consistent;
  started_ = std::chrono::steady_clock::now();
}

Status ClusterState::PodSink::list_item(std::string_view json) {
  auto pod = parse_pod(json, s_.selection_);
  if (!pod) {
    std::unique_lock lock(s_.mu_);
    ++s_.counters_.malformed_pods;
    s_.problem_locked("pod ?", "cannot decode a listed pod: " + pod.message());
    return Error{pod.message()};
  }
  std::unique_lock lock(s_.mu_);
  if (PodEntry* entry = s_.apply_pod_locked(std::move(*pod))) entry->listed = generation_;
  return Status::Ok();
}

void ClusterState::PodSink::end_list(const std::string&) {
  std::unique_lock lock(s_.mu_);
  std::vector<std::string> gone;
  for (const auto& [uid, entry] : s_.pods_) {
    if (entry.listed != generation_) gone.push_back(uid);
  }
  auto listed = [&](const std::string& uid) {
    auto it = s_.pods_.find(uid);
    return it != s_.pods_.end() && it->second.listed == generation_;
  };
  // Pods this store had seen and the list lacks are gone (deleted, or
  // terminal and filtered out), with whatever they held, assumed or not.
  // Assumptions for pods never seen here are not in pods_: they stay until
  // confirmed or expired (the list may predate the pod).
  for (const auto& uid : gone) s_.delete_pod_locked(uid);
  s_.counters_.relist_deletions += gone.size();
  // A list without a tombstoned pod is past its deletion: the watch that
  // follows cannot bring older events about it.
  for (auto it = s_.gone_.begin(); it != s_.gone_.end();) {
    it = it->second.listed != generation_ ? s_.gone_.erase(it) : std::next(it);
  }
  s_.current_list_generation_ = 0;
  if (consistent_) {
    // A quorum read started after a Binding succeeded shows the pod if it
    // still exists: an assumed pod bound before it and absent is gone.
    for (const auto& uid : s_.ledger_.assumed_pods()) {
      auto b = s_.bound_at_.find(uid);
      if (b != s_.bound_at_.end() && b->second < started_ && !listed(uid)) {
        s_.ledger_.forget(uid);
        s_.bound_at_.erase(b);
        ++s_.counters_.reconciled_assumptions;
      }
    }
  }
  s_.pods_synced_ = true;
  listing_ = false;
}

void ClusterState::PodSink::abort_list() { listing_ = false; }

Result<std::string> ClusterState::PodSink::event(WatchEventType type, std::string_view json) {
  auto pod = parse_pod(json, s_.selection_);
  std::unique_lock lock(s_.mu_);
  if (!pod) {
    ++s_.counters_.malformed_pods;
    s_.problem_locked("pod ?", "cannot decode a watched pod: " + pod.message());
    return pod.error();
  }
  std::string rv = pod->meta.resource_version;
  if (type == WatchEventType::kDeleted) {
    ++s_.counters_.pod_events;
    s_.delete_pod_locked(pod->meta.uid);
  } else {
    s_.apply_pod_locked(std::move(*pod));
  }
  return rv;
}

void ClusterState::NodeSink::begin_list(bool) {
  seen_.clear();
  listing_ = true;
}

Status ClusterState::NodeSink::list_item(std::string_view json) {
  auto node = parse_node(json, s_.selection_);
  if (!node) {
    std::unique_lock lock(s_.mu_);
    ++s_.counters_.malformed_nodes;
    s_.problem_locked("node ?", "cannot decode a listed node: " + node.message());
    return Error{node.message()};
  }
  seen_.insert(node->meta.name);
  s_.apply_node(*node);
  return Status::Ok();
}

void ClusterState::NodeSink::end_list(const std::string&) {
  std::vector<std::string> gone;
  {
    std::shared_lock lock(s_.mu_);
    for (const auto& [name, node] : s_.nodes_) {
      if (!seen_.contains(name)) gone.push_back(name);
    }
  }
  for (const auto& name : gone) s_.delete_node(name);
  std::unique_lock lock(s_.mu_);
  s_.counters_.relist_deletions += gone.size();
  s_.nodes_synced_ = true;
  seen_.clear();
  listing_ = false;
}

void ClusterState::NodeSink::abort_list() {
  seen_.clear();
  listing_ = false;
}

Result<std::string> ClusterState::NodeSink::event(WatchEventType type, std::string_view json) {
  auto node = parse_node(json, s_.selection_);
  if (!node) {
    std::unique_lock lock(s_.mu_);
    ++s_.counters_.malformed_nodes;
    s_.problem_locked("node ?", "cannot decode a watched node: " + node.message());
    return node.error();
  }
  if (type == WatchEventType::kDeleted) {
    s_.delete_node(node->meta.name);
  } else {
    s_.apply_node(*node);
  }
  return node->meta.resource_version;
}

std::string ClusterState::snapshot_json() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> items;
  items.reserve(nodes_.size() + pods_.size());
  for (const auto& [name, node] : nodes_) items.push_back(node_json(node));
  std::vector<const Pod*> pods;
  for (const auto& [uid, entry] : pods_) pods.push_back(&entry.pod);
  std::sort(pods.begin(), pods.end(), [](const Pod* a, const Pod* b) { return a->key() < b->key(); });
  for (const Pod* p : pods) items.push_back(pod_json(*p));
  return list_json(items);
}

scheduling::ShapeCounts ClusterState::observed_shapes() const {
  std::shared_lock lock(mu_);
  scheduling::ShapeCounts counts;
  for (const auto& [uid, entry] : pods_) {
    if (auto req = pod_request(entry.pod, options_.names)) counts.add(scheduling::shape_of(*req));
  }
  return counts;
}

}  // namespace fracpack::k8s
