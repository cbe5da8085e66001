#include "k8s/limiter_guard.h"

#include <algorithm>
#include <array>

namespace fracpack::k8s {

namespace {

using scheduling::CardIsolation;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The variable families each limiter reads: a name is guarded when it
// starts with one of them.
struct Family {
  std::string_view prefix;
  const char* why;
};
constexpr std::array<Family, 1> kCardAccessVariables{{
    {"NVIDIA_VISIBLE_DEVICES", "the NVIDIA runtime would give the container the cards it names, not the ones its record names"},
}};
constexpr std::array<Family, 2> kMpsVariables{{
    {"CUDA_MPS_", "MPS's pipe directory and limits are the node agent's to set"},
    {"CUDA_VISIBLE_DEVICES", "MPS's memory limits name the cards by their order in it"},
}};
constexpr std::array<Family, 6> kHamiCoreVariables{{
    {"CUDA_DEVICE_", "HAMi-core's memory and compute limits are the node agent's to set"},
    {"CUDA_DISABLE_CONTROL", "it turns HAMi-core's limits off"},
    {"CUDA_OVERSUBSCRIBE", "it lets HAMi-core hand out more memory than the share"},
    {"GPU_CORE_UTILIZATION_POLICY", "it turns HAMi-core's compute limit off"},
    {"LD_PRELOAD", "a library preloaded before HAMi-core's can take the CUDA calls it limits"},
    {"LD_AUDIT", "an audit library can redirect the CUDA calls HAMi-core limits"},
}};

template <size_t N>
std::string variable_override(const ContainerSettings& c, const std::array<Family, N>& families) {
  for (const std::string& name : c.env) {
    for (const Family& f : families) {
      if (starts_with(name, f.prefix)) return "env " + name + ": " + f.why;
    }
  }
  // envFrom's keys are not in the pod. A prefix that names a guarded
  // family ("CUDA_MPS_", "CUDA_") is a declared override; none at all is
  // how most ConfigMaps are read, and refusing it would refuse ordinary
  // pods for what a container can do anyway (set its own environment
  // in-process: README "Security model" says what the limit holds against).
  for (const std::string& prefix : c.env_from) {
    if (prefix.empty()) continue;
    for (const Family& f : families) {
      if (starts_with(f.prefix, prefix) || starts_with(prefix, f.prefix)) {
        return "envFrom with prefix " + prefix + ": its keys could set " + std::string(f.prefix) + "... (" + f.why +
               "); give it a prefix of your own";
      }
    }
  }
  return {};
}

// A mount at `path` hides `guarded` when it is that path or inside it (a
// mount above it is made first and cannot: runtimes mount by depth). Both
// as the runtime cleans them ("/etc/./ld.so.preload" is /etc/ld.so.preload).
bool covers(std::string_view raw_path, std::string_view raw_guarded) {
  const std::string path = clean_mount_path(raw_path), guarded = clean_mount_path(raw_guarded);
  return path == guarded || (starts_with(path, guarded) && path.size() > guarded.size() && path[guarded.size()] == '/');
}

std::string mount_override(const ContainerSettings& c, std::string_view guarded, const char* what) {
  for (const std::string& path : c.mount_paths) {
    if (covers(path, guarded)) return "volumeMounts " + path + ": it would hide " + what + " (" + std::string(guarded) + ")";
  }
  return {};
}

}  // namespace

std::string clean_mount_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    const size_t j = std::min(path.find('/', i), path.size());
    const std::string_view part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (std::string_view p : parts) out += "/" + std::string(p);
  return out.empty() ? "/" : out;
}

std::string limiter_override(const ContainerSettings& c, CardIsolation limiter, bool share, const LimiterPaths& paths) {
  std::string why;
  if (!(why = variable_override(c, kCardAccessVariables)).empty()) return why;
  if (!share) return {};
  if (limiter == CardIsolation::kMps) {
    if (!(why = variable_override(c, kMpsVariables)).empty()) return why;
    if (!(why = mount_override(c, paths.mps_pipe_dir, "the MPS daemon's pipe directory")).empty()) return why;
    // MPS clients find the daemon's shared memory at /dev/shm.
    if (!(why = mount_override(c, kMpsShmPath, "the MPS daemon's shared memory (an MPS client cannot have its own /dev/shm)")).empty()) return why;
  }
  if (limiter == CardIsolation::kHamiCore) {
    if (!(why = variable_override(c, kHamiCoreVariables)).empty()) return why;
    for (std::string_view guarded : {kHamiCoreDir, kLdSoPreload, kHamiCoreLockDir}) {
      if (!(why = mount_override(c, guarded, "HAMi-core's library or its state")).empty()) return why;
    }
  }
  return {};
}

}  // namespace fracpack::k8s
