#include "node/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <thread>

namespace fracpack::node {

// The NVML declarations fracpack uses (../shared/reference/node-side.md §B3; go-nvml's
// gen/nvml/nvml.h for the layouts).
extern "C" {
using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;  // bytes
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];  // "00000000:3B:00.0"
};
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
}

namespace {

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kTimeout = 10;
constexpr unsigned int kMigEnable = 1;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXidCritical = 0x8;
constexpr int kMigIndexBase = 64;  // MIG instances: 64 + 8 * card + slot (cards keep 0..63)

template <typename F>
F symbol(void* handle, const char* versioned, const char* plain) {
  void* p = versioned != nullptr ? dlsym(handle, versioned) : nullptr;
  if (p == nullptr && plain != nullptr) p = dlsym(handle, plain);
  return reinterpret_cast<F>(p);
}

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  // Optional.
  nvmlReturn_t (*numa)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*mig_count)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*mig_by_index)(nvmlDevice_t, unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_compute_mode)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*set_compute_mode)(nvmlDevice_t, unsigned int) = nullptr;

  std::string error(nvmlReturn_t r) const {
    const char* s = error_string != nullptr ? error_string(r) : nullptr;
    return (s != nullptr ? std::string(s) : std::string("NVML error")) + " (" + std::to_string(r) + ")";
  }
};

