#include "test/support/node_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/cmd/args.h"
#include "test/support/cluster_harness.h"
#include "test/support/record_keys.h"

namespace fracpack::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Four A100s, two per NUMA node.
std::string nvml_config() {
  std::string out = "driver;version=550.54.15\n";
  for (int i = 0; i < 4; ++i) {
    out += "card;uuid=" + card_uuid(i) + ";name=NVIDIA A100-SXM4-40GB;memory_mib=40960;minor=" + std::to_string(i) +
           ";numa=" + std::to_string(i / 2) + "\n";
  }
  return out;
}

// A Node as kubelet registers it: no GPU labels, no device annotation
// (the agent publishes them).
std::string bare_node() {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", kGpuNode}}},
              {"spec", json::object()},
              {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}}}}}}
      .dump();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

int counter = 0;

}  // namespace

std::string card_uuid(int card) { return "GPU-" + std::to_string(card) + "aaaaaaa-0000-0000-0000-000000000000"; }

std::string node_pod(const std::string& name, const std::vector<Ctr>& containers, const std::string& ns) {
  json spec = {{"schedulerName", "fracpack"}, {"containers", json::array()}};
  for (const Ctr& c : containers) {
    json limits = {{"cpu", "1"}, {"fracpack.io/gpu", std::to_string(c.gpus)}};
    if (c.cores > 0) limits["fracpack.io/gpu-cores"] = std::to_string(c.cores);
    if (c.memory_mib > 0) limits["fracpack.io/gpu-memory"] = std::to_string(c.memory_mib);
    json ctr = {{"name", c.name}, {"image", "cuda"}, {"resources", {{"limits", limits}, {"requests", limits}}}};
    if (c.init) {
      if (!spec.contains("initContainers")) spec["initContainers"] = json::array();
      spec["initContainers"].push_back(ctr);
    } else {
      spec["containers"].push_back(ctr);
    }
  }
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", spec},
              {"status", {{"phase", "Pending"}}}}
      .dump();
}

std::vector<test::KubeletDouble::Container> kubelet_order(const std::vector<Ctr>& containers) {
  std::vector<test::KubeletDouble::Container> out;
  for (bool init : {true, false}) {
    for (const Ctr& c : containers) {
      if (c.init == init) out.push_back({c.name, c.gpus});
    }
  }
  return out;
}

void NodeCluster::SetUp() {
  // Unix socket paths are short (108 bytes): a short directory.
  dir_ = "/tmp/fp-na-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::filesystem::create_directories(dir_ + "/plugins");
  write(dir_ + "/nvml.conf", nvml_config());
  write(dir_ + "/nvml.events", "");
  ::setenv("FAKE_NVML_CONFIG", (dir_ + "/nvml.conf").c_str(), 1);
  ::setenv("FAKE_NVML_EVENTS", (dir_ + "/nvml.events").c_str(), 1);

  config::Config c = test_config();
  c.cluster.reconcile_interval = 30s;
  cluster_ = std::make_unique<Connected>(c);
  cluster_->api->create("nodes", bare_node());
  cluster_->start();
  kubelet_ = std::make_unique<test::KubeletDouble>(dir_ + "/plugins");
  start_agent();
  // The extender sees the agent's cards.
  ASSERT_TRUE(Cluster::wait_for([&] { return ledger_cards_on_node() == 4; }, 10s)) << agent_->metrics_text();
}

