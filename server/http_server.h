// The HTTP/1.1 server kube-scheduler talks to (Boost.Beast, after its
// advanced async server example): it listens, accepts and starts one
// session per connection (server/http_session.h: the read and write state
// machine, its limits and framing checks), on several io threads, with
// keep-alive and TCP_NODELAY; optional TLS, the certificate reloaded when
// its files change (server/reloading_tls_context.h). Two budgets are shared
// by all connections (server/connection_budget.h): request bodies held at
// once, in bytes, and the connection cap, at which the connection idle the
// longest makes room for a new one; only when every connection is busy is a
// new one refused, and saturation() says so (the extender's /readyz).
//
// The transport knows nothing of the application. Handlers get a request
// whose body carries the padding a JSON parser reads past its end
// (PaddedString, common/json/padded_text.h), run on an io thread and answer
// through a Reply, at once or later from any thread (the bind path waits
// for the API server elsewhere).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json/padded_text.h"
#include "common/result.h"

namespace fracpack::server {

struct HttpRequest {
  std::string method;  // "POST"
  std::string target;  // "/scheduler/filter?x=1"
  PaddedString body;  // with the padding a JSON parser reads past its end (server/padded_body.h)
  std::string content_type;
  std::string remote;  // "10.0.0.1:41234"
  // When its header had been read: deadlines that kube-scheduler counts from
  // its send count from here, not from when a busy io thread got to it.
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

  // The target without its query string.
  std::string_view path() const { return std::string_view(target).substr(0, target.find('?')); }
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_, std::string body_, std::string content_type_ = "application/json")
      : status(status_), body(std::move(body_)), content_type(std::move(content_type_)) {}
  int status = 200;
  std::string body;
  // When set, the body instead, written without a copy (a reply a cache
  // keeps and answers many requests with).
  std::shared_ptr<const std::string> shared_body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

using Reply = std::function<void(HttpResponse)>;
using Handler = std::function<void(HttpRequest&&, Reply)>;

struct HttpOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8888;  // 0: any free port (tests)
  int threads = 2;
  size_t max_body_bytes = 64 << 20;
  size_t max_connections = 1024;
  size_t max_body_bytes_in_flight = 256 << 20;  // request bodies held at once, over all connections
  std::chrono::milliseconds header_timeout{10000};  // the whole header, from its first byte
  std::chrono::milliseconds body_timeout{30000};    // the whole body
  std::chrono::milliseconds idle_timeout{120000};   // between requests on a kept-alive connection
  std::chrono::milliseconds write_timeout{30000};
  // TLS: both set -> every connection is TLS. The files are re-read when
  // their modification time changes (checked every tls_reload).
  std::string cert_file;
  std::string key_file;
  // With TLS: require a client certificate signed by this CA (PEM), as
  // kube-scheduler presents with tlsConfig.certFile/keyFile. "" = none asked.
  std::string client_ca_file;
  std::chrono::milliseconds tls_reload{10000};
};

struct HttpCounters {
  uint64_t connections = 0;       // accepted
  uint64_t refused = 0;           // over max_connections, none idle to close
  uint64_t evicted = 0;           // idle connections closed to make room for a new one
  uint64_t busy = 0;              // requests answered 503: their body would pass the in-flight budget
  uint64_t requests = 0;
  uint64_t bad_requests = 0;      // 400/413/431 answered by the server itself
  uint64_t timeouts = 0;          // connections closed for slowness or idleness
  uint64_t tls_failures = 0;      // handshakes that failed
  uint64_t tls_reloads = 0;       // certificate changes picked up
  int64_t open_connections = 0;
  int64_t in_flight = 0;          // requests handed to the handler, not yet answered
  int64_t body_bytes = 0;         // request bodies held now (received or being received)
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the io threads. Errors name the address or
  // the certificate file.
  Status start();
  uint16_t port() const;
  // Graceful: stops accepting, lets in-flight requests finish (up to
  // `grace`), closes idle keep-alive connections, then stops.
  void drain(std::chrono::milliseconds grace);
  // Immediate.
  void stop();

  HttpCounters counters() const;
  // "" while a new connection can be served; else why not (every
  // connection open and busy).
  std::string saturation() const;


 private:
  struct Impl;  // the listener and the state its sessions share (http_server.cc)
  std::shared_ptr<Impl> impl_;
};

}  // namespace fracpack::server