Result<std::unique_ptr<Nvml>> Nvml::open(const std::string& library, std::string sysfs) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{"NVML library " + library + " cannot be loaded: " + (why != nullptr ? why : "dlopen failed") +
                 " (is the NVIDIA driver installed, and the library mounted into the agent?)"};
  }
  auto api = std::make_unique<Api>();
  Api& a = *api;
  a.init = symbol<decltype(a.init)>(handle, "nvmlInit_v2", "nvmlInit");
  a.shutdown = symbol<decltype(a.shutdown)>(handle, nullptr, "nvmlShutdown");
  a.error_string = symbol<decltype(a.error_string)>(handle, nullptr, "nvmlErrorString");
  a.driver_version = symbol<decltype(a.driver_version)>(handle, nullptr, "nvmlSystemGetDriverVersion");
  a.count = symbol<decltype(a.count)>(handle, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  a.by_index = symbol<decltype(a.by_index)>(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  a.uuid = symbol<decltype(a.uuid)>(handle, nullptr, "nvmlDeviceGetUUID");
  a.name = symbol<decltype(a.name)>(handle, nullptr, "nvmlDeviceGetName");
  a.minor = symbol<decltype(a.minor)>(handle, nullptr, "nvmlDeviceGetMinorNumber");
  a.memory = symbol<decltype(a.memory)>(handle, nullptr, "nvmlDeviceGetMemoryInfo");
  a.pci = symbol<decltype(a.pci)>(handle, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo");
  a.numa = symbol<decltype(a.numa)>(handle, nullptr, "nvmlDeviceGetNumaNodeId");
  a.mig_mode = symbol<decltype(a.mig_mode)>(handle, nullptr, "nvmlDeviceGetMigMode");
  a.mig_count = symbol<decltype(a.mig_count)>(handle, nullptr, "nvmlDeviceGetMaxMigDeviceCount");
  a.mig_by_index = symbol<decltype(a.mig_by_index)>(handle, nullptr, "nvmlDeviceGetMigDeviceHandleByIndex");
  a.event_set_create = symbol<decltype(a.event_set_create)>(handle, nullptr, "nvmlEventSetCreate");
  a.event_set_free = symbol<decltype(a.event_set_free)>(handle, nullptr, "nvmlEventSetFree");
  a.register_events = symbol<decltype(a.register_events)>(handle, nullptr, "nvmlDeviceRegisterEvents");
  a.event_wait = symbol<decltype(a.event_wait)>(handle, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  a.by_uuid = symbol<decltype(a.by_uuid)>(handle, nullptr, "nvmlDeviceGetHandleByUUID");
  a.get_compute_mode = symbol<decltype(a.get_compute_mode)>(handle, nullptr, "nvmlDeviceGetComputeMode");
  a.set_compute_mode = symbol<decltype(a.set_compute_mode)>(handle, nullptr, "nvmlDeviceSetComputeMode");

  const std::pair<const void*, const char*> required[] = {
      {reinterpret_cast<const void*>(a.init), "nvmlInit_v2"},
      {reinterpret_cast<const void*>(a.shutdown), "nvmlShutdown"},
      {reinterpret_cast<const void*>(a.count), "nvmlDeviceGetCount_v2"},
      {reinterpret_cast<const void*>(a.by_index), "nvmlDeviceGetHandleByIndex_v2"},
      {reinterpret_cast<const void*>(a.uuid), "nvmlDeviceGetUUID"},
      {reinterpret_cast<const void*>(a.name), "nvmlDeviceGetName"},
      {reinterpret_cast<const void*>(a.memory), "nvmlDeviceGetMemoryInfo"},
  };
  for (const auto& [fn, what] : required) {
    if (fn == nullptr) {
      dlclose(handle);
      return Error{"NVML library " + library + " lacks " + what};
    }
  }
  if (nvmlReturn_t r = a.init(); r != kSuccess) {
    std::string why = a.error(r);
    dlclose(handle);
    return Error{"nvmlInit failed: " + why};
  }
  std::unique_ptr<Nvml> nvml(new Nvml());
  nvml->api_ = std::move(api);
  nvml->handle_ = handle;
  nvml->sysfs_ = std::move(sysfs);
  return nvml;
}

Nvml::~Nvml() {
  if (event_set_ != nullptr && api_->event_set_free != nullptr) api_->event_set_free(static_cast<nvmlEventSet_t>(event_set_));
  if (api_ != nullptr) api_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

namespace {

// HAMi's GetNumaNode: the PCI bus id, lower case, 4-digit domain, then
// <sysfs>/bus/pci/devices/<id>/numa_node; -1 (no NUMA) reads as 0.
int numa_from_sysfs(const std::string& sysfs, const char* bus_id) {
  std::string id(bus_id);
  if (id.size() > 12 && id.compare(0, 4, "0000") == 0) id = id.substr(4);
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::ifstream in(sysfs + "/bus/pci/devices/" + id + "/numa_node");
  int numa = -1;
  if (!(in >> numa) || numa < 0) return 0;
  return numa;
}

}  // namespace

Result<Discovery> Nvml::discover() {
  const Api& a = *api_;
  Discovery out;
  if (a.driver_version != nullptr) {
    char buf[96] = {};
    if (a.driver_version(buf, sizeof buf) == kSuccess) out.driver_version = buf;
  }
  unsigned int count = 0;
  if (nvmlReturn_t r = a.count(&count); r != kSuccess) return Error{"nvmlDeviceGetCount: " + a.error(r)};
  if (count > kMigIndexBase) return Error{"NVML reports " + std::to_string(count) + " cards; at most 64 are supported"};

  std::vector<std::pair<void*, std::string>> watched;
  // Reads the fields of one device (a card or a MIG instance); a field NVML
  // cannot read makes the device unhealthy, with the call and error named.
  auto describe = [&](nvmlDevice_t dev, GpuDevice& d) {
    auto failed = [&](const char* call, nvmlReturn_t r) {
      if (d.healthy) d.problem = std::string(call) + ": " + a.error(r);
      d.healthy = false;
    };
    char buf[96] = {};
    if (nvmlReturn_t r = a.uuid(dev, buf, sizeof buf); r != kSuccess) {
      failed("nvmlDeviceGetUUID", r);
    } else {
      d.uuid = buf;
    }
    char name[96] = {};
    if (nvmlReturn_t r = a.name(dev, name, sizeof name); r != kSuccess) {
      failed("nvmlDeviceGetName", r);
    } else {
      d.model = name;
    }
    nvmlMemory_t mem{};
    if (nvmlReturn_t r = a.memory(dev, &mem); r != kSuccess) {
      failed("nvmlDeviceGetMemoryInfo", r);
    } else {
      d.memory_mib = static_cast<int64_t>(mem.total / (1024 * 1024));
    }
  };

  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    GpuDevice card;
    card.index = static_cast<int>(i);
    if (nvmlReturn_t r = a.by_index(i, &dev); r != kSuccess) {
      card.healthy = false;
      card.problem = "nvmlDeviceGetHandleByIndex: " + a.error(r);
      out.devices.push_back(std::move(card));
      continue;
    }
    describe(dev, card);
    if (a.minor != nullptr) {
      unsigned int minor = 0;
      if (a.minor(dev, &minor) == kSuccess) card.minor = static_cast<int>(minor);
    }
    unsigned int numa = 0;
    if (a.numa != nullptr && a.numa(dev, &numa) == kSuccess) {
      card.numa = static_cast<int>(numa);
    } else if (a.pci != nullptr) {
      nvmlPciInfo_t pci{};
      if (a.pci(dev, &pci) == kSuccess) card.numa = numa_from_sysfs(sysfs_, pci.busId);
    }

    unsigned int current = 0, pending = 0;
    const bool mig = a.mig_mode != nullptr && a.mig_count != nullptr && a.mig_by_index != nullptr &&
                     a.mig_mode(dev, &current, &pending) == kSuccess && current == kMigEnable;
    if (!mig) {
      if (!card.uuid.empty()) watched.emplace_back(dev, card.uuid);
      out.devices.push_back(std::move(card));
      continue;
    }
    // MIG on: the instances are the devices; the card itself is not.
    unsigned int slots = 0;
    if (nvmlReturn_t r = a.mig_count(dev, &slots); r != kSuccess) {
      card.healthy = false;
      card.problem = "nvmlDeviceGetMaxMigDeviceCount: " + a.error(r);
      out.devices.push_back(std::move(card));
      continue;
    }
    for (unsigned int s = 0; s < slots && s < 8; ++s) {
      nvmlDevice_t inst = nullptr;
      nvmlReturn_t r = a.mig_by_index(dev, s, &inst);
      if (r == kNotFound) continue;  // an empty slot
      GpuDevice d;
      d.index = kMigIndexBase + 8 * card.index + static_cast<int>(s);
      d.numa = card.numa;
      d.parent_uuid = card.uuid;
      if (r != kSuccess) {
        d.healthy = false;
        d.problem = "nvmlDeviceGetMigDeviceHandleByIndex: " + a.error(r);
      } else {
        describe(inst, d);
      }
      if (!card.healthy && d.healthy) {  // an instance of a card NVML cannot read is not usable either
        d.healthy = false;
        d.problem = "its card " + card.uuid + ": " + card.problem;
      }
      out.devices.push_back(std::move(d));
    }
    if (!card.uuid.empty()) watched.emplace_back(dev, card.uuid);  // events arrive on the card
  }

  // Health events on the devices just read.
  if (a.event_set_create != nullptr && a.register_events != nullptr && a.event_wait != nullptr) {
    if (event_set_ != nullptr && a.event_set_free != nullptr) a.event_set_free(static_cast<nvmlEventSet_t>(event_set_));
    event_set_ = nullptr;
    nvmlEventSet_t set = nullptr;
    if (a.event_set_create(&set) == kSuccess) {
      event_set_ = set;
      for (const auto& w : watched) a.register_events(static_cast<nvmlDevice_t>(w.first), kEventXidCritical | kEventDoubleBitEcc, set);
    }
  }
  watched_ = std::move(watched);
  return out;
}

std::vector<HealthEvent> Nvml::wait_health(std::chrono::milliseconds timeout) {
  const Api& a = *api_;
  std::vector<HealthEvent> out;
  // Application Xids (NVIDIA k8s-device-plugin's skip list): the card is fine.
  static const std::set<unsigned long long> kApplicationXids = {13, 31, 43, 45, 68, 109};
  if (event_set_ != nullptr) {
    nvmlEventData_t data{};
    nvmlReturn_t r = a.event_wait(static_cast<nvmlEventSet_t>(event_set_), &data, static_cast<unsigned int>(timeout.count()));
    if (r == kSuccess) {
      const bool xid = (data.eventType & kEventXidCritical) != 0;
      if (!(xid && kApplicationXids.count(data.eventData) > 0)) {
        const std::string problem = xid ? "Xid " + std::to_string(data.eventData) : "double-bit ECC error";
        for (const auto& w : watched_) {
          // An event without a device is about every device.
          if (data.device == nullptr || w.first == static_cast<void*>(data.device)) out.push_back({w.second, problem});
        }
      }
    } else if (r != kTimeout) {
      out.push_back({"", "nvmlEventSetWait: " + a.error(r)});
    }
  } else {
    std::this_thread::sleep_for(timeout);  // no events: poll the devices at this pace
  }
  // A device that stops answering is unhealthy too (no event may come).
  for (const auto& w : watched_) {
    nvmlMemory_t mem{};
    if (nvmlReturn_t r = a.memory(static_cast<nvmlDevice_t>(w.first), &mem); r != kSuccess) {
      out.push_back({w.second, "nvmlDeviceGetMemoryInfo: " + a.error(r)});
    }
  }
  return out;
}

Result<int> Nvml::compute_mode(const std::string& uuid) {
  Api& a = *api_;
  if (a.by_uuid == nullptr || a.get_compute_mode == nullptr) return Error{"this NVML cannot read compute modes"};
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = a.by_uuid(uuid.c_str(), &dev); r != kSuccess) return Error{"nvmlDeviceGetHandleByUUID(" + uuid + "): " + a.error(r)};
  unsigned int mode = 0;
  if (nvmlReturn_t r = a.get_compute_mode(dev, &mode); r != kSuccess) return Error{"nvmlDeviceGetComputeMode(" + uuid + "): " + a.error(r)};
  return static_cast<int>(mode);
}

Status Nvml::set_compute_mode(const std::string& uuid, int mode) {
  Api& a = *api_;
  if (a.by_uuid == nullptr || a.set_compute_mode == nullptr) return Error{"this NVML cannot set compute modes"};
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = a.by_uuid(uuid.c_str(), &dev); r != kSuccess) return Error{"nvmlDeviceGetHandleByUUID(" + uuid + "): " + a.error(r)};
  if (nvmlReturn_t r = a.set_compute_mode(dev, static_cast<unsigned int>(mode)); r != kSuccess) {
    return Error{"nvmlDeviceSetComputeMode(" + uuid + ", " + std::to_string(mode) + "): " + a.error(r) +
                 (r == 4 ? " (it needs root: run fracpack mps-control-daemon privileged)" : "")};
  }
  return Status::Ok();
}

}  // namespace fracpack::node