void NodeCluster::TearDown() {
  agent_.reset();
  kubelet_.reset();
  cluster_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void NodeCluster::start_agent() {
  agent_.reset();
  server::NodeAgentOptions o;
  o.node_name = kGpuNode;
  o.client = client_for(*cluster_->api);
  o.plugin.plugin_dir = dir_ + "/plugins";
  o.plugin.slots = kIdsPerCard;
  o.plugin.record_wait = 3s;
  o.nvml_library = FRACPACK_FAKE_NVML;
  o.state_file = dir_ + "/agent.state";
  o.listen_address = "127.0.0.1";
  o.listen_port = 0;
  o.health_wait = 50ms;
  o.publish_recheck = 500ms;
  o.retry = 50ms;
  o.tune_informer = [](k8s::InformerOptions& io) { io = fast_informer(io.resource, io.field_selector); };
  o.trust = test_trust();  // serves only records the extender (test_config's key) signed
  const int registrations = kubelet_->registrations(), lists = kubelet_->list_messages();
  agent_ = std::make_unique<server::NodeAgent>(o);
  const Status s = agent_->start();
  ASSERT_TRUE(s.ok()) << s.message();
  // This agent's registration and its first device list (not a former agent's).
  ASSERT_TRUE(Cluster::wait_for([&] { return kubelet_->registrations() > registrations && kubelet_->list_messages() > lists; }, 10s));
  ASSERT_TRUE(kubelet_->wait_registered("fracpack.io/gpu", 10s));
  ASSERT_TRUE(Cluster::wait_for([&] { return agent_->ready().ok(); }, 10s)) << agent_->ready().message();
  if (cluster_ && cluster_->daemon_) {
    ASSERT_TRUE(wait_cards_offered());
  }
}

bool NodeCluster::wait_cards_offered(std::chrono::milliseconds timeout) {
  return Cluster::wait_for(
      [&] {
        return cluster_->daemon().state().read([](const scheduling::Ledger& l) {
          const scheduling::NodeState* n = l.node(kGpuNode);
          if (n == nullptr || n->cards().empty()) return false;
          for (const auto& c : n->cards()) {
            if (c.cordoned) return false;
          }
          return true;
        });
      },
      timeout);
}

void NodeCluster::restart_kubelet() {
  const int registrations = kubelet_->registrations(), lists = kubelet_->list_messages();
  kubelet_->restart();
  ASSERT_TRUE(Cluster::wait_for([&] { return kubelet_->registrations() > registrations && kubelet_->list_messages() > lists; }, 10s));
  ASSERT_TRUE(kubelet_->wait_registered("fracpack.io/gpu", 10s));
  // The plugin may register once more while it settles (its socket wiped
  // by kubelet's directory cleanup after it served it again, under CI
  // load): ready when its socket is there and no registration came for a
  // while.
  const std::string socket = dir_ + "/plugins/fracpack-gpu.sock";
  int seen = kubelet_->registrations();
  auto quiet_since = std::chrono::steady_clock::now();
  ASSERT_TRUE(Cluster::wait_for([&] {
    if (kubelet_->registrations() != seen || !std::filesystem::exists(socket)) {
      seen = kubelet_->registrations();
      quiet_since = std::chrono::steady_clock::now();
    }
    return std::chrono::steady_clock::now() - quiet_since > 500ms;
  }, 10s));
  ASSERT_TRUE(wait_cards_offered());
}

void NodeCluster::restart_extender() {
  cluster_->daemon_->drain(std::chrono::milliseconds(500));
  cluster_->daemon_.reset();
  cluster_->start();
  ASSERT_TRUE(Cluster::wait_for([&] { return ledger_cards_on_node() == 4; }, 10s));
}

size_t NodeCluster::ledger_cards_on_node() {
  auto cards = ledger_cards(cluster_->daemon());
  auto it = cards.find(kGpuNode);
  return it == cards.end() ? 0 : it->second.size();
}

std::string NodeCluster::bind(const std::string& name, const std::vector<Ctr>& containers, const std::string& ns, const std::string& created) {
  json spec = json::parse(node_pod(name, containers, ns));
  if (!created.empty()) spec["metadata"]["creationTimestamp"] = created;
  const std::string stored = cluster_->api->create("pods", spec.dump());
  const std::string uid = json::parse(stored)["metadata"]["uid"];
  auto cycle = cluster_->driver().schedule(stored, {{kGpuNode, ""}});
  EXPECT_EQ(cycle.node, kGpuNode) << name << ": " << cycle.error << " "
                                  << (cycle.filter.failed.empty() ? "" : cycle.filter.failed.begin()->second);
  const Status s = cluster_->driver().bind(ns, name, uid, kGpuNode);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return uid;
}

std::map<std::string, std::vector<std::string>> NodeCluster::recorded(const std::string& name, const std::string& ns) {
  auto text = cluster_->api->get("pods", ns, name);
  std::map<std::string, std::vector<std::string>> out;
  if (!text) return out;
  const json p = json::parse(*text);
  auto a = k8s::parse_allocation(p["metadata"]["annotations"].value("fracpack.io/allocation", ""));
  if (!a) return out;
  for (const auto& c : a->containers) {
    for (const auto& card : c.cards) out[c.name].push_back(card.uuid.empty() ? card_uuid(card.index) : card.uuid);
  }
  return out;
}

void NodeCluster::set_phase(const std::string& name, const std::string& phase, const std::string& ns) {
  cluster_->api->update("pods", ns, name, [&phase](const std::string& text) {
    json p = json::parse(text);
    p["status"]["phase"] = phase;
    return p.dump();
  });
}

void NodeCluster::fail_at_admission(const std::string& name, const std::string& reason, const std::string& ns) {
  cluster_->api->update("pods", ns, name, [&reason](const std::string& text) {
    json p = json::parse(text);
    p["status"]["phase"] = "Failed";
    p["status"]["reason"] = reason;
    p["status"]["message"] = "Pod was rejected at admission (" + reason + ")";
    return p.dump();
  });
}

std::vector<scheduling::Card> NodeCluster::published_cards() {
  auto text = cluster_->api->get("nodes", "", kGpuNode);
  if (!text) return {};
  auto node = k8s::parse_node(*text, contract_.selection());
  if (!node) return {};
  auto spec = contract_.node_spec(*node);
  return spec ? spec->cards : std::vector<scheduling::Card>{};
}

void NodeCluster::admit_and_check(const std::string& name, const std::string& uid, const std::vector<Ctr>& containers, const std::string& ns) {
  const auto want = recorded(name, ns);
  ASSERT_FALSE(want.empty()) << name << " has no allocation record";
  auto admitted = kubelet_->admit(uid, kubelet_order(containers));
  ASSERT_TRUE(admitted) << name << ": " << admitted.message();
  ASSERT_EQ(admitted->size(), kubelet_order(containers).size());
  ++pods_admitted_;
  for (const test::KubeletDouble::Admitted& a : *admitted) {
    ASSERT_TRUE(want.count(a.container)) << name << "/" << a.container;
    ++containers_admitted_;
    mismatches_ += cli::split_list(a.envs.at("NVIDIA_VISIBLE_DEVICES")) == want.at(a.container) ? 0 : 1;
    EXPECT_EQ(cli::split_list(a.envs.at("NVIDIA_VISIBLE_DEVICES")), want.at(a.container)) << name << "/" << a.container;
    EXPECT_EQ(a.envs.at("FRACPACK_POD"), ns + "/" + name);
    EXPECT_EQ(a.envs.at("FRACPACK_CONTAINER"), a.container);
    EXPECT_EQ(a.cdi_devices.size(), want.at(a.container).size());
    // kubelet was steered to IDs of the recorded cards.
    for (const std::string& id : a.device_ids) {
      bool on_recorded = false;
      for (const std::string& u : want.at(a.container)) on_recorded |= id.rfind(u + "-", 0) == 0;
      EXPECT_TRUE(on_recorded) << name << "/" << a.container << " got ID " << id;
    }
  }
}

}  // namespace fracpack::testing
