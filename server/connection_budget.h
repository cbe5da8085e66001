// The two budgets every connection of one HTTP server shares.
//
// BodyBudget: request bodies held at once (being received or handled),
// in bytes, charged as they arrive: a body that would pass it is refused
// (503), so memory is never connections x body limit.
//
// ConnectionBudget: the connections open, against the cap. At the cap, the
// connection idle the longest (between requests, before its first, or in
// its TLS handshake) is closed to make room for a new one: clients that
// connect and idle cannot lock out kube-scheduler; only when every
// connection is busy is a new one refused, and saturation() says so (the
// extender's /readyz).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>

namespace fracpack::server {

class BodyBudget {
 public:
  explicit BodyBudget(size_t limit_bytes) : limit_(static_cast<int64_t>(limit_bytes)) {}
  // Takes `n` bytes; false (nothing taken) if they would pass the budget.
  bool take(size_t n);
  void give_back(size_t n) { held_ -= static_cast<int64_t>(n); }
  int64_t held() const { return held_.load(); }
  size_t limit() const { return static_cast<size_t>(limit_); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

// A connection as the budget sees it (the HTTP session).
class BudgetedConnection {
 public:
  virtual ~BudgetedConnection() = default;
  // From any thread: closes the connection unless a request is being
  // received or handled (drain, stop, and making room at the cap).
  // `evicting`: to make room at the cap (counted when it closes).
  virtual void close_when_idle(bool even_if_busy, bool evicting = false) = 0;
  // Since when the connection has waited for a request or for its TLS
  // handshake (steady clock, ns); 0 while one is being received or
  // handled, -1 once claimed for eviction.
  virtual int64_t idle_since() const = 0;
  // Takes an idle connection for eviction; false if another accept took it
  // first or it is busy (each eviction closes a different connection).
  virtual bool claim_for_eviction() = 0;
};

class ConnectionBudget {
 public:
  explicit ConnectionBudget(size_t max_connections) : max_(static_cast<int64_t>(max_connections)) {}

  using Registration = std::list<std::weak_ptr<BudgetedConnection>>::iterator;
  // A connection opens (counted until it is removed).
  Registration add(std::weak_ptr<BudgetedConnection> connection);
  void remove(Registration registration);
  int64_t open() const { return open_.load(); }

  // Whether a new connection may be served: under the cap, or the
  // connection idle the longest was claimed and is being closed for it
  // (then a little past the cap while it closes; never more than a few).
  bool make_room();
  // Closes every connection (but those busy unless `even_if_busy`).
  void close_all(bool even_if_busy);
  // "" while a new connection can be served; else why not.
  std::string saturation() const;

 private:
  // The connection that has waited longest for a request (null if none waits).
  std::shared_ptr<BudgetedConnection> longest_idle() const;

  const int64_t max_;
  std::atomic<int64_t> open_{0};
  mutable std::mutex mu_;  // guards connections_
  std::list<std::weak_ptr<BudgetedConnection>> connections_;
};

}  // namespace fracpack::server
