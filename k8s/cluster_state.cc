#include "k8s/cluster_state.h"

#include <algorithm>

#include "k8s/bind_fence.h"
#include "k8s/contract/profiles.h"
#include "k8s/snapshot.h"

namespace fracpack::k8s {


namespace {

constexpr size_t kMaxProblems = 200;
// Deletions remembered for the bind fence: far longer than any read takes,
// and bounded in count in a cluster that deletes thousands of pods a minute.
constexpr auto kDeletedLife = std::chrono::minutes(5);
constexpr size_t kMaxDeleted = 200000;

std::shared_ptr<const Contract> contract_or_default(std::shared_ptr<const Contract> c) {
  return c ? std::move(c) : default_contract();
}

}  // namespace

ClusterState::ClusterState(SyncOptions options)
    : options_(std::move(options)),
      contract_(contract_or_default(options_.contract)),
      builder_(*contract_, [this](std::string object, std::string message) { problem_locked(std::move(object), std::move(message)); },
               options_.trust, options_.on_record_report) {
  if (options_.on_node_left_alone) builder_.on_left_alone(options_.on_node_left_alone);
  selection_ = contract_->selection();
  if (!options_.fence_marker_name.empty()) selection_.annotation_prefixes.push_back(std::string(BindFence::kMarkerAnnotation));
}

void ClusterState::marker_seen_locked(const Pod& pod, bool listing) {
  if (options_.fence_marker_name.empty() || pod.meta.name != options_.fence_marker_name ||
      pod.meta.namespace_name != options_.fence_marker_namespace) {
    return;
  }
  const std::string* value = pod.meta.annotation(BindFence::kMarkerAnnotation);
  if (value == nullptr) return;
  if (listing) {
    listed_marker_ = *value;
    return;
  }
  std::lock_guard lock(marker_mu_);
  markers_seen_.push_back(*value);
  if (markers_seen_.size() > 512) markers_seen_.pop_front();
  marker_cv_.notify_all();
}

bool ClusterState::wait_fence_marker(const std::string& value, std::chrono::steady_clock::time_point until) const {
  std::unique_lock lock(marker_mu_);
  return marker_cv_.wait_until(lock, until, [&] { return std::find(markers_seen_.rbegin(), markers_seen_.rend(), value) != markers_seen_.rend(); });
}

bool ClusterState::ready() const {
  std::shared_lock lock(mu_);
  return pods_synced_ && nodes_synced_ && (config_map_list_.synced || contract_->node_config_map_namespace().empty()) &&
         (quota_list_.synced || !quotas_.enabled());
}

std::vector<std::string> ClusterState::held_by(const std::vector<std::string_view>& nodes) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  if (!builder_.any_held()) return out;
  out.reserve(nodes.size());
  for (std::string_view n : nodes) out.push_back(builder_.held_by(n));
  return out;
}

