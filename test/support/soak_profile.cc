#include "test/support/soak_profile.h"

#include <functional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "k8s/contract/profiles.h"
#include "test/support/cluster_harness.h"
#include "test/support/peer_agents.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;

// kubelet's Allocate for each pod bound to `node` whose annotation `key`
// says the node agent has not served it yet; how many were served.
size_t admit_waiting(FakeApiServer& api, const std::string& node, const std::string& key, const std::string& waiting,
                     const std::function<bool(const json& pod)>& allocate) {
  size_t served = 0;
  for (const std::string& text : api.pods_on(node)) {
    const json p = json::parse(text);
    if (annotation_of(p, key) == waiting && allocate(p)) ++served;
  }
  return served;
}

std::shared_ptr<const k8s::Contract> contract_of(const std::string& profile) {
  k8s::ContractConfig cc;
  auto named = k8s::parse_profile(profile);
  if (!named) throw std::invalid_argument(named.message());
  cc.profile = *named;
  auto made = k8s::make_contract(cc);
  if (!made) throw std::invalid_argument(made.message());
  return *made;
}

class FracpackSoak : public SoakProfile {
 public:
  explicit FracpackSoak(int64_t card_mib) : SoakProfile("fracpack", card_mib) {}
  std::string node(const std::string& name, int cards) const override { return node_object(name, cards, card_mib_); }
  std::string fixed_record(const json& pod) const override { return annotation_of(pod, "fracpack.io/allocation"); }

 protected:
  json gpu_limits(int cores, int64_t memory_mib, int cards) const override {
    json limits = json::object();
    if (cores == 0 && memory_mib == 0) {
      limits["fracpack.io/gpu"] = std::to_string(cards);
      return limits;
    }
    if (cards != 1) limits["fracpack.io/gpu"] = std::to_string(cards);
    if (cores > 0) limits["fracpack.io/gpu-cores"] = std::to_string(cores);
    if (memory_mib > 0) limits["fracpack.io/gpu-memory"] = std::to_string(memory_mib);
    return limits;
  }
};

// HAMi's device plugin registration (split count 10) and resources; a
// whole card is nvidia.com/gpu alone (all its memory), exclusive compute
// gpucores 100.
class HamiSoak : public SoakProfile {
 public:
  explicit HamiSoak(int64_t card_mib) : SoakProfile("hami", card_mib) {}
  std::string config_keys() const override {
    // HAMi's lock is taken; a lock left by a bind whose answer was lost
    // expires after a second (HAMi's default is five minutes).
    return "contract:\n  profile: hami\n  hami:\n    nodeLockExpire: 1s\n";
  }
  std::string node(const std::string& name, int cards) const override {
    json devices = json::array();
    for (int i = 0; i < cards; ++i) {
      devices.push_back({{"id", "GPU-" + name + "-" + std::to_string(i)}, {"index", i}, {"count", 10}, {"devmem", card_mib_},
                         {"devcore", 100}, {"type", "NVIDIA-Tesla T4"}, {"health", true}});
    }
    return peer_node_json(name, {{"hami.io/node-nvidia-register", devices.dump()}}, {{"nvidia.com/gpu", std::to_string(cards * 10)}});
  }
  std::string fixed_record(const json& pod) const override {
    return annotation_of(pod, "hami.io/vgpu-node") + " " + annotation_of(pod, "hami.io/vgpu-devices-allocated");
  }
  size_t admit(FakeApiServer& api, const std::string& node) const override {
    // One Allocate per pod still "allocating"; HAMi's plugin picks the pod
    // itself (the lock's, else the first allocating one).
    return admit_waiting(api, node, "hami.io/bind-phase", "allocating", [&](const json& p) {
      return hami_allocate(api, node, {static_cast<int>(first_container_limit(p, "nvidia.com/gpu"))}).ok();
    });
  }

 protected:
  json gpu_limits(int cores, int64_t memory_mib, int cards) const override {
    json limits = {{"nvidia.com/gpu", std::to_string(cards)}};
    if (cores > 0) limits["nvidia.com/gpucores"] = std::to_string(cores);
    if (memory_mib > 0) limits["nvidia.com/gpumem"] = std::to_string(memory_mib);
    return limits;
  }
};

