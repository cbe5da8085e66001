// Profiles: which contract a deployment speaks, by name ("fracpack",
// "hami", "gpushare", "tke"), with its names and options from the configuration.
// Each profile's contract knows the others' marks (k8s/contract/foreign.h):
// nodes registered by another profile's node agent are left alone.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "k8s/contract/contract.h"
#include "k8s/contract/fracpack.h"
#include "k8s/contract/gpushare.h"
#include "k8s/contract/hami.h"
#include "k8s/contract/tke.h"
#include "common/result.h"

namespace fracpack::k8s {

struct ContractConfig {
  std::string profile = "fracpack";
  ContractNames fracpack;
  FracpackOptions fracpack_options;  // placement.unenforcedShares
  HamiNames hami;
  HamiOptions hami_options;
  // The hami profile's node lock (hami.io/mutex.lock, k8s/node_lock.h).
  bool hami_node_lock = true;
  std::chrono::milliseconds hami_node_lock_expire{std::chrono::minutes(5)};
  GpushareNames gpushare;
  GpushareOptions gpushare_options;
  // tencent.com/vcuda-*; its node side and record take the fracpack names
  // above and fracpack_options.
  TkeNames tke;
  bool operator==(const ContractConfig&) const = default;
};

const std::vector<std::string>& profile_names();

// The contract of `config.profile`; an unknown name is an error listing the known ones.
Result<std::shared_ptr<const Contract>> make_contract(const ContractConfig& config);

}  // namespace fracpack::k8s
