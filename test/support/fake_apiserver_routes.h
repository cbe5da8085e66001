// The test API server's routes (test/support/fake_apiserver.h): a request,
// already read by the transport, to an answer from the store — discovery
// and /version for kubectl, LIST, GET, the Binding, create, merge patch,
// delete — or to "stream a watch" (the transport streams it). Injected
// faults that answer a request (401, 429, 409, 500, a dropped answer) are
// decided here; those that shape a stream, by the transport.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "test/support/fake_apiserver_store.h"

namespace fracpack::testing::fake {

// Takes one from a counted fault ("the next N ..."); false when none is left.
bool consume(std::atomic<int>& counter);

// Draws for the standing faults that strike at random (seeded).
class Dice {
 public:
  // True this time with probability permille / 1000.
  bool draw(const std::atomic<int>& permille);

 private:
  std::mutex mu_;
  std::mt19937_64 rng_{20261124};
};

// FAKE_APISERVER_TRACE: a line on stderr per request and watch.
bool trace();

struct Request {
  std::string method;
  std::string target;  // path and query as sent
  std::string path;
  std::map<std::string, std::string> query;  // decoded
  std::string body;
  std::string authorization;
  std::string content_type;
};

struct Route {
  Response response;
  bool watch = false;  // stream a watch of kind/ns instead
  bool drop = false;   // close the connection without answering
  std::string kind, ns;
};

class FakeRoutes {
 public:
  FakeRoutes(FakeStore& store, Faults& faults, Dice& dice, const FakeApiServerOptions& options)
      : store_(store), faults_(faults), dice_(dice), options_(options) {}
  void set_port(uint16_t port) { port_ = port; }

  Route route(const Request& request);

  // Requests whose "METHOD path?query-shape" starts with prefix (see FakeApiServer::requests).
  int requests(const std::string& prefix) const;
  std::vector<std::string> request_log() const;
  std::string last_authorization() const;

 private:
  Response bind(const std::string& ns, const std::string& name, const std::string& body);

  FakeStore& store_;
  Faults& faults_;
  Dice& dice_;
  const FakeApiServerOptions& options_;
  uint16_t port_ = 0;
  mutable std::mutex log_mu_;
  std::map<std::string, int> request_counts_;
  std::deque<std::string> request_log_;
  std::string last_authorization_;
};

}  // namespace fracpack::testing::fake
