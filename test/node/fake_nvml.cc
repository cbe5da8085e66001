// A fake libnvidia-ml.so: the NVML functions the node agent binds, answered
// from a text file (FAKE_NVML_CONFIG, read at nvmlInit), so the agent's real
// dlopen path runs against several cards, MIG, an erroring card and a card
// that turns unhealthy. One device per line, ';'-separated key=value:
//
//   driver;version=550.54.15
//   card;uuid=GPU-0;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;minor=0;numa=1
//   card;uuid=GPU-1;...;busid=00000000:3B:00.0      (no numa: the agent reads sysfs)
//   card;uuid=GPU-2;...;mig=1                       (MIG on; instances follow)
//   mig;parent=2;slot=0;uuid=MIG-a;name=...;memory_mib=10240
//   card;uuid=GPU-3;...;error=memory                (nvmlDeviceGetMemoryInfo fails)
//   card;error=handle                               (nvmlDeviceGetHandleByIndex fails)
//   card;...;no_numa_call=1                         (nvmlDeviceGetNumaNodeId unsupported)
//
// Compute modes: FAKE_NVML_COMPUTE_MODES names a file of "uuid=mode" lines
// (the last line of a UUID wins): nvmlDeviceSetComputeMode appends to it,
// nvmlDeviceGetComputeMode reads it (0, DEFAULT, when absent), so a test
// sees what another process set. A card with "compute_mode=denied" refuses
// the change (NO_PERMISSION: not root).
//
// Health: FAKE_NVML_EVENTS names a file read on every nvmlEventSetWait; each
// new line is one event: "xid;uuid=GPU-1;code=79" (an Xid on that card) or
// "lost;uuid=GPU-1" (the card stops answering: its calls fail from then on).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct FakeDevice {
  std::map<std::string, std::string> f;
  std::vector<FakeDevice*> mig;  // by slot (null: empty)
  bool lost = false;
  std::string get(const std::string& k, const std::string& d = "") const {
    auto it = f.find(k);
    return it == f.end() ? d : it->second;
  }
};

std::mutex mu;
std::vector<FakeDevice*> cards;
std::vector<std::unique_ptr<FakeDevice>> all;  // owns every device
std::string driver;
size_t events_seen = 0;
bool initialized = false;

std::map<std::string, std::string> fields(const std::string& line, std::string& kind) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  bool first = true;
  while (start <= line.size()) {
    size_t end = line.find(';', start);
    if (end == std::string::npos) end = line.size();
    std::string item = line.substr(start, end - start);
    if (first) {
      kind = item;
      first = false;
    } else if (auto eq = item.find('='); eq != std::string::npos) {
      out[item.substr(0, eq)] = item.substr(eq + 1);
    }
    start = end + 1;
  }
  return out;
}

FakeDevice* dev(void* h) { return static_cast<FakeDevice*>(h); }

int copy(const std::string& s, char* out, unsigned int len) {
  if (s.size() + 1 > len) return 7;  // INSUFFICIENT_SIZE
  std::memcpy(out, s.c_str(), s.size() + 1);
  return 0;
}

}  // namespace

