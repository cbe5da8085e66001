#include "k8s/contract/profiles.h"

namespace fracpack::k8s {

namespace {

// How each profile's node agent marks a node it registered, and what its pods ask with.
std::vector<ForeignProfile> marks(const ContractConfig& c) {
  // The tke profile's agent is fracpack's and publishes the same devices
  // annotation: there, fracpack's agent is told by the resource it registers.
  std::vector<std::string> fracpack_annotations;
  if (c.profile != Profile::kTke) fracpack_annotations.push_back(c.fracpack.devices);
  return {
      // First: a node that fracpack's agent serves with the tke profile
      // carries fracpack's devices annotation too, and is the tke
      // profile's. GPUManager's device plugin registers vcuda-core as well.
      ForeignProfile{std::string(profile_name(Profile::kTke)), {}, {c.tke.vcuda_core}, c.tke.gpu_resources()},
      ForeignProfile{std::string(profile_name(Profile::kFracpack)), std::move(fracpack_annotations), {c.fracpack.gpu}, c.fracpack.gpu_resources()},
      ForeignProfile{std::string(profile_name(Profile::kHami)), {c.hami.register_devices}, {}, c.hami.gpu_resources()},
      ForeignProfile{std::string(profile_name(Profile::kGpushare)), {}, {c.gpushare.gpu_memory}, {c.gpushare.gpu_memory}},
  };
}

ForeignProfiles others_of(const ContractConfig& c) {
  std::vector<ForeignProfile> others;
  for (ForeignProfile& p : marks(c)) {
    if (p.name != profile_name(c.profile)) others.push_back(std::move(p));
  }
  return ForeignProfiles(std::string(profile_name(c.profile)), std::move(others));
}

}  // namespace

Result<std::shared_ptr<const Contract>> make_contract(const ContractConfig& c) {
  switch (c.profile) {
    case Profile::kFracpack:
      return std::shared_ptr<const Contract>(std::make_shared<FracpackContract>(c.fracpack, others_of(c), c.fracpack_options));
    case Profile::kHami: {
      HamiOptions options = c.hami_options;
      options.node_lock_expire = c.hami_node_lock_expire;
      options.node_lock_taken = c.hami_node_lock;
      return std::shared_ptr<const Contract>(std::make_shared<HamiContract>(c.hami, options, others_of(c)));
    }
    case Profile::kGpushare:
      return std::shared_ptr<const Contract>(std::make_shared<GpushareContract>(c.gpushare, c.gpushare_options, others_of(c)));
    case Profile::kTke: {
      TkeNames names = c.tke;
      names.fracpack = c.fracpack;  // the node side and the record are fracpack's, with the configured names
      return std::shared_ptr<const Contract>(std::make_shared<TkeContract>(std::move(names), others_of(c), c.fracpack_options));
    }
  }
  return Error{"unknown profile " + std::to_string(static_cast<int>(c.profile))};
}

std::shared_ptr<const Contract> default_contract(ContractNames names) { return std::make_shared<FracpackContract>(std::move(names)); }

}  // namespace fracpack::k8s
