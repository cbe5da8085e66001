#include "k8s/contract/profiles.h"

namespace fracpack::k8s {

namespace {

// How each profile's node agent marks a node it registered, and what its pods ask with.
std::vector<ForeignProfile> marks(const ContractConfig& c) {
  // The tke profile's agent is fracpack's and publishes the same devices
  // annotation: there, fracpack's agent is told by the resource it registers.
  std::vector<std::string> fracpack_annotations;
  if (c.profile != "tke") fracpack_annotations.push_back(c.fracpack.devices);
  return {
      // First: a node that fracpack's agent serves with the tke profile
      // carries fracpack's devices annotation too, and is the tke
      // profile's. GPUManager's device plugin registers vcuda-core as well.
      ForeignProfile{"tke", {}, {c.tke.vcuda_core}, c.tke.gpu_resources()},
      ForeignProfile{"fracpack", std::move(fracpack_annotations), {c.fracpack.gpu}, c.fracpack.gpu_resources()},
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
  static const std::vector<std::string> names = {"fracpack", "hami", "gpushare", "tke"};
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
  if (c.profile == "tke") {
    TkeNames names = c.tke;
    names.fracpack = c.fracpack;  // the node side and the record are fracpack's, with the configured names
    return std::shared_ptr<const Contract>(std::make_shared<TkeContract>(std::move(names), others_of(c), c.fracpack_options));
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown profile \"" + c.profile + "\" (known: " + known + ")"};
}

}  // namespace fracpack::k8s
