// A soak's cluster in one profile's terms (test/support/chaos.h runs once
// per profile): the GPU nodes as that profile's node agent registers them,
// the random GPU pods in its resources, what stays fixed of a pod's record
// once bound ("bound once"), and kubelet admitting a bound pod through the
// double of the peer's device plugin (test/support/peer_agents.h), which for
// HAMi releases the node lock as HAMi's plugin does. Beside it, what the
// profile tests share: a peer's Node object, a pod's limit, and the ledger
// in the units each peer's scheduler counts.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "k8s/contract/contract.h"
#include "test/support/fake_apiserver.h"
#include "test/support/peer_agents.h"
#include "test/support/scheduler_driver.h"
#include "test/support/server_fixture.h"

namespace fracpack::testing {

// A Node of 64 CPUs and 256 GiB with these annotations and extra
// resources in capacity and allocatable, as a peer's node agent leaves it.
std::string peer_node_json(const std::string& name, const nlohmann::json& annotations, const nlohmann::json& resources);
// The count of `resource` in the limits of the pod's first container (0: none).
int64_t first_container_limit(const nlohmann::json& pod, const std::string& resource);

// What the daemon's ledger holds, in the terms each peer's scheduler counts
// after a restart (test/support/peer_agents.h): per (node, card UUID) for
// HAMi, per (node, card index) in GiB for gpushare; cards in use only.
std::map<std::pair<std::string, std::string>, HamiCardUse> ledger_as_hami_usage(server::Daemon& d);
std::map<std::pair<std::string, int>, int64_t> ledger_as_gpushare_usage(server::Daemon& d);

class SoakProfile {
 public:
  // "fracpack", "hami" or "gpushare", with cards of `card_mib` (100 %
  // compute); anything else throws.
  static std::unique_ptr<SoakProfile> make(const std::string& name, int64_t card_mib);
  virtual ~SoakProfile() = default;

  const std::string& name() const { return name_; }
  const k8s::Contract& contract() const { return *contract_; }
  // The configuration keys selecting the profile (top level of fracpack's YAML).
  virtual std::string config_keys() const;
  // `count` nodes "node-<i>" of `cards` cards each.
  std::vector<CandidateNode> create_nodes(FakeApiServer& api, int count, int cards) const;
  // One of the soaks' GPU pods, "p<serial>" in namespace `ns`, uid
  // "u-<name>", drawn from `rng` (a whole card, two half cards, exclusive
  // compute, shares of 10 % to 75 %, as the profile can ask them). Returns its name.
  std::string create_random_pod(FakeApiServer& api, uint64_t& serial, std::mt19937_64& rng, const std::string& ns = "default") const;
  // What of a bound pod's annotations must never change once written.
  virtual std::string fixed_record(const nlohmann::json& pod) const = 0;
  // kubelet admitting pods bound to `node` that the node agent has not
  // served yet (none without a peer's node agent): how many its Allocate
  // served. Best effort: a pod deleted meanwhile is skipped.
  virtual size_t admit(FakeApiServer&, const std::string& /*node*/) const { return 0; }

 protected:
  SoakProfile(std::string name, int64_t card_mib);
  // Node `name` as the profile's node agent registers it.
  virtual std::string node(const std::string& name, int cards) const = 0;
  // The pod's GPU limits for a share of `cores` percent and `memory_mib`
  // on each of `cards` cards (0 and 0: whole cards).
  virtual nlohmann::json gpu_limits(int cores, int64_t memory_mib, int cards) const = 0;

  const int64_t card_mib_;

 private:
  std::string name_;
  std::shared_ptr<const k8s::Contract> contract_;
};

}  // namespace fracpack::testing
