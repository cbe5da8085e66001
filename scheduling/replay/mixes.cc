#include "scheduling/replay/mixes.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <utility>

#include "scheduling/go_rand.h"

namespace fracpack::replay {
namespace {

struct KindName {
  MixStep::Kind kind;
  std::string_view prefix;
  int max_percent;
};
constexpr KindName kKinds[] = {
    {MixStep::Kind::kMultigpu, "multigpu", 99},
    {MixStep::Kind::kGpushare, "gpushare", 100},
    {MixStep::Kind::kGpuspec, "gpuspec", 100},
    {MixStep::Kind::kCpu, "cpu", 200},
};

bool is_share(const OpenbPod& p) { return p.num_gpu == 1 && p.gpu_milli > 0 && p.gpu_milli < 1000; }
bool is_whole(const OpenbPod& p) { return p.num_gpu >= 1 && p.gpu_milli >= 1000; }
bool is_multi(const OpenbPod& p) { return p.num_gpu > 1 && p.gpu_milli > 0; }
bool is_gpu(const OpenbPod& p) { return p.gpu_request() > 0; }

int64_t total_request(const std::vector<OpenbPod>& pods) {
  int64_t t = 0;
  for (const OpenbPod& p : pods) t += p.gpu_request();
  return t;
}

template <class Pred>
std::vector<OpenbPod> pool_of(std::span<const OpenbPod> pods, Pred pred) {
  std::vector<OpenbPod> out;
  for (const OpenbPod& p : pods) {
    if (pred(p)) out.push_back(p);
  }
  return out;
}

const OpenbPod& draw(GoRand& rng, const std::vector<OpenbPod>& pool) {
  return pool[static_cast<size_t>(rng.Intn(static_cast<int>(pool.size())))];
}

// More CPU-only pods (or fewer): the base's GPU pods, then CPU-only pods drawn
// from the base's until their CPU request reaches the share of the nodes' CPU.
Result<std::vector<OpenbPod>> cpu_step(const MixInputs& in, std::vector<OpenbPod> pods, int percent, GoRand& rng) {
  const std::vector<OpenbPod> pool = pool_of(pods, [](const OpenbPod& p) { return !is_gpu(p); });
  if (pool.empty()) return Error{"cpu" + std::to_string(percent) + ": the pod list has no CPU-only pod to draw from"};
  int64_t node_cpu = 0;
  for (const OpenbNode& n : in.nodes) node_cpu += n.cpu_milli;
  if (node_cpu <= 0) return Error{"cpu" + std::to_string(percent) + ": the node list has no CPU"};
  std::vector<OpenbPod> out = pool_of(pods, is_gpu);
  const auto target = static_cast<int64_t>(static_cast<double>(node_cpu) * percent / 100.0);
  for (int64_t cpu = 0; cpu < target;) {
    const OpenbPod& p = draw(rng, pool);
    cpu += std::max<int64_t>(p.cpu_milli, 1);
    out.push_back(p);
  }
  return out;
}

// More GPU-sharing pods: whole-card pods, in a random order, are replaced by
// sharing pods drawn from the list's own until shares are the given part of
// the GPU request (the pod count stays).
Result<std::vector<OpenbPod>> gpushare_step(std::vector<OpenbPod> pods, int percent, GoRand& rng) {
  const std::vector<OpenbPod> pool = pool_of(pods, is_share);
  if (pool.empty()) return Error{"gpushare" + std::to_string(percent) + ": the pod list has no sharing pod to draw from"};
  std::vector<size_t> whole;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (is_whole(pods[i])) whole.push_back(i);
  }
  rng.Shuffle(static_cast<int>(whole.size()), [&](int i, int j) { std::swap(whole[static_cast<size_t>(i)], whole[static_cast<size_t>(j)]); });
  int64_t total = total_request(pods), shared = 0;
  for (const OpenbPod& p : pods) shared += is_share(p) ? p.gpu_request() : 0;
  for (size_t k = 0; k < whole.size() && shared * 100 < total * percent; ++k) {
    OpenbPod& victim = pods[whole[k]];
    const OpenbPod& share = draw(rng, pool);
    total += share.gpu_request() - victim.gpu_request();
    shared += share.gpu_request();
    victim = share;
  }
  return pods;
}

// More pods constrained to card models: GPU pods without a constraint, in a
// random order, get one drawn from the source's constrained pods of the same
// kind (sharing, or whole with the same card count) until the given part of
// the GPU pods has one.
Result<std::vector<OpenbPod>> gpuspec_step(const MixInputs& in, std::vector<OpenbPod> pods, int percent, GoRand& rng) {
  // Constraints by pod kind: (cards, sharing).
  std::map<std::pair<int, bool>, std::vector<std::string>> specs;
  std::map<int, std::vector<std::string>> by_cards;
  for (const OpenbPod& p : in.spec_source) {
    if (!is_gpu(p) || p.gpu_spec.empty()) continue;
    specs[{p.num_gpu, is_share(p)}].push_back(p.gpu_spec);
    by_cards[p.num_gpu].push_back(p.gpu_spec);
  }
  if (by_cards.empty()) {
    return Error{"gpuspec" + std::to_string(percent) + ": the spec source has no pod with a gpu_spec to draw from"};
  }
  std::vector<size_t> open;
  size_t gpu_pods = 0, constrained = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (!is_gpu(pods[i])) continue;
    ++gpu_pods;
    if (pods[i].gpu_spec.empty()) {
      open.push_back(i);
    } else {
      ++constrained;
    }
  }
  rng.Shuffle(static_cast<int>(open.size()), [&](int i, int j) { std::swap(open[static_cast<size_t>(i)], open[static_cast<size_t>(j)]); });
  for (size_t k = 0; k < open.size() && constrained * 100 < gpu_pods * static_cast<size_t>(percent); ++k) {
    OpenbPod& p = pods[open[k]];
    const std::vector<std::string>* from = nullptr;
    if (auto it = specs.find({p.num_gpu, is_share(p)}); it != specs.end()) {
      from = &it->second;
    } else if (auto by = by_cards.find(p.num_gpu); by != by_cards.end()) {
      from = &by->second;
    } else {
      continue;  // no constraint of this card count in the source: the pod stays free
    }
    p.gpu_spec = (*from)[static_cast<size_t>(rng.Intn(static_cast<int>(from->size())))];
    ++constrained;
  }
  if (constrained * 100 < gpu_pods * static_cast<size_t>(percent)) {
    return Error{"gpuspec" + std::to_string(percent) + ": only " + std::to_string(constrained) + " of " +
                 std::to_string(gpu_pods) + " GPU pods can be constrained (the spec source has no constraint for the others' card counts)"};
  }
  return pods;
}

