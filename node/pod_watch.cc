#include "node/pod_watch.h"


namespace fracpack::node {

std::string pods_on_node_selector(const std::string& node) {
  return "spec.nodeName=" + node + "," + k8s::kLivePodsSelector;
}

PodWatch::PodWatch(DevicesAndPods& state, std::string node, RecordRules rules, k8s::Selection selection)
    : state_(state), node_(std::move(node)), rules_(std::move(rules)), selection_(std::move(selection)) {}

std::optional<WaitingPod> PodWatch::waiting(const k8s::Pod& pod) const {
  if (pod.node_name != node_ || !may_wait(pod) || !asks_devices(pod, contract_of(rules_).device_resource())) return std::nullopt;
  return waiting_pod(pod, rules_, node_);
}

void PodWatch::place(const k8s::Pod& pod, bool deleted, std::map<std::string, WaitingPod>& waiting_pods,
                     std::map<std::string, LivePod>& live, uint64_t arrival) {
  const std::string& uid = pod.meta.uid;
  std::optional<WaitingPod> w;
  if (!deleted) w = waiting(pod);
  if (w) {
    w->arrival = arrival;
    waiting_pods[uid] = std::move(*w);
    live.erase(uid);
    return;
  }
  waiting_pods.erase(uid);
  // Not waiting (any more): while it lives here, what it holds counts.
  if (deleted || pod.node_name != node_ || pod.terminal() || !asks_devices(pod, contract_of(rules_).device_resource())) {
    live.erase(uid);
  } else {
    live[uid] = live_pod(pod, rules_, node_);
  }
}

void PodWatch::begin_list(bool /*consistent*/) {
  std::lock_guard lock(mu_);
  listing_.clear();
  live_listing_.clear();
  list_arrival_ = ++arrivals_;  // pods new in this list came in an unknown order
}

Status PodWatch::list_item(std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  auto known = pods_.find(pod->meta.uid);
  place(*pod, false, listing_, live_listing_, known != pods_.end() ? known->second.arrival : list_arrival_);
  return Status::Ok();
}

void PodWatch::end_list(const std::string& /*resource_version*/) {
  std::lock_guard lock(mu_);
  pods_ = std::move(listing_);
  live_ = std::move(live_listing_);
  listing_.clear();
  live_listing_.clear();
  synced_ = true;
  publish();
}

void PodWatch::abort_list() {
  std::lock_guard lock(mu_);
  listing_.clear();
  live_listing_.clear();
}

Result<std::string> PodWatch::event(k8s::WatchEventType type, std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  auto known = pods_.find(pod->meta.uid);
  const bool had = known != pods_.end() || live_.contains(pod->meta.uid);
  // Seen waiting now for the first time: after every pod before it.
  const uint64_t arrival = known != pods_.end() ? known->second.arrival : arrivals_ + 1;
  place(*pod, type == k8s::WatchEventType::kDeleted, pods_, live_, arrival);
  if (pods_.contains(pod->meta.uid) && arrival > arrivals_) arrivals_ = arrival;
  if (had || pods_.contains(pod->meta.uid) || live_.contains(pod->meta.uid)) publish();
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
  state_.set_pods(std::move(pods), live_);
}

}  // namespace fracpack::node