// gpushare's capacity (GiB) and one card per pod: a pod asks memory only
// (a whole card or exclusive compute: all of it; two half cards: half of one).
class GpushareSoak : public SoakProfile {
 public:
  explicit GpushareSoak(int64_t card_mib) : SoakProfile("gpushare", card_mib) {}
  std::string config_keys() const override { return "contract:\n  profile: gpushare\n"; }
  std::string node(const std::string& name, int cards) const override {
    return peer_node_json(name, json::object(),
                          {{"aliyun.com/gpu-mem", std::to_string(cards * card_gib())}, {"aliyun.com/gpu-count", std::to_string(cards)}});
  }
  std::string fixed_record(const json& pod) const override {
    return annotation_of(pod, "ALIYUN_COM_GPU_MEM_IDX") + " " + annotation_of(pod, "ALIYUN_COM_GPU_MEM_POD") + " " +
           annotation_of(pod, "ALIYUN_COM_GPU_MEM_DEV");
  }
  size_t admit(FakeApiServer& api, const std::string& node) const override {
    return admit_waiting(api, node, "ALIYUN_COM_GPU_MEM_ASSIGNED", "false", [&](const json& p) {
      return gpushare_allocate(api, node, first_container_limit(p, "aliyun.com/gpu-mem")).ok();
    });
  }

 protected:
  json gpu_limits(int cores, int64_t memory_mib, int cards) const override {
    (void)cores, (void)cards;  // memory alone, on one card
    return {{"aliyun.com/gpu-mem", std::to_string(memory_mib > 0 ? memory_mib / 1024 : card_gib())}};
  }

 private:
  int64_t card_gib() const { return card_mib_ / 1024; }  // gpushare counts GiB
};

}  // namespace

std::string peer_node_json(const std::string& name, const json& annotations, const json& resources) {
  json res = {{"cpu", "64"}, {"memory", "256Gi"}, {"pods", "110"}};
  for (auto it = resources.begin(); it != resources.end(); ++it) res[it.key()] = it.value();
  json meta = {{"name", name}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  return json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", meta}, {"status", {{"capacity", res}, {"allocatable", res}}}}.dump();
}

int64_t first_container_limit(const json& pod, const std::string& resource) {
  const json limits = pod["spec"]["containers"][0].value("resources", json::object()).value("limits", json::object());
  return limits.contains(resource) ? std::stoll(limits[resource].get<std::string>()) : 0;
}

std::map<std::pair<std::string, std::string>, HamiCardUse> ledger_as_hami_usage(server::Daemon& d) {
  std::map<std::pair<std::string, std::string>, HamiCardUse> out;
  for (const auto& [n, cards] : ledger_cards(d)) {
    for (const LedgerCard& k : cards) {
      if (k.sharers > 0) out[{n, k.uuid}] = HamiCardUse{k.sharers, k.memory_mib, k.cores / 10};
    }
  }
  return out;
}

std::map<std::pair<std::string, int>, int64_t> ledger_as_gpushare_usage(server::Daemon& d) {
  std::map<std::pair<std::string, int>, int64_t> out;
  for (const auto& [n, cards] : ledger_cards(d)) {
    for (const LedgerCard& k : cards) {
      if (k.memory_mib > 0) out[{n, k.index}] = k.memory_mib / 1024;
    }
  }
  return out;
}

SoakProfile::SoakProfile(std::string name, int64_t card_mib) : card_mib_(card_mib), name_(name), contract_(contract_of(name)) {}

std::string SoakProfile::config_keys() const { return ""; }

std::vector<CandidateNode> SoakProfile::create_nodes(FakeApiServer& api, int count, int cards) const {
  std::vector<CandidateNode> out;
  for (int n = 0; n < count; ++n) {
    out.push_back({"node-" + std::to_string(n), ""});
    api.create("nodes", node(out.back().name, cards));
  }
  return out;
}

std::unique_ptr<SoakProfile> SoakProfile::make(const std::string& name, int64_t card_mib) {
  if (name == "fracpack") return std::make_unique<FracpackSoak>(card_mib);
  if (name == "hami") return std::make_unique<HamiSoak>(card_mib);
  if (name == "gpushare") return std::make_unique<GpushareSoak>(card_mib);
  throw std::invalid_argument("no soak profile \"" + name + "\"");
}

std::string SoakProfile::create_random_pod(FakeApiServer& api, uint64_t& serial, std::mt19937_64& rng, const std::string& ns) const {
  const std::string name = "p" + std::to_string(serial++);
  int cores = 0, cards = 1;
  int64_t memory = 0;
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0: cards = 1; break;                             // a whole card
    case 1: cards = 2; cores = 50; memory = 8192; break;  // 2 x half
    case 2: cores = 100; break;                           // exclusive compute
    case 3: cores = 25; memory = 4096; break;
    case 4: cores = 10; memory = 1024; break;
    case 5: cores = 75; memory = 12288; break;
    default: cores = 50; memory = 8192; break;
  }
  json limits = gpu_limits(cores, memory, cards);
  limits["cpu"] = "1";
  const json meta = {{"name", name}, {"namespace", ns}, {"uid", "u-" + name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}};
  const json spec = {{"schedulerName", "fracpack"},
                     {"containers", {{{"name", "main"}, {"image", "busybox"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}};
  api.create("pods", json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}, {"status", {{"phase", "Pending"}}}}.dump());
  return name;
}

}  // namespace fracpack::testing