// More multi-card pods: copies of the list's own multi-card pods appended
// until they are the given part of the GPU request.
Result<std::vector<OpenbPod>> multigpu_step(std::vector<OpenbPod> pods, int percent, GoRand& rng) {
  const std::vector<OpenbPod> pool = pool_of(pods, is_multi);
  if (pool.empty()) return Error{"multigpu" + std::to_string(percent) + ": the pod list has no multi-card pod to draw from"};
  int64_t total = total_request(pods), multi = 0;
  for (const OpenbPod& p : pods) multi += is_multi(p) ? p.gpu_request() : 0;
  while (multi * 100 < total * percent) {
    const OpenbPod& p = draw(rng, pool);
    multi += p.gpu_request();
    total += p.gpu_request();
    pods.push_back(p);
  }
  return pods;
}

}  // namespace

std::string MixStep::name() const {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return std::string(k.prefix) + std::to_string(percent);
  }
  return "?";
}

Result<std::vector<MixStep>> parse_mix(std::string_view text) {
  std::vector<MixStep> steps;
  const std::string accepted = "cpuN (N 0..200), gpushareN, gpuspecN (N 0..100), multigpuN (N 0..99), joined with '+'";
  if (text.empty()) return Error{"empty mix: expected " + accepted};
  size_t start = 0;
  while (start <= text.size()) {
    const size_t plus = text.find('+', start);
    const std::string_view step = text.substr(start, plus == std::string_view::npos ? std::string_view::npos : plus - start);
    bool known = false;
    for (const KindName& k : kKinds) {
      if (step.substr(0, k.prefix.size()) != k.prefix) continue;
      const std::string_view digits = step.substr(k.prefix.size());
      int percent = -1;
      const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), percent);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || percent < 0 ||
          percent > k.max_percent) {
        return Error{"mix step \"" + std::string(step) + "\": " + std::string(k.prefix) + " takes a percentage 0.." +
                     std::to_string(k.max_percent)};
      }
      steps.push_back(MixStep{k.kind, percent});
      known = true;
      break;
    }
    if (!known) return Error{"unknown mix step \"" + std::string(step) + "\": expected " + accepted};
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  return steps;
}

Result<std::vector<OpenbPod>> build_mix(const MixInputs& in, std::span<const MixStep> steps) {
  std::vector<OpenbPod> pods(in.base.begin(), in.base.end());
  GoRand rng(static_cast<int64_t>(in.seed));
  for (const MixStep& s : steps) {
    Result<std::vector<OpenbPod>> next = Error{""};
    switch (s.kind) {
      case MixStep::Kind::kCpu: next = cpu_step(in, std::move(pods), s.percent, rng); break;
      case MixStep::Kind::kGpushare: next = gpushare_step(std::move(pods), s.percent, rng); break;
      case MixStep::Kind::kGpuspec: next = gpuspec_step(in, std::move(pods), s.percent, rng); break;
      case MixStep::Kind::kMultigpu: next = multigpu_step(std::move(pods), s.percent, rng); break;
    }
    if (!next) return next.error();
    pods = std::move(*next);
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "openb-pod-%04zu", i);
    pods[i].name = name;
  }
  return pods;
}

std::string format_openb_pods(std::span<const OpenbPod> pods) {
  const bool times = std::any_of(pods.begin(), pods.end(), [](const OpenbPod& p) { return p.has_times(); });
  std::string out = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec";
  out += times ? ",creation_time,deletion_time\n" : "\n";
  for (const OpenbPod& p : pods) {
    out += p.name + "," + std::to_string(p.cpu_milli) + "," + std::to_string(p.memory_mib) + "," +
           std::to_string(p.num_gpu) + "," + std::to_string(p.num_gpu > 0 ? p.gpu_milli : 0) + "," + p.gpu_spec;
    if (times) {
      out += "," + (p.has_times() ? std::to_string(p.creation_time) : std::string()) + "," +
             (p.has_times() ? std::to_string(p.deletion_time) : std::string());
    }
    out += "\n";
  }
  return out;
}

}  // namespace fracpack::replay
