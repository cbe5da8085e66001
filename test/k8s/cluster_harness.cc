#include "test/k8s/cluster_harness.h"

#include <nlohmann/json.hpp>
#include <set>

#include "k8s/contract.h"

namespace fracpack::testing {

using json = nlohmann::json;

std::string node_object(const std::string& name, int gpus, int64_t memory_mib, const std::string& cpu) {
  json n = {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata",
             {{"name", name},
              {"labels",
               {{"nvidia.com/gpu.count", std::to_string(gpus)},
                {"nvidia.com/gpu.memory", std::to_string(memory_mib)},
                {"nvidia.com/gpu.product", "Tesla-T4"}}}}},
            {"spec", json::object()},
            {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "256Gi"}, {"pods", "110"}}}}}};
  return n.dump();
}

std::string pod_object(const PodSpec& p) {
  json limits = json::object();
  for (const auto& [k, v] : p.limits) limits[k] = v;
  json meta = {{"name", p.name}, {"namespace", p.ns}};
  if (!p.uid.empty()) meta["uid"] = p.uid;
  if (!p.annotations.empty()) {
    meta["annotations"] = json::object();
    for (const auto& [k, v] : p.annotations) meta["annotations"][k] = v;
  }
  json spec = {{"schedulerName", "fracpack"},
               {"containers", {{{"name", "main"}, {"image", "busybox"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}};
  if (!p.node.empty()) spec["nodeName"] = p.node;
  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}, {"status", {{"phase", p.phase}}}}
      .dump();
}

std::string allocation_annotation(const std::string& node, const std::vector<std::pair<int, int>>& cards, int64_t memory_mib,
                                  const std::string& container) {
  scheduling::Allocation a;
  a.node = node;
  scheduling::ContainerAllocation c{container, false, {}};
  for (const auto& [index, percent] : cards) c.cards.push_back(scheduling::CardShare{index, "", memory_mib, percent * 10});
  a.containers.push_back(c);
  return k8s::format_allocation(a);
}

AnnotatedUse annotated_use(const FakeApiServer& server) {
  AnnotatedUse out;
  const k8s::ContractNames names;
  for (const auto& text : server.list("pods")) {
    auto pod = k8s::parse_pod(text, names.selection());
    if (!pod || pod->node_name.empty() || pod->terminal() || !k8s::requests_gpu(*pod, names)) continue;
    const std::string* rec = pod->meta.annotation(names.allocation);
    if (rec == nullptr) {
      out.unrecorded.push_back(pod->key());
      continue;
    }
    auto a = k8s::parse_allocation(*rec);
    if (!a || a->node != pod->node_name) {
      out.bad_records.push_back(pod->key());
      continue;
    }
    for (const auto& c : scheduling::charges_of(*a)) {
      AnnotatedCard& card = out.cards[{pod->node_name, c.index}];
      card.cores_milli += c.cores;
      card.memory_mib += c.memory_mib;
      card.pods.push_back(pod->key());
    }
  }
  return out;
}

k8s::ClientConfig client_for(const FakeApiServer& server) {
  k8s::ClientConfig c;
  c.endpoint = *k8s::Endpoint::parse(server.url());
  c.request_timeout = std::chrono::seconds(10);
  c.connect_timeout = std::chrono::seconds(2);
  return c;
}

k8s::InformerOptions fast_informer(const std::string& resource, const std::string& field_selector) {
  k8s::InformerOptions o;
  o.resource = resource;
  o.field_selector = field_selector;
  o.backoff_initial = std::chrono::milliseconds(20);
  o.backoff_max = std::chrono::milliseconds(200);
  o.page_size = 50;
  return o;
}

namespace {

std::string describe_pod(std::string_view text) {
  auto pod = k8s::parse_pod(text, k8s::ContractNames{}.selection());
  if (!pod) return "(undecodable)";
  return pod->meta.name + " rv " + pod->meta.resource_version + " " + pod->phase + " on '" + pod->node_name + "'";
}

}  // namespace

void TracingSink::note(std::string line) {
  std::lock_guard lock(mu_);
  lines_.push_back(std::move(line));
  if (lines_.size() > 20000) lines_.pop_front();
}

void TracingSink::begin_list(bool consistent) {
  note(consistent ? "LIST (consistent)" : "LIST");
  inner_.begin_list(consistent);
}

Status TracingSink::list_item(std::string_view text) {
  note("  item " + describe_pod(text));
  return inner_.list_item(text);
}

void TracingSink::end_list(const std::string& rv) {
  note("END LIST at " + rv);
  inner_.end_list(rv);
}

void TracingSink::abort_list() {
  note("ABORT LIST");
  inner_.abort_list();
}

Result<std::string> TracingSink::event(k8s::WatchEventType type, std::string_view text) {
  static const char* const kNames[] = {"ADDED", "MODIFIED", "DELETED"};
  note(std::string(kNames[static_cast<int>(type)]) + " " + describe_pod(text));
  return inner_.event(type, text);
}

std::string TracingSink::about(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& l : lines_) {
    if (l.rfind("LIST", 0) == 0 || l.rfind("END", 0) == 0 || l.rfind("ABORT", 0) == 0 ||
        l.find(" " + name + " rv ") != std::string::npos) {
      out += l + "\n";
    }
  }
  return out;
}