bool ClusterState::any_held() const {
  std::shared_lock lock(mu_);
  return builder_.any_held();
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

void ClusterState::load_snapshot(const ObjectList& list) {
  std::unique_lock lock(mu_);
  for (const ConfigMap& c : list.config_maps) builder_.apply_config_map(c);
  for (const Node& n : list.nodes) apply_node_locked(n);
  for (const Pod& p : list.pods) apply_pod_locked(p);
  for (const ResourceQuota& q : list.resource_quotas) apply_resource_quota_locked(q);
  pods_synced_ = true;
  nodes_synced_ = true;
  config_map_list_.synced = true;
  quota_list_.synced = true;
}

ReservationStore::Writing ClusterState::write_ledger() { return Writing{std::unique_lock(mu_), builder_.ledger()}; }

ReservationStore::Reading ClusterState::read_ledger() const { return Reading{std::shared_lock(mu_), builder_.ledger()}; }

void ClusterState::problem_locked(std::string object, std::string message) {
  if (problems_.size() >= kMaxProblems) problems_.erase(problems_.begin());
  problems_.push_back(SyncProblem{std::move(object), std::move(message)});
}

std::vector<OverCommittedCard> ClusterState::overcommitted() const {
  std::shared_lock lock(mu_);
  std::vector<OverCommittedCard> out;
  for (const auto& [name, node] : builder_.ledger().nodes()) {
    for (size_t p = 0; p < node.use().size(); ++p) {
      const auto& use = node.use()[p];
      if (!node.overcommitted(p)) continue;
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

std::vector<scheduling::CardCharge> ClusterState::counted_record(const Pod& pod) const {
  std::shared_lock lock(mu_);
  return builder_.counted_record(pod);
}

SyncCounters ClusterState::counters() const {
  std::shared_lock lock(mu_);
  SyncCounters c = counters_;
  const LedgerCounters& l = builder_.counters();
  c.malformed_pods += l.malformed_pods;    // beside objects that could not even be decoded
  c.malformed_nodes += l.malformed_nodes;
  c.inferred_allocations = l.inferred_allocations;
  c.overcommit_reports = l.overcommit_reports;
  c.rejected_records = l.rejected_records;
  c.changed_records = l.changed_records;
  c.ignored_records = l.ignored_records;
  const ReservationCounters& r = reservations_.counters(StoreLockHeld{});
  c.expired_assumptions = r.expired_assumptions;
  c.reconciled_assumptions = r.reconciled_assumptions;
  c.fence_caught_up = r.fence_caught_up;
  return c;
}

std::map<std::string, int> ClusterState::records_by_key() const {
  std::shared_lock lock(mu_);
  return builder_.records_by_key();
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
  apply_node_locked(node);
}

void ClusterState::delete_node(const std::string& name) {
  std::unique_lock lock(mu_);
  delete_node_locked(name);
}

void ClusterState::apply_node_locked(const Node& node) {
  ++counters_.node_events;
  if (!node.meta.name.empty()) nodes_[node.meta.name] = node;
  builder_.apply_node(node);
}

void ClusterState::delete_node_locked(const std::string& name) {
  ++counters_.node_events;
  nodes_.erase(name);
  builder_.delete_node(name);
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
  if (reservations_.tombstoned(StoreLockHeld{}, incoming.meta.uid, pod_listing_ ? pod_list_generation_ : 0)) {
    // Older than what proved it gone (a lagging watch, a stale list).
    ++counters_.stale_events;
    return nullptr;
  }
  auto [it, inserted] = pods_.try_emplace(incoming.meta.uid);
  const std::string& uid = it->first;
  PodEntry& entry = it->second;
  // The previous version may have been waiting on its node.
  if (!inserted && !entry.pod.node_name.empty()) builder_.forget_unresolved(uid);
  entry.pod = std::move(incoming);
  const Pod& pod = entry.pod;
  uid_by_key_[pod.key()] = uid;
  if (pod.node_name.empty()) return &entry;  // pending: holds nothing (an assumed bind stays assumed)
  builder_.apply_bound_pod(pod);
  const scheduling::PodRecord* r = builder_.ledger().pod(uid);
  if (r != nullptr && r->phase == scheduling::PodPhase::kConfirmed) reservations_.confirmed(StoreLockHeld{}, uid);
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
  builder_.remove_pod(uid);
  reservations_.removed(StoreLockHeld{}, uid);  // the informer has seen it go: nothing older can follow
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  auto k = uid_by_key_.find(it->second.pod.key());
  if (k != uid_by_key_.end() && k->second == uid) uid_by_key_.erase(k);
  pods_.erase(it);
}

// --- list+watch ---

void ClusterState::begin_pod_list(bool consistent) {
  std::unique_lock lock(mu_);
  ++pod_list_generation_;
  pod_listing_ = true;
  pod_list_consistent_ = consistent;
  pod_list_started_ = std::chrono::steady_clock::now();
  listed_marker_.clear();
}

void ClusterState::undecodable_locked(const char* kind, const char* how, const std::string& why) {
  const std::string_view k = kind;
  ++(k == "pod"             ? counters_.malformed_pods
     : k == "node"          ? counters_.malformed_nodes
     : k == "resourcequota" ? counters_.malformed_quotas
                            : counters_.malformed_config_maps);
  problem_locked(std::string(kind) + " ?", std::string("cannot decode a ") + how + " " + kind + ": " + why);
}

Status ClusterState::list_pod(std::string_view json) {
  auto pod = parse_pod(json, selection_);  // decoded before the lock: lists are large
  std::unique_lock lock(mu_);
  if (!pod) {
    undecodable_locked("pod", "listed", pod.message());
    return Error{pod.message()};
  }
  marker_seen_locked(*pod, /*listing=*/true);
  if (PodEntry* entry = apply_pod_locked(std::move(*pod))) entry->listed = pod_list_generation_;
  return Status::Ok();
}

void ClusterState::end_pod_list() {
  std::unique_lock lock(mu_);
  const uint64_t generation = pod_list_generation_;
  std::vector<std::string> gone;
  for (const auto& [uid, entry] : pods_) {
    if (entry.listed != generation) gone.push_back(uid);
  }
  auto listed = [&](const std::string& uid) {
    auto it = pods_.find(uid);
    return it != pods_.end() && it->second.listed == generation;
  };
  // Pods this store had seen and the list lacks are gone (deleted, or
  // terminal and filtered out), with whatever they held, assumed or not.
  // Assumptions for pods never seen here are not in pods_: they stay until
  // confirmed or expired (the list may predate the pod).
  for (const auto& uid : gone) delete_pod_locked(uid);
  counters_.relist_deletions += gone.size();
  pod_listing_ = false;
  reservations_.pod_list_ended(StoreLockHeld{}, builder_.ledger(), generation, pod_list_consistent_, pod_list_started_, listed);
  pods_synced_ = true;
  if (!listed_marker_.empty()) {
    // The whole list is applied now: the marker's value in it counts.
    std::lock_guard marker_lock(marker_mu_);
    markers_seen_.push_back(std::exchange(listed_marker_, {}));
    if (markers_seen_.size() > 512) markers_seen_.pop_front();
    marker_cv_.notify_all();
  }
}

void ClusterState::abort_pod_list() {
  std::unique_lock lock(mu_);
  pod_listing_ = false;
  listed_marker_.clear();
}

Result<std::string> ClusterState::pod_event(WatchEventType type, std::string_view json) {
  auto pod = parse_pod(json, selection_);
  std::unique_lock lock(mu_);
  if (!pod) {
    undecodable_locked("pod", "watched", pod.message());
    return pod.error();
  }
  std::string rv = pod->meta.resource_version;
  if (type != WatchEventType::kDeleted) marker_seen_locked(*pod, /*listing=*/false);
  if (type == WatchEventType::kDeleted) {
    ++counters_.pod_events;
    delete_pod_locked(pod->meta.uid);
  } else {
    apply_pod_locked(std::move(*pod));
  }
  return rv;
}

void ClusterState::begin_node_list(bool) {
  std::unique_lock lock(mu_);
  listed_nodes_.clear();
}

Status ClusterState::list_node(std::string_view json) {
  auto node = parse_node(json, contract_->selection());
  std::unique_lock lock(mu_);
  if (!node) {
    undecodable_locked("node", "listed", node.message());
    return Error{node.message()};
  }
  listed_nodes_.insert(node->meta.name);
  apply_node_locked(*node);
  return Status::Ok();
}

void ClusterState::end_node_list() {
  std::unique_lock lock(mu_);
  std::vector<std::string> gone;
  for (const auto& [name, node] : nodes_) {
    if (!listed_nodes_.contains(name)) gone.push_back(name);
  }
  for (const auto& name : gone) delete_node_locked(name);
  counters_.relist_deletions += gone.size();
  nodes_synced_ = true;
  listed_nodes_.clear();
}

void ClusterState::abort_node_list() {
  std::unique_lock lock(mu_);
  listed_nodes_.clear();
}

Result<std::string> ClusterState::node_event(WatchEventType type, std::string_view json) {
  auto node = parse_node(json, contract_->selection());
  std::unique_lock lock(mu_);
  if (!node) {
    undecodable_locked("node", "watched", node.message());
    return node.error();
  }
  if (type == WatchEventType::kDeleted) {
    delete_node_locked(node->meta.name);
  } else {
    apply_node_locked(*node);
  }
  return node->meta.resource_version;
}

std::string ClusterState::snapshot_json() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> items;
  items.reserve(nodes_.size() + pods_.size());
  for (const auto& [key, config_map] : builder_.config_maps()) items.push_back(config_map_json(config_map));
  for (const auto& [id, entry] : quotas_.objects()) items.push_back(resource_quota_json(entry.object));
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
    if (auto req = contract_->pod_request(entry.pod)) {
      counts.add(scheduling::shape_of(*req), 1, static_cast<double>(scheduling::node_memory_mib(*req)));
    }
  }
  return counts;
}

}  // namespace fracpack::k8s
