#include "node/pod_watch.h"

#include "node/records.h"

namespace fracpack::node {

std::string pods_on_node_selector(const std::string& node) {
  return "spec.nodeName=" + node + "," + k8s::kLivePodsSelector;
}

PodWatch::PodWatch(NodeState& state, std::string node, std::string resource, k8s::ContractNames names, k8s::Selection selection)
    : state_(state), node_(std::move(node)), resource_(std::move(resource)), names_(std::move(names)), selection_(std::move(selection)) {}

std::optional<WaitingPod> PodWatch::waiting(const k8s::Pod& pod) const {
  if (pod.node_name != node_ || !may_wait(pod) || !asks_devices(pod, resource_)) return std::nullopt;
  return waiting_pod(pod, resource_, names_, node_);
}

void PodWatch::begin_list(bool /*consistent*/) {
  std::lock_guard lock(mu_);
  listing_.clear();
  list_arrival_ = ++arrivals_;  // pods new in this list came in an unknown order
}

Status PodWatch::list_item(std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  if (auto w = waiting(*pod)) {
    auto known = pods_.find(w->uid);
    w->arrival = known != pods_.end() ? known->second.arrival : list_arrival_;
    listing_[w->uid] = std::move(*w);
  }
  return Status::Ok();
}

void PodWatch::end_list(const std::string& /*resource_version*/) {
  std::lock_guard lock(mu_);
  pods_ = std::move(listing_);
  listing_.clear();
  synced_ = true;
  publish();
}

void PodWatch::abort_list() {
  std::lock_guard lock(mu_);
  listing_.clear();
}

Result<std::string> PodWatch::event(k8s::WatchEventType type, std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  std::optional<WaitingPod> w;
  if (type != k8s::WatchEventType::kDeleted) w = waiting(*pod);
  auto known = pods_.find(pod->meta.uid);
  const bool had = known != pods_.end();
  if (w) {
    w->arrival = had ? known->second.arrival : ++arrivals_;  // seen bound now: after every pod before it
    pods_[w->uid] = std::move(*w);
  } else if (had) {
    pods_.erase(known);
  }
  if (had || w) publish();
  return pod->meta.resource_version;
}

bool PodWatch::synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

std::vector<std::string> PodWatch::unusable() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [uid, p] : pods_) {
    if (!p.cards) out.push_back(p.key + ": " + p.cards.message());
  }
  return out;
}

void PodWatch::publish() {
  std::vector<WaitingPod> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, p] : pods_) pods.push_back(p);
  state_.set_pods(std::move(pods));
}

}  // namespace fracpack::node