extern "C" {

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlEventData_t {
  void* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// NVML counts its initialisations: each nvmlInit needs its nvmlShutdown,
// and only the first reads the configuration (two agents in one process
// share the devices, as two NVML clients share the driver).
static int init_count = 0;

__attribute__((visibility("default"))) int nvmlInit_v2() {
  std::lock_guard lock(mu);
  if (init_count > 0) {
    ++init_count;
    return 0;
  }
  const char* path = std::getenv("FAKE_NVML_CONFIG");
  if (path == nullptr) return 9;  // DRIVER_NOT_LOADED
  std::ifstream in(path);
  if (!in) return 9;
  all.clear();
  cards.clear();
  std::string line;
  while (std::getline(in, line)) {
    std::string kind;
    auto f = fields(line, kind);
    if (kind == "driver") {
      driver = f["version"];
    } else if (kind == "card") {
      all.push_back(std::make_unique<FakeDevice>(FakeDevice{f, {}, false}));
      cards.push_back(all.back().get());
    } else if (kind == "mig") {
      all.push_back(std::make_unique<FakeDevice>(FakeDevice{f, {}, false}));
      FakeDevice* d = all.back().get();
      FakeDevice* parent = cards.at(std::stoul(f["parent"]));
      const size_t slot = std::stoul(f["slot"]);
      if (parent->mig.size() <= slot) parent->mig.resize(slot + 1, nullptr);
      parent->mig[slot] = d;
    }
  }
  events_seen = 0;
  initialized = true;
  init_count = 1;
  return 0;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  std::lock_guard lock(mu);
  if (init_count == 0) return 1;  // UNINITIALIZED
  if (--init_count > 0) return 0;
  initialized = false;
  cards.clear();
  all.clear();
  return 0;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  switch (r) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* out, unsigned int len) { return copy(driver, out, len); }

__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int* n) {
  std::lock_guard lock(mu);
  if (!initialized) return 1;
  *n = static_cast<unsigned int>(cards.size());
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** out) {
  std::lock_guard lock(mu);
  if (i >= cards.size()) return 2;
  if (cards[i]->get("error") == "handle") return 999;
  *out = cards[i];
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* h, char* out, unsigned int len) {
  if (dev(h)->lost) return 15;
  return copy(dev(h)->get("uuid"), out, len);
}

__attribute__((visibility("default"))) int nvmlDeviceGetName(void* h, char* out, unsigned int len) {
  if (dev(h)->lost) return 15;
  return copy(dev(h)->get("name", "NVIDIA Fake"), out, len);
}

__attribute__((visibility("default"))) int nvmlDeviceGetMinorNumber(void* h, unsigned int* out) {
  if (!dev(h)->f.count("minor")) return 3;
  *out = static_cast<unsigned int>(std::stoul(dev(h)->get("minor")));
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* h, nvmlMemory_t* m) {
  std::lock_guard lock(mu);
  FakeDevice* d = dev(h);
  if (d->lost) return 15;
  if (d->get("error") == "memory") return 999;
  m->total = std::stoull(d->get("memory_mib", "0")) * 1024 * 1024;
  m->free = m->total;
  m->used = 0;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetPciInfo_v3(void* h, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  const std::string bus = dev(h)->get("busid", "00000000:00:00.0");
  std::strncpy(p->busId, bus.c_str(), sizeof p->busId - 1);
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetNumaNodeId(void* h, unsigned int* out) {
  if (!dev(h)->f.count("numa")) return 3;
  *out = static_cast<unsigned int>(std::stoul(dev(h)->get("numa")));
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMigMode(void* h, unsigned int* current, unsigned int* pending) {
  if (!dev(h)->f.count("mig")) return 3;
  *current = *pending = static_cast<unsigned int>(std::stoul(dev(h)->get("mig")));
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMaxMigDeviceCount(void* h, unsigned int* n) {
  *n = 7;
  (void)h;
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceGetMigDeviceHandleByIndex(void* h, unsigned int i, void** out) {
  FakeDevice* d = dev(h);
  if (i >= d->mig.size() || d->mig[i] == nullptr) return 6;
  *out = d->mig[i];
  return 0;
}

__attribute__((visibility("default"))) int nvmlEventSetCreate(void** set) {
  static int token;
  *set = &token;
  return 0;
}

__attribute__((visibility("default"))) int nvmlEventSetFree(void*) { return 0; }

__attribute__((visibility("default"))) int nvmlDeviceRegisterEvents(void*, unsigned long long, void*) { return 0; }

__attribute__((visibility("default"))) int nvmlEventSetWait_v2(void*, nvmlEventData_t* data, unsigned int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const char* path = std::getenv("FAKE_NVML_EVENTS");
  for (;;) {
    if (path != nullptr) {
      std::lock_guard lock(mu);
      std::ifstream in(path);
      std::string line;
      size_t n = 0;
      while (std::getline(in, line)) {
        if (n++ < events_seen) continue;
        events_seen = n;
        std::string kind;
        auto f = fields(line, kind);
        FakeDevice* target = nullptr;
        for (FakeDevice* c : cards) {
          if (c->get("uuid") == f["uuid"]) target = c;
        }
        if (target == nullptr) continue;
        if (kind == "lost") {
          target->lost = true;
          continue;
        }
        if (kind == "xid") {
          std::memset(data, 0, sizeof *data);
          data->device = target;
          data->eventType = 0x8;
          data->eventData = std::stoull(f["code"]);
          return 0;
        }
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return 10;  // TIMEOUT
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByUUID(const char* uuid, void** out) {
  std::lock_guard lock(mu);
  for (const auto& d : all) {
    if (d->get("uuid") == uuid) {
      *out = d.get();
      return 0;
    }
  }
  return 6;  // NOT_FOUND
}

__attribute__((visibility("default"))) int nvmlDeviceGetComputeMode(void* h, unsigned int* mode) {
  *mode = 0;
  const char* path = std::getenv("FAKE_NVML_COMPUTE_MODES");
  if (path == nullptr) return 0;
  std::ifstream in(path);
  const std::string prefix = dev(h)->get("uuid") + "=";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, prefix.size(), prefix) == 0) *mode = static_cast<unsigned int>(std::stoul(line.substr(prefix.size())));
  }
  return 0;
}

__attribute__((visibility("default"))) int nvmlDeviceSetComputeMode(void* h, unsigned int mode) {
  if (dev(h)->get("compute_mode") == "denied") return 4;  // NO_PERMISSION
  const char* path = std::getenv("FAKE_NVML_COMPUTE_MODES");
  if (path == nullptr) return 3;  // NOT_SUPPORTED
  std::ofstream out(path, std::ios::app);
  out << dev(h)->get("uuid") << "=" << mode << "\n";
  return out ? 0 : 999;
}

}  // extern "C"
