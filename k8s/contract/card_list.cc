#include "k8s/contract/card_list.h"

#include <algorithm>

#include "k8s/contract/kubernetes_rules.h"

namespace fracpack::k8s {

Status check_cards(scheduling::NodeSpec& spec, const std::string& who, const std::string& source) {
  auto& cards = spec.cards;
  if (cards.size() > 64) return Error{who + ": " + source + ": more than 64 cards"};
  std::sort(cards.begin(), cards.end(), [](const scheduling::Card& a, const scheduling::Card& b) { return a.index < b.index; });
  for (size_t i = 1; i < cards.size(); ++i) {
    if (cards[i].index == cards[i - 1].index) {
      return Error{who + ": " + source + ": card index " + std::to_string(cards[i].index) + " appears twice"};
    }
  }
  for (size_t i = 0; i < cards.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (!cards[i].uuid.empty() && cards[i].uuid == cards[j].uuid) {
        return Error{who + ": " + source + ": uuid " + cards[i].uuid + " appears twice"};
      }
    }
  }
  return Status::Ok();
}

Status apply_cordons(scheduling::NodeSpec& spec, std::string_view text, const std::string& who, const std::string& annotation) {
  for (const std::string& entry : split_list(text, ',')) {
    const bool digits = std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
    bool matched = false;
    for (scheduling::Card& c : spec.cards) {
      if ((!c.uuid.empty() && c.uuid == entry) || (digits && std::to_string(c.index) == entry)) {
        c.cordoned = true;
        matched = true;
      }
    }
    if (!matched) {
      return Error{who + ": annotation " + annotation + ": \"" + entry + "\" is neither a card's UUID nor its index"};
    }
  }
  return Status::Ok();
}

}  // namespace fracpack::k8s
