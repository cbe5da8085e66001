#include "k8s/contract/profiles.h"

namespace fracpack::k8s {

namespace {

// How each profile's node agent marks a node it registered, and what its pods ask with.
std::vector<ForeignProfile> marks(const ContractConfig& c) {
  return {
      ForeignProfile{"fracpack", {c.fracpack.devices}, {}, c.fracpack.gpu_resources()},
      ForeignProfile{"hami", {c.hami.register_devices}, {}, c.hami.gpu_resources()},
      ForeignProfile{"gpushare", {}, {c.gpushare.gpu_memory}, {c.gpushare.gpu_memory}},
  };
}

ForeignProfiles others_of(const ContractConfig& c) {
  std::vector<ForeignProfile> others;
  for (ForeignProfile& p : marks(c)) {
    if (p.name != c.profile) others.push_back(std::move(p));
  }
  return ForeignProfiles(c.profile, std::move(others));
}

}  // namespace

const std::vector<std::string>& profile_names() {
  static const std::vector<std::string> names = {"fracpack", "hami", "gpushare"};
  return names;
}

Result<std::shared_ptr<const Contract>> make_contract(const ContractConfig& c) {
  if (c.profile == "fracpack") return std::shared_ptr<const Contract>(std::make_shared<FracpackContract>(c.fracpack, others_of(c), c.fracpack_options));
  if (c.profile == "hami") {
    HamiOptions options = c.hami_options;
    options.node_lock_expire = c.hami_node_lock_expire;
    options.node_lock_taken = c.hami_node_lock;
    return std::shared_ptr<const Contract>(std::make_shared<HamiContract>(c.hami, options, others_of(c)));
  }
  if (c.profile == "gpushare") {
    return std::shared_ptr<const Contract>(std::make_shared<GpushareContract>(c.gpushare, c.gpushare_options, others_of(c)));
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown profile \"" + c.profile + "\" (known: " + known + ")"};
}

}  // namespace fracpack::k8s
