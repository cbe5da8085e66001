// One GPU node end to end, for the node agent's tests and the tenant attack
// suite: the fake API server, `fracpack serve` (the extender), the
// scheduler driver, the node agent (the fake NVML through its real dlopen
// path) and the kubelet double over the real device plugin gRPC API. The
// node has four A100s (40 GiB), two per NUMA node; the agent advertises
// kIdsPerCard IDs per card and serves only records the test key signed.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "server/node_agent.h"
#include "test/support/kubelet_double.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing {

inline constexpr const char* kGpuNode = "gpu-1";
inline constexpr int kIdsPerCard = 4;

// The UUID of card `card` as the fake NVML reports it.
std::string card_uuid(int card);

// A container of a test pod.
struct Ctr {
  std::string name;
  bool init = false;
  int gpus = 1;          // fracpack.io/gpu
  int cores = 0;         // fracpack.io/gpu-cores (percent); 0 with no memory: whole cards
  int64_t memory_mib = 0;
};

// A pending pod of fracpack's scheduler in namespace `ns`.
std::string node_pod(const std::string& name, const std::vector<Ctr>& containers, const std::string& ns = "default");
// kubelet's order: init containers, then app containers.
std::vector<test::KubeletDouble::Container> kubelet_order(const std::vector<Ctr>& containers);

class NodeCluster : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // (Re)starts the node agent and waits until kubelet has its devices.
  void start_agent();
  // kubelet restarts; returns once the agent has registered again.
  void restart_kubelet();
  // The extender restarts (its ledger rebuilt from the API server alone).
  void restart_extender();

  // Creates, schedules and binds the pod as kube-scheduler would; its UID.
  // `created`: its creationTimestamp (RFC 3339), else the API server's now.
  std::string bind(const std::string& name, const std::vector<Ctr>& containers, const std::string& ns = "default",
                   const std::string& created = "");
  // The cards (UUIDs) the pod's record names per container, by name.
  std::map<std::string, std::vector<std::string>> recorded(const std::string& name, const std::string& ns = "default");
  void set_phase(const std::string& name, const std::string& phase, const std::string& ns = "default");
  // kubelet failed the pod at admission (an Allocate refused): phase Failed
  // with kubelet's reason, or `reason` for another admission handler's.
  void fail_at_admission(const std::string& name, const std::string& reason = "UnexpectedAdmissionError", const std::string& ns = "default");
  void set_running(const std::string& name, const std::string& ns = "default") { set_phase(name, "Running", ns); }
  // The node's cards as the extender reads them from the API server.
  std::vector<scheduling::Card> published_cards();
  size_t ledger_cards_on_node();
  // Waits until the extender offers the node's cards (the agent published
  // them registered with kubelet); false on timeout.
  bool wait_cards_offered(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Admits the pod as kubelet does and checks every container got exactly
  // its recorded cards.
  void admit_and_check(const std::string& name, const std::string& uid, const std::vector<Ctr>& containers, const std::string& ns = "default");

  std::string dir_;
  k8s::FracpackContract contract_;
  int pods_admitted_ = 0, containers_admitted_ = 0, mismatches_ = 0;
  std::unique_ptr<Connected> cluster_;
  std::unique_ptr<test::KubeletDouble> kubelet_;
  std::unique_ptr<server::NodeAgent> agent_;
};

}  // namespace fracpack::testing
