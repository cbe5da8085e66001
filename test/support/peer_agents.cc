#include "test/support/peer_agents.h"

#include "k8s/contract/kubernetes_rules.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

namespace fracpack::testing {

using nlohmann::json;

std::string annotation_of(const json& object, const std::string& key) {
  const json a = object.value("metadata", json::object()).value("annotations", json::object());
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : std::string();
}

namespace {

bool has_annotation(const json& pod, const std::string& key) {
  return pod["metadata"].value("annotations", json::object()).contains(key);
}
std::string key_of(const json& pod) {
  return pod["metadata"].value("namespace", "") + "/" + pod["metadata"].value("name", "");
}
std::string phase_of(const json& pod) { return pod.value("status", json::object()).value("phase", ""); }
std::string node_of(const json& pod) { return pod.value("spec", json::object()).value("nodeName", ""); }

// Go's strconv.Atoi: the whole string, optional sign, decimal digits.
std::optional<int64_t> go_atoi(const std::string& s) {
  int64_t v = 0;
  const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Go's strings.Split.
std::vector<std::string> split(const std::string& s, char sep) {
  const auto fields = split_fields(s, sep);
  return {fields.begin(), fields.end()};
}

void set_annotations(FakeApiServer& api, const json& pod, const std::map<std::string, std::string>& values) {
  api.update("pods", pod["metadata"]["namespace"], pod["metadata"]["name"], [&](const std::string& text) {
    json p = json::parse(text);
    for (const auto& [k, v] : values) p["metadata"]["annotations"][k] = v;
    return p.dump();
  });
}

// HAMi's DecodePodDevices on one annotation, positional: entry i is
// spec.containers[i] (empty entries kept here so the eraser can rewrite).
struct HamiDevice {
  std::string uuid;
  int64_t mem = 0;
  int cores = 0;
};
std::vector<std::vector<HamiDevice>> hami_decode(const std::string& text) {
  std::vector<std::vector<HamiDevice>> out;
  std::vector<std::string> parts = split(text, ';');
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // the trailing ";"
  for (const std::string& part : parts) {
    std::vector<HamiDevice> ctr;
    for (const std::string& dev : split(part, ':')) {
      if (dev.empty()) continue;
      auto f = split(dev, ',');
      if (f.size() < 4) throw std::runtime_error("pod annotation format error: " + dev);
      auto mem = go_atoi(f[2]);
      auto cores = go_atoi(f[3]);
      if (!mem || !cores) throw std::runtime_error("pod annotation format error: " + dev);
      ctr.push_back({f[0].substr(0, f[0].find('[')), *mem, static_cast<int>(*cores)});
    }
    out.push_back(std::move(ctr));
  }
  return out;
}
std::string hami_encode(const std::vector<std::vector<HamiDevice>>& ctrs) {
  std::string out;
  for (const auto& c : ctrs) {
    for (const auto& d : c) out += d.uuid + ",NVIDIA," + std::to_string(d.mem) + "," + std::to_string(d.cores) + ":";
    out += ";";
  }
  return out;
}

}  // namespace

namespace {

// ReleaseNodeLock with the owner check: only if the lock names this pod.
void hami_release_lock(FakeApiServer& api, const std::string& node, const json& pod) {
  const std::string suffix = "," + pod["metadata"].value("namespace", "") + "," + pod["metadata"].value("name", "");
  api.update("nodes", "", node, [&](const std::string& text) {
    json n = json::parse(text);
    const std::string lock = annotation_of(n, "hami.io/mutex.lock");
    if (lock.size() >= suffix.size() && lock.compare(lock.size() - suffix.size(), suffix.size(), suffix) == 0) {
      n["metadata"]["annotations"].erase("hami.io/mutex.lock");
    }
    return n.dump();
  });
}

}  // namespace

Result<HamiAllocation> hami_allocate(FakeApiServer& api, const std::string& node, const std::vector<int>& counts) {
  // util.GetPendingPod: the node lock's pod first, else the first pending
  // allocating pod on the node.
  json pod;
  if (auto n = api.get("nodes", "", node)) {
    const std::string lock = annotation_of(json::parse(*n), "hami.io/mutex.lock");
    auto parts = split(lock, ',');
    if (parts.size() == 3) {
      if (auto p = api.get("pods", parts[1], parts[2])) pod = json::parse(*p);
    }
  }
  if (pod.is_null()) {
    for (const std::string& text : api.pods_on(node)) {  // pods listed with spec.nodeName=<node>
      json p = json::parse(text);
      if (node_of(p) == node && phase_of(p) == "Pending" && has_annotation(p, "hami.io/bind-time") &&
          annotation_of(p, "hami.io/bind-phase") == "allocating" && annotation_of(p, "hami.io/vgpu-node") == node) {
        pod = std::move(p);
        break;
      }
    }
  }
  if (pod.is_null()) return Error{"no pending pod on node " + node + " is allocating"};
  HamiAllocation out;
  out.pod = key_of(pod);
  for (int count : counts) {
    // GetNextDeviceRequest: the first non-empty container entry.
    auto ctrs = hami_decode(annotation_of(pod, "hami.io/vgpu-devices-to-allocate"));
    auto next = std::find_if(ctrs.begin(), ctrs.end(), [](const auto& c) { return !c.empty(); });
    if (next == ctrs.end()) return Error{out.pod + ": no device request left"};
    if (static_cast<int>(next->size()) != count) {
      set_annotations(api, pod, {{"hami.io/bind-phase", "failed"}});  // PodAllocationFailed: and the lock goes
      hami_release_lock(api, node, pod);
      return Error{out.pod + ": device number not matched (" + std::to_string(next->size()) + " in the annotation, " +
                   std::to_string(count) + " asked)"};
    }
    std::vector<std::string> uuids;
    std::vector<int64_t> mems;
    for (const auto& d : *next) {
      uuids.push_back(d.uuid);
      mems.push_back(d.mem);
    }
    out.devices.push_back(std::move(uuids));
    out.memory_mib.push_back(std::move(mems));
    next->clear();  // EraseNextDeviceTypeFromAnnotation
    set_annotations(api, pod, {{"hami.io/vgpu-devices-to-allocate", hami_encode(ctrs)}});
    pod = json::parse(*api.get("pods", pod["metadata"]["namespace"], pod["metadata"]["name"]));
  }
  // PodAllocationTrySuccess
  if (annotation_of(pod, "hami.io/vgpu-devices-to-allocate").find("NVIDIA") == std::string::npos) {
    set_annotations(api, pod, {{"hami.io/bind-phase", "success"}});
    hami_release_lock(api, node, pod);
  }
  return out;
}

std::map<std::pair<std::string, std::string>, HamiCardUse> hami_scheduler_usage(const FakeApiServer& api) {
  std::map<std::pair<std::string, std::string>, HamiCardUse> out;
  for (const std::string& text : api.list("pods")) {
    json p = json::parse(text);
    if (!has_annotation(p, "hami.io/vgpu-node")) continue;
    if (phase_of(p) == "Succeeded" || phase_of(p) == "Failed") continue;
    const std::string node = annotation_of(p, "hami.io/vgpu-node");
    for (const auto& ctr : hami_decode(annotation_of(p, "hami.io/vgpu-devices-allocated"))) {
      for (const auto& d : ctr) {
        HamiCardUse& u = out[{node, d.uuid}];
        u.shares += 1;
        u.memory_mib += d.mem;
        u.cores += d.cores;
      }
    }
  }
  return out;
}

namespace {

int64_t gpushare_total(const json& pod) {
  int64_t total = 0;
  for (const json& c : pod["spec"].value("containers", json::array())) {
    const json limits = c.value("resources", json::object()).value("limits", json::object());
    if (limits.contains("aliyun.com/gpu-mem")) total += go_atoi(limits["aliyun.com/gpu-mem"].get<std::string>()).value_or(0);
  }
  return total;
}

}  // namespace

Result<GpushareAllocation> gpushare_allocate(FakeApiServer& api, const std::string& node, int64_t units) {
  std::vector<json> candidates;
  for (const std::string& text : api.pods_on(node)) {  // pods listed with spec.nodeName=<node>
    json p = json::parse(text);
    if (node_of(p) != node || phase_of(p) != "Pending") continue;
    if (gpushare_total(p) <= 0 || !has_annotation(p, "ALIYUN_COM_GPU_MEM_ASSUME_TIME") ||
        annotation_of(p, "ALIYUN_COM_GPU_MEM_ASSIGNED") != "false") {
      continue;
    }
    candidates.push_back(std::move(p));
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const json& a, const json& b) {
    return go_atoi(annotation_of(a, "ALIYUN_COM_GPU_MEM_ASSUME_TIME")).value_or(0) <
           go_atoi(annotation_of(b, "ALIYUN_COM_GPU_MEM_ASSUME_TIME")).value_or(0);
  });
  for (const json& p : candidates) {
    if (gpushare_total(p) != units) continue;
    GpushareAllocation out{key_of(p), static_cast<int>(go_atoi(annotation_of(p, "ALIYUN_COM_GPU_MEM_IDX")).value_or(-1))};
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
    set_annotations(api, p, {{"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}, {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", std::to_string(now.count())}});
    return out;
  }
  return Error{"invalid allocation request: request GPU memory " + std::to_string(units) + " can't be satisfied on " + node};
}

std::map<std::pair<std::string, int>, int64_t> gpushare_extender_usage(const FakeApiServer& api) {
  std::map<std::pair<std::string, int>, int64_t> out;
  for (const std::string& text : api.list("pods")) {
    json p = json::parse(text);
    if (node_of(p).empty() || phase_of(p) == "Succeeded" || phase_of(p) == "Failed") continue;
    const int64_t pod_units = go_atoi(annotation_of(p, "ALIYUN_COM_GPU_MEM_POD")).value_or(0);  // an Atoi error: 0
    if (pod_units <= 0) continue;
    const int64_t idx = go_atoi(annotation_of(p, "ALIYUN_COM_GPU_MEM_IDX")).value_or(-1);
    // addOrUpdatePod skips an index outside [0, gpu-count).
    int64_t count = 0;
    if (auto n = api.get("nodes", "", node_of(p))) {
      const json cap = json::parse(*n).value("status", json::object()).value("capacity", json::object());
      if (cap.contains("aliyun.com/gpu-count")) count = go_atoi(cap["aliyun.com/gpu-count"].get<std::string>()).value_or(0);
    }
    if (idx < 0 || idx >= count) continue;
    out[{node_of(p), static_cast<int>(idx)}] += pod_units;
  }
  return out;
}

}  // namespace fracpack::testing