Cluster::Cluster(FakeApiServerOptions options) : server_(std::make_unique<FakeApiServer>(std::move(options))) {}

Cluster::~Cluster() { stop(); }

void Cluster::start(k8s::ClientConfig client) {
  stop();
  state_ = std::make_unique<k8s::ClusterState>(k8s::SyncOptions{});
  pods_.reset();
  pod_trace_ = std::make_unique<TracingSink>(state_->pod_sink());
  pods_ = std::make_unique<k8s::Informer>(client, fast_informer("/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed"),
                                          *pod_trace_, 1);
  nodes_ = std::make_unique<k8s::Informer>(client, fast_informer("/api/v1/nodes"), state_->node_sink(), 2);
  pod_thread_ = std::jthread([this](std::stop_token st) { pods_->run(st); });
  node_thread_ = std::jthread([this](std::stop_token st) { nodes_->run(st); });
}

void Cluster::stop() {
  if (pod_thread_.joinable()) {
    pod_thread_.request_stop();
    pod_thread_.join();
  }
  if (node_thread_.joinable()) {
    node_thread_.request_stop();
    node_thread_.join();
  }
}

bool Cluster::wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

std::string Cluster::wait_consistent(std::chrono::milliseconds timeout) {
  std::string diff;
  wait_for(
      [&] {
        diff = state_->ready() ? compare_ledger(*server_, *state_) : "not ready";
        return diff.empty();
      },
      timeout);
  return diff;
}

std::string compare_ledger(const FakeApiServer& server, const k8s::ClusterState& state) {
  const k8s::ContractNames names;
  // Expected card usage per node from the pods' annotations.
  std::map<std::string, std::map<int, scheduling::CardUse>> cards;
  std::map<std::string, int64_t> cpu;
  std::map<std::string, scheduling::Allocation> pods;
  for (const std::string& text : server.list("pods")) {
    auto pod = k8s::parse_pod(text, names.selection());
    if (!pod) return "cannot decode a pod: " + pod.message();
    if (pod->terminal() || pod->node_name.empty()) continue;
    auto req = k8s::pod_request(*pod, names);
    if (!req) continue;
    scheduling::Allocation a{pod->node_name, {}};
    if (const std::string* rec = pod->meta.annotation(names.allocation)) {
      auto parsed = k8s::parse_allocation(*rec);
      if (!parsed) return "pod " + pod->key() + ": bad record in the test data";
      a = *parsed;
    }
    for (const auto& c : scheduling::charges_of(a)) {
      auto& u = cards[pod->node_name][c.index];
      u.memory_mib += c.memory_mib;
      u.cores += c.cores;
      u.sharers += 1;
    }
    cpu[pod->node_name] += req->cpu_milli;
    pods[pod->meta.uid] = a;
  }
  std::set<std::string> nodes;
  for (const std::string& text : server.list("nodes")) {
    auto node = k8s::parse_node(text, names.selection());
    if (!node) return "cannot decode a node: " + node.message();
    nodes.insert(node->meta.name);
  }
  return state.read([&](const scheduling::Ledger& ledger) -> std::string {
    if (Status s = ledger.check_invariants(/*capacity=*/false); !s.ok()) return "ledger invariant: " + s.message();
    for (const auto& [name, node] : ledger.nodes()) {
      if (node.present() && !nodes.contains(name)) return "ledger holds node " + name + " that the server does not have";
      for (size_t p = 0; p < node.cards().size(); ++p) {
        const int index = node.cards()[p].index;
        const scheduling::CardUse want = cards[name][index];
        const scheduling::CardUse& got = node.use()[p];
        if (!(want == got)) {
          return "node " + name + " card " + std::to_string(index) + ": ledger " + std::to_string(got.cores) + "m/" +
                 std::to_string(got.memory_mib) + "MiB/" + std::to_string(got.sharers) + " sharers, annotations " +
                 std::to_string(want.cores) + "m/" + std::to_string(want.memory_mib) + "MiB/" + std::to_string(want.sharers);
        }
      }
      if (node.cpu_requested() != cpu[name]) {
        return "node " + name + ": CPU " + std::to_string(node.cpu_requested()) + " vs " + std::to_string(cpu[name]);
      }
    }
    for (const auto& [uid, a] : pods) {
      const scheduling::PodRecord* r = ledger.pod(uid);
      if (r == nullptr) return "pod " + uid + " missing from the ledger";
      if (!(r->allocation == a)) return "pod " + uid + ": ledger allocation differs from its annotation";
    }
    for (const auto& [name, node] : ledger.nodes()) {
      for (const scheduling::PodRecord* r : node.pods()) {
        if (r->phase == scheduling::PodPhase::kConfirmed && !pods.contains(r->uid)) {
          return "ledger holds pod " + r->uid + " that the server does not have bound";
        }
      }
    }
    return "";
  });
}

}  // namespace fracpack::testing
