#include "node/isolation.h"

#include <algorithm>

#include "common/text.h"

namespace fracpack::node {

namespace {

using scheduling::CardIsolation;

int64_t memory_of(const scheduling::CardShare& share, const GpuDevice& card) { return share_memory_mib(share, card); }
// Compute in milli: a whole card (or a record without compute) 1000.
int cores_of(const scheduling::CardShare& share) { return share.cores > 0 && share.cores < scheduling::kCardMilli ? share.cores : scheduling::kCardMilli; }

}  // namespace

int64_t share_memory_mib(const scheduling::CardShare& share, const GpuDevice& card) {
  return share.memory_mib > 0 && share.memory_mib < card.memory_mib ? share.memory_mib : card.memory_mib;
}

std::string hami_core_preload_text() { return std::string(k8s::kHamiCoreLibrary) + "\n"; }

std::string hami_core_preload_file(const IsolationOptions& options) { return options.hami_core_dir + "/ld.so.preload"; }

Result<ContainerIsolation> isolate(const Assignment& a, const std::vector<const GpuDevice*>& cards, const k8s::ContainerSettings& settings,
                                   const IsolationOptions& options) {
  const std::string who = "pod " + a.pod_key + " container " + a.container;
  ContainerIsolation out;
  if (cards.empty()) return out;
  out.isolation = cards.front()->isolation;
  for (const GpuDevice* d : cards) {
    if (d->isolation != out.isolation) {
      return Error{who + ": its cards are held to their shares two ways (" + scheduling::isolation_name(out.isolation) + " and " +
                   scheduling::isolation_name(d->isolation) + "); a container gets one limiter: ask cards of one kind"};
    }
  }
  // A share: less than a whole card somewhere (the limiter's part applies).
  bool share = false;
  for (size_t i = 0; i < cards.size(); ++i) {
    share = share || memory_of(a.cards[i], *cards[i]) < cards[i]->memory_mib || cores_of(a.cards[i]) < scheduling::kCardMilli;
  }
  if (const std::string why = k8s::limiter_override(settings, out.isolation, share, options.limiter_paths()); !why.empty()) {
    return Error{who + " lifts its own limit: " + why + " (README, Isolation: a share is a limit)"};
  }
  std::vector<std::string> uuids;
  for (const GpuDevice* d : cards) uuids.push_back(d->uuid);
  if (out.isolation == CardIsolation::kMps) {
    // An MPS client: the daemon's pipe directory and shared memory, and its
    // limits, per visible card in the record's order (CUDA_VISIBLE_DEVICES
    // numbers them: MPS's limits name devices by ordinal).
    out.env["CUDA_MPS_PIPE_DIRECTORY"] = options.mps_pipe_dir();
    out.env["CUDA_VISIBLE_DEVICES"] = join(uuids, ",");
    std::vector<std::string> limits;
    bool limited = false;
    int cores = scheduling::kCardMilli;
    for (size_t i = 0; i < cards.size(); ++i) {
      const int64_t mib = memory_of(a.cards[i], *cards[i]);
      limited = limited || mib < cards[i]->memory_mib;
      limits.push_back(std::to_string(i) + "=" + std::to_string(mib) + "M");
      cores = std::min(cores, cores_of(a.cards[i]));
    }
    if (limited || cores < scheduling::kCardMilli) out.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = join(limits, ",");
    // MPS takes a whole percent; a share of 0.5 % still gets 1 %.
    if (cores < scheduling::kCardMilli) out.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(std::max(1, cores / 10));
    out.mounts.push_back(Mount{options.mps_pipe_dir(), options.mps_pipe_dir(), false});
    out.mounts.push_back(Mount{std::string(k8s::kMpsShmPath), options.mps_shm_dir(), false});
  } else if (out.isolation == CardIsolation::kHamiCore) {
    // As HAMi's device plugin serves it (../shared/reference/isolation.md):
    // the library, preloaded into every process; a cache folder of the
    // container's own, where HAMi-core keeps the usage its processes share.
    for (size_t i = 0; i < cards.size(); ++i) {
      out.env["CUDA_DEVICE_MEMORY_LIMIT_" + std::to_string(i)] = std::to_string(memory_of(a.cards[i], *cards[i])) + "m";
    }
    out.env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(std::max(1, cores_of(a.cards.front()) / 10));  // 0 would be no limit
    out.env["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = std::string(k8s::kHamiCoreDir) + "/" + a.pod_uid + "_" + a.container + ".cache";
    const std::string cache = options.hami_core_dir + "/containers/" + a.pod_uid + "_" + a.container;
    const std::string lock = options.hami_core_dir + "/vgpulock";
    out.host_dirs = {cache, lock};
    out.mounts.push_back(Mount{std::string(k8s::kHamiCoreDir), cache, false});
    out.mounts.push_back(Mount{std::string(k8s::kHamiCoreLibrary), options.hami_core_library, true});
    out.mounts.push_back(Mount{std::string(k8s::kHamiCoreLockDir), lock, false});
    out.mounts.push_back(Mount{std::string(k8s::kLdSoPreload), hami_core_preload_file(options), true});
  }
  return out;
}

}  // namespace fracpack::node
