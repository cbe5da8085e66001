#include "test/support/cluster_harness.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <set>

#include "k8s/contract/fracpack.h"

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

std::string bind_fence_marker_pod(const std::string& ns, const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"schedulerName", "fracpack.io/never-scheduled"}, {"containers", {{{"name", "pause"}, {"image", "pause"}}}}}},
              {"status", {{"phase", "Pending"}}}}
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

const k8s::Contract& fracpack_contract() {
  static const k8s::FracpackContract contract;
  return contract;
}

std::vector<RecordedPod> recorded_pods(const FakeApiServer& server, const k8s::Contract& contract) {
  std::map<std::string, std::optional<scheduling::NodeSpec>> specs;
  for (const auto& text : server.list("nodes")) {
    auto node = k8s::parse_node(text, contract.selection());
    if (!node) continue;
    auto spec = contract.node_spec(*node);
    specs[node->meta.name] = spec ? std::optional<scheduling::NodeSpec>(std::move(*spec)) : std::nullopt;
  }
  std::vector<RecordedPod> out;
  for (const auto& text : server.list("pods")) {
    auto pod = k8s::parse_pod(text, contract.selection());
    if (!pod || pod->node_name.empty() || pod->terminal()) continue;
    auto spec = specs.find(pod->node_name);
    const scheduling::NodeSpec* node = spec != specs.end() && spec->second ? &*spec->second : nullptr;
    k8s::RecordedAllocation record = contract.recorded_allocation(*pod, node);
    auto request = contract.pod_request(*pod);
    out.push_back(RecordedPod{std::move(*pod), std::move(request), std::move(record)});
  }
  return out;
}

AnnotatedUse annotated_use(const FakeApiServer& server, const k8s::Contract& contract) {
  AnnotatedUse out;
  for (const RecordedPod& p : recorded_pods(server, contract)) {
    if (!contract.requests_gpu(p.pod)) continue;
    if (p.record.kind == k8s::RecordedAllocation::Kind::kNone) {
      out.unrecorded.push_back(p.pod.key());
      continue;
    }
    if (p.record.kind != k8s::RecordedAllocation::Kind::kAllocation) {
      out.bad_records.push_back(p.pod.key());
      continue;
    }
    for (const auto& c : scheduling::charges_of(p.record.allocation)) {
      AnnotatedCard& card = out.cards[{p.pod.node_name, c.index}];
      card.cores_milli += c.cores;
      card.memory_mib += c.memory_mib;
      card.pods.push_back(p.pod.key());
    }
  }
  return out;
}

std::map<std::string, std::string> half_card() { return {{"fracpack.io/gpu-cores", "50"}, {"fracpack.io/gpu-memory", "8192"}}; }

std::string bound_share_pod(const std::string& name, const std::string& node, int card, int percent, int64_t memory_mib) {
  // It asks what its record holds (a record holding more is not followed).
  const std::map<std::string, std::string> asks = {{"fracpack.io/gpu-cores", std::to_string(percent)},
                                                   {"fracpack.io/gpu-memory", std::to_string(memory_mib)}};
  return pod_object(PodSpec(name, "default", node, "Running", asks,
                            {{"fracpack.io/allocation", allocation_annotation(node, {{card, percent}}, memory_mib)}}, "u-" + name));
}

k8s::Pod decoded_pod(const std::string& text) { return *k8s::parse_pod(text, fracpack_contract().selection()); }

k8s::Node decoded_node(const std::string& name, int gpus) { return *k8s::parse_node(node_object(name, gpus), fracpack_contract().selection()); }

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
  auto pod = k8s::parse_pod(text, fracpack_contract().selection());
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
  informers_.reset();
  state_ = std::make_unique<k8s::ClusterState>(k8s::SyncOptions{});
  k8s::ClusterInformersOptions o;
  o.tune = [](k8s::InformerOptions& io) { io = fast_informer(io.resource, io.field_selector); };
  o.wrap_pod_sink = [this](k8s::InformerSink& inner) {
    auto trace = std::make_unique<TracingSink>(inner);
    pod_trace_ = trace.get();
    return trace;
  };
  o.pod_seed = 1;
  o.node_seed = 2;
  informers_ = std::make_unique<k8s::ClusterInformers>(client, *state_, o);
  informers_->start();
}

void Cluster::stop() {
  if (informers_) informers_->stop();
}

bool Cluster::wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  // Most conditions hold within a millisecond or two (a watch event, an
  // HTTP answer): polls start 100 µs apart and back off to 5 ms, so a test
  // that waits thousands of times (the openb end to end: twice per pod)
  // does not sleep 5 ms each time.
  const auto end = std::chrono::steady_clock::now() + timeout;
  std::chrono::microseconds pause(100);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
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
  const k8s::Contract& contract = state.contract();
  // Expected card usage per node from the pods' records.
  std::map<std::string, std::map<int, scheduling::CardUse>> cards;
  std::map<std::string, int64_t> cpu;
  std::map<std::string, scheduling::Allocation> pods;
  for (const RecordedPod& p : recorded_pods(server, contract)) {
    if (!p.request) continue;
    scheduling::Allocation a{p.pod.node_name, {}};
    if (p.record.kind == k8s::RecordedAllocation::Kind::kAllocation) {
      a = p.record.allocation;
    } else if (p.record.kind != k8s::RecordedAllocation::Kind::kNone) {
      return "pod " + p.pod.key() + ": bad record in the test data";
    }
    for (const auto& c : scheduling::charges_of(a)) {
      auto& u = cards[p.pod.node_name][c.index];
      u.memory_mib += c.memory_mib;
      u.cores += c.cores;
      u.sharers += c.shares;  // container shares, as the ledger counts them (two containers of one pod on a card: 2)
    }
    cpu[p.pod.node_name] += p.request->cpu_milli;
    pods[p.pod.meta.uid] = a;
  }
  std::set<std::string> nodes;
  for (const std::string& text : server.list("nodes")) {
    auto node = k8s::parse_node(text, contract.selection());
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
