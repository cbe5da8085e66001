#include "k8s/contract/profile.h"

namespace fracpack::k8s {

std::string_view profile_name(Profile profile) {
  switch (profile) {
    case Profile::kFracpack: return "fracpack";
    case Profile::kHami: return "hami";
    case Profile::kGpushare: return "gpushare";
    case Profile::kTke: return "tke";
  }
  return "?";
}

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> all = {Profile::kFracpack, Profile::kHami, Profile::kGpushare, Profile::kTke};
  return all;
}

const std::vector<std::string>& profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (Profile p : profiles()) out.emplace_back(profile_name(p));
    return out;
  }();
  return names;
}

Result<Profile> parse_profile(std::string_view name) {
  for (Profile p : profiles()) {
    if (name == profile_name(p)) return p;
  }
  std::string known;
  for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown profile \"" + std::string(name) + "\" (known: " + known + ")"};
}

bool node_agent_serves(Profile profile) { return profile == Profile::kFracpack || profile == Profile::kTke; }

bool webhook_guards_limits(Profile profile) { return profile == Profile::kFracpack; }

}  // namespace fracpack::k8s
