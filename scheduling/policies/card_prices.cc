#include "scheduling/policies/card_prices.h"

#include <algorithm>
#include <cmath>

namespace fracpack::scheduling::policies {
namespace {

constexpr double kEps = 1e-9;

// Unbounded knapsack over milli: best[c] is the most value a card with c
// milli free holds at `price` (items of `sizes`, those `mask` allows);
// `pick[c]` the size index that achieves it, -1 when best[c] = best[c - 1]
// (a milli left over).
void knapsack(const std::vector<int>& sizes, const std::vector<double>& price, std::vector<double>& best,
              std::vector<int>& pick, uint64_t mask = ~uint64_t{0}) {
  best.assign(CardPrices::kCard + 1, 0);
  pick.assign(CardPrices::kCard + 1, -1);
  for (int c = 1; c <= CardPrices::kCard; ++c) {
    best[c] = best[c - 1];
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] > c || price[i] <= 0 || (i < 64 && (mask >> i & 1) == 0)) continue;
      const double v = best[c - sizes[i]] + price[i];
      if (v > best[c] + kEps) {
        best[c] = v;
        pick[c] = static_cast<int>(i);
      }
    }
  }
}

}  // namespace

CardPrices::CardPrices(const std::map<int, double>& demand, const std::map<int, Needs>& needs) {
  std::vector<double> d;
  for (const auto& [size, weight] : demand) {
    if (size <= 0 || size >= kCard || weight <= 0) continue;
    sizes_.push_back(size);
    d.push_back(weight);
    auto it = needs.find(size);
    needs_.push_back(it == needs.end() ? Needs{} : it->second);
  }
  const size_t m = sizes_.size();
  if (m == 0) return;
  // Revised simplex on: min sum z_p  s.t.  A z - s = d, z, s >= 0, starting
  // from the basis of one-size patterns (diagonal, feasible).
  std::vector<std::vector<double>> inverse(m, std::vector<double>(m, 0));  // B^-1
  std::vector<double> x(m), cost(m, 1);
  for (size_t i = 0; i < m; ++i) {
    const int k = kCard / sizes_[i];
    inverse[i][i] = 1.0 / k;
    x[i] = d[i] / k;
  }
  std::vector<double> y(m), best, column(m), direction(m);
  std::vector<int> pick;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    for (size_t j = 0; j < m; ++j) {
      y[j] = 0;
      for (size_t i = 0; i < m; ++i) y[j] += cost[i] * inverse[i][j];
    }
    // Entering column: a surplus with a negative price, else the pattern
    // worth more than one card at these prices.
    double entering_cost = 0;
    std::fill(column.begin(), column.end(), 0.0);
    bool found = false;
    for (size_t j = 0; j < m && !found; ++j) {
      if (y[j] < -kEps) {
        column[j] = -1;
        found = true;
      }
    }
    if (!found) {
      knapsack(sizes_, y, best, pick);
      if (best[kCard] > 1 + 1e-7) {
        for (int c = kCard; c > 0;) {
          if (pick[c] < 0) {
            --c;
          } else {
            column[static_cast<size_t>(pick[c])] += 1;
            c -= sizes_[static_cast<size_t>(pick[c])];
          }
        }
        entering_cost = 1;
        found = true;
      }
    }
    if (!found) break;  // optimal
    for (size_t i = 0; i < m; ++i) {
      direction[i] = 0;
      for (size_t j = 0; j < m; ++j) direction[i] += inverse[i][j] * column[j];
    }
    size_t leave = m;
    double theta = 0;
    for (size_t i = 0; i < m; ++i) {
      if (direction[i] <= kEps) continue;
      const double t = x[i] / direction[i];
      if (leave == m || t < theta - kEps) {
        leave = i;
        theta = t;
      }
    }
    if (leave == m) break;  // unbounded: cannot happen (the objective is >= 0)
    for (size_t i = 0; i < m; ++i) x[i] -= theta * direction[i];
    x[leave] = theta;
    const double pivot = direction[leave];
    for (size_t j = 0; j < m; ++j) inverse[leave][j] /= pivot;
    for (size_t i = 0; i < m; ++i) {
      if (i == leave || direction[i] == 0) continue;
      for (size_t j = 0; j < m; ++j) inverse[i][j] -= direction[i] * inverse[leave][j];
    }
    cost[leave] = entering_cost;
  }
  for (size_t i = 0; i < m; ++i) cards_ += cost[i] * x[i];
  price_.assign(m, 0);
  for (size_t j = 0; j < m; ++j) {
    double v = 0;
    for (size_t i = 0; i < m; ++i) v += cost[i] * inverse[i][j];
    price_[j] = std::max(v, 0.0);
  }
}

CardPrices::Sizes CardPrices::fitting(int64_t cpu_milli, int64_t memory_mib) const {
  Sizes sizes = kAll;
  for (size_t i = 0; i < sizes_.size() && i < 64; ++i) {
    if (needs_[i].cpu_milli > cpu_milli || needs_[i].memory_mib > memory_mib) sizes &= ~(Sizes{1} << i);
  }
  return sizes;
}

const std::vector<double>& CardPrices::values(Sizes sizes) const {
  auto it = values_.find(sizes);
  if (it != values_.end()) return it->second;
  std::vector<double> best;
  std::vector<int> pick;
  knapsack(sizes_, price_, best, pick, sizes);
  return values_.emplace(sizes, std::move(best)).first->second;
}

double CardPrices::value(int free, Sizes sizes) const {
  if (free <= 0) return 0;
  return values(sizes)[static_cast<size_t>(std::min(free, kCard))];
}

double CardPrices::price(int cores) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), cores);
  return it == sizes_.end() || *it != cores ? 0 : price_[static_cast<size_t>(it - sizes_.begin())];
}

double CardPrices::regret(int free, int cores) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), cores);
  if (it == sizes_.end() || *it != cores || cores > free) return 0;
  const double y = price_[static_cast<size_t>(it - sizes_.begin())];
  return std::max(0.0, value(free) - value(free - cores) - y);
}

}  // namespace fracpack::scheduling::policies
