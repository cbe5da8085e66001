// The FGD paper's baseline policies (../shared/reference/replay-spec.md §5.4-§5.8), scored exactly
// as the simulator's plugins do, plus the HAMi-style binpack and spread.
#include <algorithm>
#include <cmath>

#include "scheduling/policies/policies.h"

namespace fracpack::scheduling::policies {

SimNode sim_node(const NodeState& node) {
  SimNode n;
  n.cpu_left = node.cpu_left();
  n.gpus = static_cast<int>(node.cards().size());
  for (size_t p = 0; p < node.cards().size(); ++p) {
    const int free = node.cards()[p].schedulable() ? node.free_cores(p) : 0;
    n.gpu_free += free;
    if (free == kCardMilli) ++n.fully_free;
  }
  return n;
}

void SpreadCardRanker::rank(const PodRequest&, const ContainerRequest& c, const NodeState& node,
                            std::span<const CardUse> use, std::span<uint8_t> cand) const {
  std::stable_sort(cand.begin(), cand.end(), [&](uint8_t a, uint8_t b) {
    const int fa = kCardMilli - use[a].cores, fb = kCardMilli - use[b].cores;
    if (fa != fb) return fa > fb;
    const Card& ca = node.cards()[a];
    const Card& cb = node.cards()[b];
    const int64_t ma = ca.memory_mib - use[a].memory_mib - c.memory_on(ca.memory_mib);
    const int64_t mb = cb.memory_mib - use[b].memory_mib - c.memory_on(cb.memory_mib);
    if (ma != mb) return ma > mb;
    return ca.index < cb.index;
  });
}

namespace {

constexpr double kMaxSpecCpu = 128000;  // the simulator's normalisers (gpushareutils.MaxSpecCpu/Gpu)
constexpr double kMaxSpecGpu = 8000;

const BestCardRanker kSimulatorBest;

// Pod demand as the simulator sees it: CPU, cards k, milli per card u.
struct SimPod {
  int64_t cpu = 0;
  int k = 0;
  int u = 0;
};
SimPod sim_pod(const PodRequest& pod) {
  const PodShape s = shape_of(pod);
  return SimPod{pod.cpu_milli, s.cards, s.cores};
}

// A policy whose score depends on the node only, with the `best` GPU choice.
class NodeScorePolicy : public Policy {
 public:
  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    if (!assign(pod, node, kSimulatorBest, out.picks)) return false;
    out.score = score(pod, node);
    return true;
  }
  virtual int64_t score(const PodRequest& pod, const NodeState& node) const = 0;
};

// Tetris-style alignment (DotProductScore, dimExt=merge, norm=max).
class DotProd final : public NodeScorePolicy {
 public:
  std::string_view name() const override { return "dotprod"; }
  int64_t score(const PodRequest& pod, const NodeState& node) const override {
    const SimNode n = sim_node(node);
    const SimPod p = sim_pod(pod);
    double dot = 0;
    dot += (static_cast<double>(n.cpu_left) / kMaxSpecCpu) * (static_cast<double>(p.cpu) / kMaxSpecCpu);
    dot += (static_cast<double>(n.gpu_free) / kMaxSpecGpu) * (static_cast<double>(int64_t{p.u} * p.k) / kMaxSpecGpu);
    double s = dot / 2;
    s = 1 - s;
    return static_cast<int64_t>(100.0 * s);
  }
};

// Groups pods of the same GPU shape on the same nodes (GpuClusteringScore).
class GpuClustering final : public NodeScorePolicy {
 public:
  std::string_view name() const override { return "gpuclustering"; }
  int64_t score(const PodRequest& pod, const NodeState& node) const override {
    const SimPod p = sim_pod(pod);
    if (p.k == 0) return 0;
    const std::string tag = (p.k == 1 && p.u < kCardMilli) ? "share-gpu" : std::to_string(p.k) + "-gpu";
    const SimNode n = sim_node(node);
    const int64_t base = 25 * (static_cast<int64_t>(kMaxSpecGpu) - n.gpu_free) / static_cast<int64_t>(kMaxSpecGpu);
    const auto& tags = node.gpu_pod_tags();
    const auto it = tags.find(tag);
    if (it != tags.end() && it->second > 0) return tags.size() == 1 ? base + 75 : base + 50;
    return tags.empty() ? base + 25 : base;
  }
};

// Shared cards first, then free cards of used nodes, then idle nodes (GpuPackingScore).
class GpuPacking final : public NodeScorePolicy {
 public:
  std::string_view name() const override { return "gpupacking"; }
  int64_t score(const PodRequest& pod, const NodeState& node) const override {
    const SimPod p = sim_pod(pod);
    if (p.u <= 0) return 0;
    const SimNode n = sim_node(node);
    if (n.fully_free == n.gpus) return std::max<int64_t>(100 / 3 - n.fully_free, n.fully_free);
    std::vector<int> order(node.cards().size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    auto free_of = [&](int pos) {
      const auto q = static_cast<size_t>(pos);
      return node.cards()[q].schedulable() ? node.free_cores(q) : 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free_of(a) < free_of(b); });
    int need = p.k, fully_free_used = 0;
    int64_t free_ratio_sum = 0;
    for (int pos : order) {
      if (need == 0) break;
      const int g = free_of(pos);
      if (p.u <= g) {
        --need;
        if (g == kCardMilli) ++fully_free_used;
        free_ratio_sum += int64_t{g} * 100 / kCardMilli;
      }
    }
    if (need != 0) return 0;
    if (fully_free_used > 0) return std::max<int64_t>(100 / 2 - fully_free_used, 100 / 3);
    return std::max<int64_t>(100 - free_ratio_sum / 10, 100 / 2);
  }
};

// Least leftover CPU and GPU after placement (BestFitScore).
class BestFit final : public NodeScorePolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  int64_t score(const PodRequest& pod, const NodeState& node) const override {
    const SimNode n = sim_node(node);
    const SimPod p = sim_pod(pod);
    double s = 0;
    s += (static_cast<double>(n.cpu_left) - static_cast<double>(p.cpu)) / kMaxSpecCpu * 0.5;
    s += (static_cast<double>(n.gpu_free) - static_cast<double>(int64_t{p.u} * p.k)) / kMaxSpecGpu * 0.5;
    s = (1.0 - s) * 100;
    return static_cast<int64_t>(s);
  }
};

