#include "scheduling/model.h"

#include <algorithm>

namespace fracpack::scheduling {

std::vector<CardCharge> charges_of(const Allocation& allocation) {
  // Sum the app containers per card, keep each init container's per-card
  // share apart, then take the per-dimension max card by card.
  std::vector<CardCharge> app;
  std::vector<CardCharge> init_max;
  auto find = [](std::vector<CardCharge>& v, int index) -> CardCharge& {
    for (auto& c : v) {
      if (c.index == index) return c;
    }
    v.push_back(CardCharge{index, 0, 0, 0});
    return v.back();
  };
  for (const auto& container : allocation.containers) {
    for (const auto& share : container.cards) {
      if (container.init) {
        CardCharge& c = find(init_max, share.index);
        c.memory_mib = std::max(c.memory_mib, share.memory_mib);
        c.cores = std::max(c.cores, share.cores);
        c.shares = 1;
      } else {
        CardCharge& c = find(app, share.index);
        c.memory_mib += share.memory_mib;
        c.cores += share.cores;
        c.shares += 1;
      }
    }
  }
  for (const auto& i : init_max) {
    CardCharge& c = find(app, i.index);
    c.memory_mib = std::max(c.memory_mib, i.memory_mib);
    c.cores = std::max(c.cores, i.cores);
    c.shares = std::max(c.shares, i.shares);
  }
  std::sort(app.begin(), app.end(), [](const CardCharge& a, const CardCharge& b) { return a.index < b.index; });
  return app;
}

std::string card_indices_text(const Allocation& allocation) {
  std::string out;
  for (const CardCharge& c : charges_of(allocation)) out += (out.empty() ? "" : ",") + std::to_string(c.index);
  return out;
}

const char* isolation_name(CardIsolation isolation) {
  switch (isolation) {
    case CardIsolation::kMps: return "mps";
    case CardIsolation::kHamiCore: return "hami-core";
    case CardIsolation::kMig: return "mig";
    case CardIsolation::kNone: break;
  }
  return "none";
}

bool parse_isolation(std::string_view text, CardIsolation& out) {
  for (CardIsolation i : {CardIsolation::kNone, CardIsolation::kMps, CardIsolation::kHamiCore, CardIsolation::kMig}) {
    if (text == isolation_name(i)) {
      out = i;
      return true;
    }
  }
  return false;
}

}  // namespace fracpack::scheduling
