// Profiles: which contract a deployment speaks (k8s/contract/profile.h: the
// profiles and their names), with its names and options from the configuration.
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
#include "k8s/contract/profile.h"
#include "k8s/contract/tke.h"
#include "common/result.h"

namespace fracpack::k8s {

struct ContractConfig {
  Profile profile = kDefaultProfile;
  ContractNames fracpack;
  FracpackOptions fracpack_options;  // placement.unenforcedShares
  HamiNames hami;
  HamiOptions hami_options;
  // The hami profile's node lock (hami.io/mutex.lock, k8s/contract/hami_node_lock.h).
  bool hami_node_lock = true;
  std::chrono::milliseconds hami_node_lock_expire{std::chrono::minutes(5)};
  GpushareNames gpushare;
  GpushareOptions gpushare_options;
  // tencent.com/vcuda-*; its node side and record take the fracpack names
  // above and fracpack_options.
  TkeNames tke;
  bool operator==(const ContractConfig&) const = default;
};

// The contract of `config.profile`, with its names and options.
Result<std::shared_ptr<const Contract>> make_contract(const ContractConfig& config);

// The contract a ClusterState or NodeAgent built without one speaks (tests,
// tools): fracpack's, with `names`, knowing no other profile's marks.
std::shared_ptr<const Contract> default_contract(ContractNames names = {});

}  // namespace fracpack::k8s
