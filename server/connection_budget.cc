#include "server/connection_budget.h"

#include <vector>

namespace fracpack::server {

bool BodyBudget::take(size_t n) {
  int64_t now = held_.load();
  do {
    if (now + static_cast<int64_t>(n) > limit_) return false;
  } while (!held_.compare_exchange_weak(now, now + static_cast<int64_t>(n)));
  return true;
}

ConnectionBudget::Registration ConnectionBudget::add(std::weak_ptr<BudgetedConnection> connection) {
  ++open_;
  std::lock_guard lock(mu_);
  connections_.push_front(std::move(connection));
  return connections_.begin();
}

void ConnectionBudget::remove(Registration registration) {
  --open_;
  std::lock_guard lock(mu_);
  connections_.erase(registration);
}

bool ConnectionBudget::make_room() {
  if (open_.load() < max_) return true;
  // The connection idle the longest goes (its client, if it comes back,
  // reconnects).
  constexpr int64_t kSlack = 16;
  if (open_.load() >= max_ + kSlack) return false;
  for (int tries = 0; tries < 4; ++tries) {
    auto idle = longest_idle();
    if (!idle) return false;
    if (!idle->claim_for_eviction()) continue;  // another accept took it, or it woke up
    idle->close_when_idle(false, true);
    return true;
  }
  return false;
}

std::shared_ptr<BudgetedConnection> ConnectionBudget::longest_idle() const {
  // The connections are copied out first: a copy may be a connection's
  // last owner, and its destructor takes `mu_` (remove).
  std::vector<std::shared_ptr<BudgetedConnection>> live;
  {
    std::lock_guard lock(mu_);
    live.reserve(connections_.size());
    for (const auto& w : connections_) {
      if (auto c = w.lock()) live.push_back(std::move(c));
    }
  }
  std::shared_ptr<BudgetedConnection> best;
  int64_t best_since = INT64_MAX;
  for (auto& c : live) {
    const int64_t since = c->idle_since();
    if (since > 0 && since < best_since) {
      best_since = since;
      best = c;
    }
  }
  return best;
}

void ConnectionBudget::close_all(bool even_if_busy) {
  std::vector<std::shared_ptr<BudgetedConnection>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : connections_) {
      if (auto c = w.lock()) live.push_back(std::move(c));
    }
  }
  for (auto& c : live) c->close_when_idle(even_if_busy);
}

std::string ConnectionBudget::saturation() const {
  const int64_t open = open_.load();
  if (open < max_ || longest_idle() != nullptr) return "";
  return std::to_string(open) + " of " + std::to_string(max_) +
         " connections open (limits.maxConnections), none idle to close for a new one";
}

}  // namespace fracpack::server