// A uniformly random feasible node and a uniformly random fitting card.
class RandomCardRanker : public CardRanker {
 public:
  explicit RandomCardRanker(GoRand& rng) : rng_(rng) {}
  void rank(const PodRequest&, const ContainerRequest&, const NodeState&, std::span<const CardUse>,
            std::span<uint8_t> cand) const override {
    for (size_t i = cand.size(); i > 1; --i) {
      std::swap(cand[i - 1], cand[static_cast<size_t>(rng_.Intn(static_cast<int>(i)))]);
    }
  }

 private:
  GoRand& rng_;
};

class Random final : public Policy {
 public:
  explicit Random(uint64_t seed) : rng_(static_cast<int64_t>(seed)), ranker_(rng_) {}
  std::string_view name() const override { return "random"; }
  bool cacheable() const override { return false; }
  std::pair<int64_t, int64_t> score_range() const override { return {0, INT64_MAX}; }
  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    if (!assign(pod, node, ranker_, out.picks)) return false;
    out.score = rng_.Int63();  // the argmax of i.i.d. scores is a uniform pick
    return true;
  }

 private:
  GoRand rng_;
  RandomCardRanker ranker_;
};

// HAMi-style: node utilisation after placement, compute and (where cards
// declare it) memory, in 1/10000; binpack prefers high, spread low.
class Utilisation : public Policy {
 public:
  explicit Utilisation(bool pack) : pack_(pack) {}
  std::string_view name() const override { return pack_ ? "binpack" : "spread"; }
  std::pair<int64_t, int64_t> score_range() const override { return {0, 10000}; }
  bool evaluate(const PodRequest& pod, const NodeState& node, Evaluation& out) override {
    static const SpreadCardRanker kSpread;
    const CardRanker& ranker = pack_ ? static_cast<const CardRanker&>(kSimulatorBest) : kSpread;
    if (!assign(pod, node, ranker, out.picks)) return false;
    std::vector<CardUse> use = node.use();
    size_t k = 0;
    for (const ContainerRequest& c : pod.containers) {
      for (int i = 0; i < c.cards; ++i, ++k) {
        const uint8_t p = out.picks.pos[k];
        if (!c.init) {
          use[p].cores += c.cores;
          use[p].memory_mib += c.memory_on(node.cards()[p].memory_mib);
        }
      }
    }
    double cores = 0, cores_total = 0, mem = 0, mem_total = 0;
    for (size_t p = 0; p < use.size(); ++p) {
      if (!node.cards()[p].schedulable()) continue;
      cores += use[p].cores;
      cores_total += kCardMilli;
      mem += static_cast<double>(use[p].memory_mib);
      mem_total += static_cast<double>(node.cards()[p].memory_mib);
    }
    double util = cores_total > 0 ? cores / cores_total : 0;
    if (mem_total > 0) util = (util + mem / mem_total) / 2;
    util = std::clamp(util, 0.0, 1.0);
    const auto u = static_cast<int64_t>(std::lround(util * 10000));
    out.score = pack_ ? u : 10000 - u;
    return true;
  }

 private:
  bool pack_;
};

}  // namespace

std::unique_ptr<Policy> make_random(uint64_t seed) { return std::make_unique<Random>(seed); }
std::unique_ptr<Policy> make_dotprod() { return std::make_unique<DotProd>(); }
std::unique_ptr<Policy> make_gpuclustering() { return std::make_unique<GpuClustering>(); }
std::unique_ptr<Policy> make_gpupacking() { return std::make_unique<GpuPacking>(); }
std::unique_ptr<Policy> make_bestfit() { return std::make_unique<BestFit>(); }
std::unique_ptr<Policy> make_binpack() { return std::make_unique<Utilisation>(true); }
std::unique_ptr<Policy> make_spread() { return std::make_unique<Utilisation>(false); }

}  // namespace fracpack::scheduling::policies
