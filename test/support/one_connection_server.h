// A bare HTTP/1.1 server of one connection on a loopback port, for the
// client's classification of failed requests (k8s/api_client.h:
// last_request_sent): what a real API server does to a connection while it
// restarts, at a moment a test chooses.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace fracpack::testing {

// It answers `answered` requests with 200 and then, on the next one, either
// reads it whole and drops the connection without an answer
// (`then_drop_unanswered`) or, with no further request, closes the idle
// connection. Either way it stops listening once it has accepted: the port
// refuses, as an API server's does while it restarts.
class OneConnectionServer {
 public:
  OneConnectionServer(int answered, bool then_drop_unanswered);
  ~OneConnectionServer();
  OneConnectionServer(const OneConnectionServer&) = delete;
  OneConnectionServer& operator=(const OneConnectionServer&) = delete;

  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }  // requests read whole
  bool closed() const { return closed_.load(); }     // the connection closed by the server

 private:
  void serve(int answered, bool then_drop_unanswered);

  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> closed_{false};
  std::thread thread_;
};

}  // namespace fracpack::testing
