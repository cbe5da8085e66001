// The profiles a deployment may speak (contract.profile), by name: the one
// list of their names and the one parser of them. Everything outside
// contract/ that needs to know which profile it runs asks here, through the
// enum, never by comparing names itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace fracpack::k8s {

enum class Profile {
  kFracpack,  // fracpack's own contract (k8s/contract/fracpack.h)
  kHami,      // HAMi's (k8s/contract/hami.h)
  kGpushare,  // Alibaba's gpushare (k8s/contract/gpushare.h)
  kTke,       // Tencent's GPUManager (k8s/contract/tke.h)
};

// The profile of a configuration that names none.
inline constexpr Profile kDefaultProfile = Profile::kFracpack;

// "fracpack", "hami", "gpushare", "tke".
std::string_view profile_name(Profile profile);
// Every profile, in the order above, and their names.
const std::vector<Profile>& profiles();
const std::vector<std::string>& profile_names();
// The profile `name` spells; an unknown name is an error listing the known
// ones: unknown profile "x" (known: fracpack, hami, gpushare, tke).
Result<Profile> parse_profile(std::string_view name);

// Whether fracpack's node agent carries out the profile's node side
// (fracpack, and tke, whose record is fracpack's); with the others the
// peer's own device plugin runs on the nodes.
bool node_agent_serves(Profile profile);
// Whether the admission webhook guards the isolation limits of the
// profile's pods: fracpack's only (a peer's plugin decides for its pods).
bool webhook_guards_limits(Profile profile);

}  // namespace fracpack::k8s
