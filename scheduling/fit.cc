#include "scheduling/fit.h"

#include <algorithm>
#include <vector>

namespace fracpack::scheduling {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool contains_ignoring_case(std::string_view haystack, std::string_view needle) {
  auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && lower(haystack[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// Does a model list name this card's model?
bool names_model(const PodRequest& pod, const std::vector<std::string>& list, const std::string& model) {
  if (pod.model_match == PodRequest::ModelMatch::kExact) return contains(list, model);
  return std::any_of(list.begin(), list.end(), [&](const std::string& m) { return contains_ignoring_case(model, m); });
}


// Could one share of `c` ever go on this card (empty, healthy)?
bool share_could_fit(const ContainerRequest& c, const Card& card) {
  return c.cores <= kCardMilli && card.memory_mib >= c.memory_on(card.memory_mib);
}

std::string percent(int milli) {
  if (milli % 10 == 0) return std::to_string(milli / 10) + "%";
  return std::to_string(milli / 10) + "." + std::to_string(milli % 10) + "%";
}

// "1 GPU", "2 GPUs"; "none" for zero when `none` is set.
std::string gpus(int n, bool none = false) {
  if (n == 0 && none) return "none";
  return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

std::string describe(const ContainerRequest& c) {
  std::string s = gpus(c.cards);
  if (c.cores >= kCardMilli && (c.memory_percent >= 100)) return s + " exclusively";
  s += " with " + percent(c.cores) + " compute";
  if (c.memory_mib > 0) s += " and " + std::to_string(c.memory_mib) + " MiB";
  if (c.memory_percent > 0) s += " and " + std::to_string(c.memory_percent) + "% memory";
  return s + " free";
}

// The isolations of the cards that could hold `c` but not enforce it ("none", "mig, none").
std::string unenforced_isolations(const PodRequest& pod, const ContainerRequest& c, const std::vector<Card>& cards) {
  std::string out;
  for (CardIsolation i : {CardIsolation::kNone, CardIsolation::kMig}) {
    const bool any = std::any_of(cards.begin(), cards.end(), [&](const Card& card) {
      return card.isolation == i && card_compatible(pod, card) && share_could_fit(c, card);
    });
    if (any) out += (out.empty() ? "" : ", ") + std::string(isolation_name(i));
  }
  return out;
}

std::string container_label(const ContainerRequest& c) {
  return (c.init ? "init container " : "container ") + (c.name.empty() ? std::string("?") : c.name);
}

// Node positions hold uint8_t (Picks); a node never has more cards.
constexpr size_t kMaxCards = 256;

// Writes the positions of the cards one share of `c` can go on now into
// `out` (room for every card of the node); returns how many.
size_t candidates(const PodRequest& pod, const NodeState& node, const ContainerRequest& c, uint8_t* out) {
  size_t n = 0;
  for (size_t p = 0; p < node.cards().size(); ++p) {
    const Card& card = node.cards()[p];
    if (card_compatible(pod, card) && share_fits(c, card, node.use()[p])) out[n++] = static_cast<uint8_t>(p);
  }
  return n;
}

// Picks `n` candidates, in their given order, all on one NUMA node when asked:
// the first NUMA node to collect n of them wins.
// `out` has room for n.
bool take(const NodeState& node, std::span<const uint8_t> ranked, int n, bool numa_single, uint8_t* out) {
  if (static_cast<int>(ranked.size()) < n) return false;
  if (!numa_single) {
    std::copy(ranked.begin(), ranked.begin() + n, out);
    return true;
  }
  for (size_t i = 0; i < ranked.size(); ++i) {
    const int numa = node.cards()[ranked[i]].numa;
    int count = 0;
    for (size_t j = 0; j <= i; ++j) count += node.cards()[ranked[j]].numa == numa ? 1 : 0;
    if (count == n) {
      for (size_t j = 0; j <= i; ++j) {
        if (node.cards()[ranked[j]].numa == numa) *out++ = ranked[j];
      }
      return true;
    }
  }
  return false;
}

void add_share(CardUse& use, const ContainerRequest& c, const Card& card, int sign) {
  use.memory_mib += sign * c.memory_on(card.memory_mib);
  use.cores += sign * c.cores;
  use.sharers += sign;
}

// Exhaustive (bounded) search for the app containers of a pod: containers in
// decreasing demand, each choosing a combination of cards in ranked order.
class AppSearch {
 public:
  AppSearch(const PodRequest& pod, const NodeState& node, const CardRanker& ranker, std::vector<int> order)
      : pod_(pod), node_(node), ranker_(ranker), order_(std::move(order)), use_(node.use()),
        chosen_(pod.containers.size()) {}

  bool run() { return level(0); }
  bool exhausted() const { return steps_ >= kSearchBudget; }
  const std::vector<std::vector<uint8_t>>& chosen() const { return chosen_; }
  const std::vector<CardUse>& use() const { return use_; }

 private:
  bool level(size_t depth) {
    if (depth == order_.size()) return true;
    const ContainerRequest& c = pod_.containers[static_cast<size_t>(order_[depth])];
    std::vector<uint8_t> cand;
    for (size_t p = 0; p < node_.cards().size(); ++p) {
      const Card& card = node_.cards()[p];
      if (card_compatible(pod_, card) && share_fits(c, card, use_[p])) cand.push_back(static_cast<uint8_t>(p));
    }
    if (static_cast<int>(cand.size()) < c.cards) return false;
    ranker_.rank(pod_, c, node_, use_, cand);
    std::vector<uint8_t> pick;
    return combine(depth, c, cand, 0, pick);
  }

  // Cards are interchangeable for the rest of the search when they look alike.
  bool same_kind(uint8_t a, uint8_t b) const {
    const Card& x = node_.cards()[a];
    const Card& y = node_.cards()[b];
    return x.numa == y.numa && x.memory_mib == y.memory_mib && x.model == y.model && x.max_sharers == y.max_sharers &&
           use_[a] == use_[b] &&
           x.uuid.empty() && y.uuid.empty();
  }

  bool combine(size_t depth, const ContainerRequest& c, const std::vector<uint8_t>& cand, size_t start,
               std::vector<uint8_t>& pick) {
    if (static_cast<int>(pick.size()) == c.cards) {
      if (++steps_ > kSearchBudget) return false;
      for (uint8_t p : pick) add_share(use_[p], c, node_.cards()[p], +1);
      chosen_[static_cast<size_t>(order_[depth])] = pick;
      if (level(depth + 1)) return true;
      for (uint8_t p : pick) add_share(use_[p], c, node_.cards()[p], -1);
      return false;
    }
    std::vector<uint8_t> skipped;
    for (size_t i = start; i < cand.size(); ++i) {
      if (steps_ > kSearchBudget) return false;
      const uint8_t p = cand[i];
      if (pod_.numa_single && !pick.empty() && node_.cards()[p].numa != node_.cards()[pick[0]].numa) continue;
      bool twin = false;
      for (uint8_t s : skipped) twin |= same_kind(s, p);
      if (twin) continue;  // an equivalent card was already tried at this position
      pick.push_back(p);
      if (combine(depth, c, cand, i + 1, pick)) return true;
      pick.pop_back();
      skipped.push_back(p);
    }
    return false;
  }

  const PodRequest& pod_;
  const NodeState& node_;
  const CardRanker& ranker_;
  std::vector<int> order_;
  std::vector<CardUse> use_;
  std::vector<std::vector<uint8_t>> chosen_;
  int steps_ = 0;
};

// Places each init container against the node as it is without this pod
// (init containers run alone, before the app containers), preferring cards
// where the pod's app share already covers it.
bool assign_init(const PodRequest& pod, const NodeState& node, const CardRanker& ranker,
                 const std::vector<CardUse>& with_app, std::vector<std::vector<uint8_t>>& chosen) {
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    const ContainerRequest& c = pod.containers[i];
    if (!c.init) continue;
    std::vector<uint8_t> cand(node.cards().size());
    cand.resize(candidates(pod, node, c, cand.data()));
    if (static_cast<int>(cand.size()) < c.cards) return false;
    ranker.rank(pod, c, node, node.use(), cand);
    std::stable_partition(cand.begin(), cand.end(), [&](uint8_t p) {
      const CardUse& base = node.use()[p];
      const CardUse& app = with_app[p];
      return app.cores - base.cores >= c.cores &&
             app.memory_mib - base.memory_mib >= c.memory_on(node.cards()[p].memory_mib);
    });
    chosen[i].resize(static_cast<size_t>(c.cards));
    if (!take(node, cand, c.cards, pod.numa_single, chosen[i].data())) return false;
  }
  return true;
}

// One container's best-ranked cards against the node as it is: `chosen`
// gets c.cards positions. Candidates live on the stack (positions are
// uint8_t, so no node has more than kMaxCards).
bool assign_alone(const PodRequest& pod, const NodeState& node, const CardRanker& ranker, const ContainerRequest& c,
                  uint8_t* chosen) {
  if (node.cards().size() > kMaxCards) return false;
  std::array<uint8_t, kMaxCards> cand;
  const size_t n = candidates(pod, node, c, cand.data());
  if (static_cast<int>(n) < c.cards) return false;
  ranker.rank(pod, c, node, node.use(), std::span<uint8_t>(cand.data(), n));
  return take(node, std::span<const uint8_t>(cand.data(), n), c.cards, pod.numa_single, chosen);
}

bool assign_impl(const PodRequest& pod, const NodeState& node, const CardRanker& ranker, Picks& out,
                 bool* exhausted) {
  if (pod.containers.size() == 1 && !pod.containers[0].init) {
    // The common case, one app container: its best-ranked cards, with no
    // search and no allocation.
    const ContainerRequest& c = pod.containers[0];
    std::array<uint8_t, Picks::kMax> chosen;
    if (c.cards > static_cast<int>(Picks::kMax) || !assign_alone(pod, node, ranker, c, chosen.data())) return false;
    out.size = 0;
    for (int k = 0; k < c.cards; ++k) out.push(chosen[static_cast<size_t>(k)]);
    return true;
  }
  std::vector<int> app;
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    if (!pod.containers[i].init) app.push_back(static_cast<int>(i));
  }
  std::stable_sort(app.begin(), app.end(), [&](int a, int b) {
    const auto& x = pod.containers[static_cast<size_t>(a)];
    const auto& y = pod.containers[static_cast<size_t>(b)];
    if (x.cards != y.cards) return x.cards > y.cards;
    if (x.cores != y.cores) return x.cores > y.cores;
    return x.memory_mib + x.memory_percent > y.memory_mib + y.memory_percent;
  });
  std::vector<std::vector<uint8_t>> chosen(pod.containers.size());
  std::vector<CardUse> with_app = node.use();
  if (app.size() == 1) {
    // One app container: its best-ranked cards, no search needed.
    const ContainerRequest& c = pod.containers[static_cast<size_t>(app[0])];
    std::vector<uint8_t>& mine = chosen[static_cast<size_t>(app[0])];
    mine.resize(static_cast<size_t>(c.cards));
    if (!assign_alone(pod, node, ranker, c, mine.data())) return false;
    for (uint8_t p : chosen[static_cast<size_t>(app[0])]) add_share(with_app[p], c, node.cards()[p], +1);
  } else if (!app.empty()) {
    AppSearch search(pod, node, ranker, app);
    if (!search.run()) {
      if (exhausted) *exhausted = search.exhausted();
      return false;
    }
    chosen = search.chosen();
    with_app = search.use();
  }
  if (!assign_init(pod, node, ranker, with_app, chosen)) return false;
  out.size = 0;
  for (const auto& c : chosen) {
    for (uint8_t p : c) out.push(p);
  }
  return true;
}

}  // namespace

bool card_matches_lists(const PodRequest& pod, const Card& card) {
  if (!pod.allowed_models.empty() && !names_model(pod, pod.allowed_models, card.model)) return false;
  if (!pod.excluded_models.empty() && names_model(pod, pod.excluded_models, card.model)) return false;
  if (!pod.uuid_allow.empty() && !contains(pod.uuid_allow, card.uuid)) return false;
  if (!pod.uuid_exclude.empty() && contains(pod.uuid_exclude, card.uuid)) return false;
  return true;
}

void BestCardRanker::rank(const PodRequest&, const ContainerRequest& c, const NodeState& node,
                          std::span<const CardUse> use, std::span<uint8_t> cand) const {
  std::stable_sort(cand.begin(), cand.end(), [&](uint8_t a, uint8_t b) {
    const int fa = kCardMilli - use[a].cores, fb = kCardMilli - use[b].cores;
    if (fa != fb) return fa < fb;
    const Card& ca = node.cards()[a];
    const Card& cb = node.cards()[b];
    const int64_t ma = ca.memory_mib - use[a].memory_mib - c.memory_on(ca.memory_mib);
    const int64_t mb = cb.memory_mib - use[b].memory_mib - c.memory_on(cb.memory_mib);
    if (ma != mb) return ma < mb;
    return ca.index < cb.index;
  });
}

void IndexCardRanker::rank(const PodRequest&, const ContainerRequest&, const NodeState& node,
                           std::span<const CardUse>, std::span<uint8_t> cand) const {
  std::stable_sort(cand.begin(), cand.end(),
                   [&](uint8_t a, uint8_t b) { return node.cards()[a].index < node.cards()[b].index; });
}

bool assign(const PodRequest& pod, const NodeState& node, const CardRanker& ranker, Picks& out) {
  return assign_impl(pod, node, ranker, out, nullptr);
}

bool kubelet_refuses(const PodRequest& pod, const NodeState& node) {
  return pod.init_names_unknown_resources && node.spec().kubelet_minor > 0 && node.spec().kubelet_minor < 31;
}

bool fits(const PodRequest& pod, const NodeState& node, const FitOptions& options) {
  if (!node.present()) return false;
  if (kubelet_refuses(pod, node)) return false;
  if (options.check_node_resources &&
      (pod.cpu_milli > node.cpu_left() || pod.memory_bytes > node.memory_left())) {
    return false;
  }
  if (pod.containers.empty()) return true;
  if (pod.containers.size() == 1 && !pod.containers[0].init) {
    const ContainerRequest& c = pod.containers[0];
    const auto& cards = node.cards();
    const auto& use = node.use();
    if (!pod.numa_single) {
      int count = 0;
      for (size_t p = 0; p < cards.size(); ++p) {
        if (share_fits(c, cards[p], use[p]) && card_compatible(pod, cards[p]) && ++count >= c.cards) return true;
      }
      return false;
    }
  }
  Picks picks;
  static const IndexCardRanker kIndex;
  return assign(pod, node, kIndex, picks);
}

FitResult explain_fit(const PodRequest& pod, const NodeState& node, const FitOptions& options, const CardRanker& ranker) {
  FitResult r;
  if (!node.present()) {
    r.reason = "node is not known to fracpack";
    return r;
  }
  if (options.check_node_resources) {
    if (pod.cpu_milli > node.cpu_left()) {
      r.reason = "insufficient cpu: needs " + std::to_string(pod.cpu_milli) + "m, " +
                 std::to_string(std::max<int64_t>(node.cpu_left(), 0)) + "m free";
      return r;
    }
    if (pod.memory_bytes > node.memory_left()) {
      r.reason = "insufficient memory: needs " + std::to_string(pod.memory_bytes >> 20) + " MiB, " +
                 std::to_string(std::max<int64_t>(node.memory_left(), 0) >> 20) + " MiB free";
      return r;
    }
  }
  if (pod.containers.empty()) {
    r.fits = true;
    return r;
  }
  if (kubelet_refuses(pod, node)) {
    // Found on a real v1.20 kubelet (issue 31): the Allocate answered, then
    // the pod failed "OutOf<resource>: capacity 0" (kubernetes#124255).
    r.unresolvable = true;
    r.reason = "kubelet 1." + std::to_string(node.spec().kubelet_minor) +
               " refuses a pod whose init container asks GPU memory or compute shares (kubernetes#124255, fixed in 1.31): "
               "give init containers whole cards only, or run on nodes whose kubelet is 1.31 or later";
    return r;
  }
  const auto& cards = node.cards();
  if (cards.empty()) {
    r.unresolvable = true;
    r.reason = node.spec().excluded.empty() ? "node has no fracpack GPUs" : node.spec().excluded;
    return r;
  }
  // Static checks: can enough cards ever serve each container?
  for (const ContainerRequest& c : pod.containers) {
    int compatible = 0, sized = 0, unenforced = 0, schedulable = 0;
    std::vector<int> per_numa_sized;
    for (const Card& card : cards) {
      if (!card_compatible(pod, card)) continue;
      ++compatible;
      if (!share_could_fit(c, card)) continue;
      if (c.needs_enforcement && !card.enforces_shares()) {
        ++unenforced;
        continue;
      }
      ++sized;
      if (card.schedulable()) ++schedulable;
      if (pod.numa_single) {
        if (static_cast<int>(per_numa_sized.size()) <= card.numa) per_numa_sized.resize(static_cast<size_t>(card.numa) + 1);
        ++per_numa_sized[static_cast<size_t>(card.numa)];
      }
    }
    const std::string who = container_label(c);
    if (compatible < c.cards) {
      r.unresolvable = true;
      if (compatible == 0 && !pod.allowed_models.empty()) {
        std::string allowed;
        for (const auto& m : pod.allowed_models) allowed += (allowed.empty() ? "" : "|") + m;
        r.reason = "no GPU of model " + allowed + " (node has " + cards.front().model + ")";
      } else if (!pod.uuid_allow.empty() || !pod.uuid_exclude.empty() || !pod.allowed_models.empty() ||
                 !pod.excluded_models.empty()) {
        r.reason = who + " needs " + gpus(c.cards) + " matching the pod's model/UUID constraints, node has " +
                   gpus(compatible, true);
      } else {
        r.reason = who + " needs " + gpus(c.cards) + ", node has " + gpus(compatible, true);
      }
      return r;
    }
    if (sized < c.cards && sized + unenforced >= c.cards) {
      // A share nothing would hold to its size (README "Isolation").
      r.unresolvable = true;
      r.reason = who + " needs " + gpus(c.cards) + " that enforce its share (MPS or HAMi-core), node has " + gpus(sized, true) +
                 ": " + std::to_string(unenforced) + " of its GPUs cannot enforce a share (isolation " +
                 unenforced_isolations(pod, c, cards) + ")" +
                 (pod.unenforced_opt_in.empty() ? std::string() : "; the pod accepts an unenforced share with " + pod.unenforced_opt_in);
      return r;
    }
    if (sized < c.cards) {
      r.unresolvable = true;
      r.reason = who + " needs " + gpus(c.cards) + " with at least " +
                 std::to_string(c.memory_on(cards.front().memory_mib)) + " MiB, node has " + gpus(sized, true);
      return r;
    }
    if (pod.numa_single && std::none_of(per_numa_sized.begin(), per_numa_sized.end(),
                                        [&](int n) { return n >= c.cards; })) {
      r.unresolvable = true;
      r.reason = who + " needs " + gpus(c.cards) + " on one NUMA node, no NUMA node has that many";
      return r;
    }
    if (schedulable < c.cards) {
      r.reason = !node.spec().unavailable.empty() ? node.spec().unavailable
                                                  : who + " needs " + gpus(c.cards) + ", " + std::to_string(sized - schedulable) +
                                                        " of the node's suitable GPUs are unhealthy or cordoned";
      return r;
    }
  }
  bool exhausted = false;
  if (assign_impl(pod, node, ranker, r.picks, &exhausted)) {
    r.fits = true;
    return r;
  }
  // Say what is short: the first container that cannot be placed on its own.
  for (const ContainerRequest& c : pod.containers) {
    int available = 0, at_limit = 0, shared = 0, unenforced = 0;
    for (size_t p = 0; p < cards.size(); ++p) {
      if (!card_compatible(pod, cards[p])) continue;
      const CardUse& u = node.use()[p];
      if (share_fits(c, cards[p], u)) {
        ++available;
      } else if (c.needs_enforcement && !cards[p].enforces_shares()) {
        ++unenforced;
      } else if (cards[p].max_sharers > 0 && u.sharers >= cards[p].max_sharers) {
        ++at_limit;
      } else if (c.alone && u.sharers > 0) {
        ++shared;
      }
    }
    if (available < c.cards) {
      r.reason = "insufficient GPU: " + container_label(c) + " needs " + describe(c) + ", " +
                 std::to_string(available) + " available";
      if (at_limit > 0) r.reason += "; " + std::to_string(at_limit) + " of the others serve as many shares as their split count allows";
      if (shared > 0) r.reason += "; " + std::to_string(shared) + " of the others hold shares and 100% compute needs a card alone";
      if (unenforced > 0) r.reason += "; " + std::to_string(unenforced) + " of the others cannot enforce a share";
      return r;
    }
  }
  if (pod.numa_single) {
    r.reason = "insufficient GPU: not enough free GPUs on a single NUMA node";
  } else if (exhausted) {
    r.reason = "insufficient GPU: no assignment of the pod's GPU containers found within the search budget";
  } else {
    r.reason = "insufficient GPU: the pod's GPU containers do not fit together on the free GPUs";
  }
  return r;
}

Allocation materialize(const PodRequest& pod, const NodeState& node, const Picks& picks) {
  Allocation a;
  a.node = node.name();
  size_t k = 0;
  for (const ContainerRequest& c : pod.containers) {
    ContainerAllocation ca;
    ca.name = c.name;
    ca.init = c.init;
    for (int i = 0; i < c.cards && k < picks.size; ++i, ++k) {
      const Card& card = node.cards()[picks.pos[k]];
      ca.cards.push_back(CardShare{card.index, card.uuid, c.memory_on(card.memory_mib), c.cores});
    }
    a.containers.push_back(std::move(ca));
  }
  return a;
}

}  // namespace fracpack::scheduling
