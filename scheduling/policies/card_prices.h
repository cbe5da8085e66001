// Which shares belong together on a card, for a mix of share sizes: the
// prices of the cutting-stock LP (Gilmore and Gomory) that packs the mix's
// shares into the fewest cards.
//
// The LP: minimise the cards used, sum over card patterns z_p, such that
// every share size u gets its demand d_u (the mix's weight of shares of u
// milli per card), a pattern being any multiset of sizes that fits one card
// (sum <= 1000 milli). Its dual prices y_u >= 0 say what a share of u is
// worth in cards when the mix is packed as well as it can be: a card holds
// at most 1 of value, and the patterns of an optimal packing hold exactly 1.
// From them, the value of a card with f milli free is the best completion
// of it at those prices, V(f) (a knapsack), and a share of u placed on a card
// with f free loses
//
//     regret(f, u) = V(f) - V(f - u) - y_u  >= 0
//
// of a card against the best completion: 0 when u is part of an optimal
// pattern of what is left (a 320 on a card that has room for a 650 beside
// it), more when it spoils one (a 320 beside a 470, whose partner is another
// 470, leaving 210 that only the rare small shares fill). FGD's measure sees
// the cluster as it is now; this is where the mix's shares end up when the
// cluster is full, the state the paper's experiment is scored on
// (docs/packing-floor.md: most unallocated GPU past FGD and fracpack's first
// measure was shares paired badly).
//
// A card's completion needs room on its node too: V restricted to the sizes
// whose shares the node's CPU and memory left can still take says what a
// pod that takes them costs the node's other cards (a 470 asking all of a
// one-card node's CPU leaves 530 to nobody).
//
// Pure, deterministic, standard library only; the LP is small (one row per
// distinct share size) and solved by a revised simplex with column
// generation (the pricing is an unbounded knapsack over milli).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace fracpack::scheduling::policies {

class CardPrices {
 public:
  static constexpr int kCard = 1000;  // milli of compute per card

  // What the shares of a size need of their node at least.
  struct Needs {
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
  };
  // A set of the mix's sizes, a bit each in ascending order (sizes past the
  // 64th are always in).
  using Sizes = uint64_t;
  static constexpr Sizes kAll = ~Sizes{0};

  CardPrices() = default;
  // `demand`: per share size (milli per card, 1..999), its weight in the mix;
  // `needs`: per size, the least CPU and node memory its shares ask (sizes
  // without an entry need nothing).
  explicit CardPrices(const std::map<int, double>& demand, const std::map<int, Needs>& needs = {});

  bool empty() const { return sizes_.empty(); }
  // y_u: a share of u milli's worth in cards; 0 for a size not in the mix.
  double price(int cores) const;
  // The sizes whose shares a node with this much CPU and memory left could
  // still take.
  Sizes fitting(int64_t cpu_milli, int64_t memory_mib) const;
  // V(f) for f = 0..kCard: the best completion of a card with f milli free by
  // shares of `sizes`, in cards. Computed once per set; stays valid.
  const std::vector<double>& values(Sizes sizes = kAll) const;
  double value(int free, Sizes sizes = kAll) const;
  // What a share of `cores` placed on a card with `free` milli free loses
  // against the card's best completion, in cards (0 for sizes not in the
  // mix, or that do not fit).
  double regret(int free, int cores) const;
  // Cards the LP packs the demand into (for tests and reports).
  double cards() const { return cards_; }

 private:
  std::vector<int> sizes_;     // ascending
  std::vector<double> price_;  // per size
  std::vector<Needs> needs_;   // per size
  double cards_ = 0;
  // V per set of sizes (kAll first); at most (sizes + 1)^2 sets, one per
  // pair of CPU and memory thresholds.
  mutable std::unordered_map<Sizes, std::vector<double>> values_;
};

}  // namespace fracpack::scheduling::policies
