#include "node/pod_watch.h"

#include <utility>


namespace fracpack::node {

std::string pods_on_node_selector(const std::string& node) {
  // kubelet's own query (no phase term): a waiting pod turning Failed is
  // then a MODIFIED event carrying its phase. Under a phase selector the
  // API server sends it as DELETED with the object as it was before (still
  // Pending), which reads as a deletion, and a deletion is no verdict.
  return "spec.nodeName=" + node;
}

PodWatch::PodWatch(DevicesAndPods& state, std::string node, RecordRules rules, k8s::Selection selection)
    : state_(state), node_(std::move(node)), rules_(std::move(rules)), selection_(std::move(selection)) {}

std::optional<WaitingPod> waiting_on_node(const k8s::Pod& pod, const RecordRules& rules, const std::string& node) {
  if (pod.node_name != node || !may_wait(pod) || !asks_devices(pod, contract_of(rules).device_resource())) return std::nullopt;
  return waiting_pod(pod, rules, node);
}

Result<std::vector<WaitingPod>> waiting_in_list(std::string_view list_json, const RecordRules& rules, const std::string& node,
                                                const k8s::Selection& selection) {
  auto list = k8s::parse_list(list_json, selection);
  if (!list) return Error{"pod list: " + list.message()};
  std::vector<WaitingPod> out;
  for (const k8s::Pod& pod : list->pods) {
    if (auto w = waiting_on_node(pod, rules, node)) out.push_back(std::move(*w));
  }
  return out;
}

std::optional<WaitingPod> PodWatch::waiting(const k8s::Pod& pod) const { return waiting_on_node(pod, rules_, node_); }

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
  finished_listing_.clear();
  list_arrival_ = next_arrival();  // pods new in this list came in an unknown order
}

Status PodWatch::list_item(std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  auto known = pods_.find(pod->meta.uid);
  if (known != pods_.end() && failed_at_allocate(*pod)) finished_listing_.push_back(pod->meta.uid);
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
  publish(std::exchange(finished_listing_, {}));
}

void PodWatch::abort_list() {
  {
    std::lock_guard lock(mu_);
    listing_.clear();
    live_listing_.clear();
    finished_listing_.clear();
  }
  // A list that failed: the API server is in trouble (kubelet's relist
  // comes once it is back), the window runs from then.
  watch_interrupted();
}

Result<std::string> PodWatch::event(k8s::WatchEventType type, std::string_view object_json) {
  auto pod = k8s::parse_pod(object_json, selection_);
  if (!pod) return Error{"pod: " + pod.message()};
  std::lock_guard lock(mu_);
  auto known = pods_.find(pod->meta.uid);
  const bool had = known != pods_.end() || live_.contains(pod->meta.uid);
  // Seen waiting now for the first time: after every pod before it (or
  // with them, in a relist window).
  const bool in_window = std::chrono::steady_clock::now() < window_until_;
  const uint64_t arrival = known != pods_.end() ? known->second.arrival : in_window ? window_arrival_ : arrivals_ + 1;
  const bool deleted = type == k8s::WatchEventType::kDeleted;
  std::vector<std::string> finished;
  if (known != pods_.end() && !deleted && failed_at_allocate(*pod)) finished.push_back(pod->meta.uid);
  place(*pod, deleted, pods_, live_, arrival);
  if (pods_.contains(pod->meta.uid) && arrival > arrivals_) arrivals_ = arrival;
  if (had || pods_.contains(pod->meta.uid) || live_.contains(pod->meta.uid)) publish(std::move(finished));
  return pod->meta.resource_version;
}

uint64_t PodWatch::next_arrival() {
  if (std::chrono::steady_clock::now() < window_until_) return window_arrival_;
  return ++arrivals_;
}

void PodWatch::watch_interrupted() {
  std::lock_guard lock(mu_);
  if (std::chrono::steady_clock::now() >= window_until_) window_arrival_ = ++arrivals_;
  window_until_ = std::chrono::steady_clock::now() + kRelistWindow;
  // The pods waiting now reach kubelet's relist with those to come.
  state_.merge_arrivals_upto(window_arrival_);
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

void PodWatch::publish(std::vector<std::string> finished) {
  std::vector<WaitingPod> pods;
  pods.reserve(pods_.size());
  for (const auto& [uid, p] : pods_) pods.push_back(p);
  state_.set_pods(std::move(pods), live_, std::move(finished));
}

}  // namespace fracpack::node
