// One HTTP/1.1 connection of the server (after Beast's advanced async
// server example): a session object per connection, living as long as its
// pending operation, on its own strand. It reads a request (the header by
// hand, to see its raw bytes; the body through Beast's parser, or straight
// into its buffer when large), refuses bad framing and what passes the
// limits, hands the request to the handler, writes the answer, and keeps
// the connection alive or closes it. It knows nothing of the application:
// a request is a method, a target, headers it needs and a padded body.
//
// Limits protect the process from its clients: a request body larger than
// the limit gets 413, headers larger than 16 KiB 431, a malformed request
// or refused framing 400 (server/http_framing.h), a body that would pass
// the in-flight budget 503 (server/connection_budget.h), and a client that
// sends its headers or body too slowly, or stays idle between requests, is
// disconnected (slow clients hold a socket and a few kilobytes, never a
// thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "server/connection_budget.h"
#include "server/http_server.h"

namespace fracpack::server {

// What the sessions of one server share with it. A session holds it through
// a pointer that owns the whole server state (http_server.cc): the
// io_context its socket belongs to lives as long as the session, however
// long a Reply keeps the session after the server is gone.
struct SessionShared {
  SessionShared(HttpOptions o, Handler h)
      : options(std::move(o)),
        handler(std::move(h)),
        body_budget(options.max_body_bytes_in_flight),
        connection_budget(options.max_connections) {}

  const HttpOptions options;
  const Handler handler;
  BodyBudget body_budget;
  ConnectionBudget connection_budget;
  struct Counts {
    std::atomic<uint64_t> connections{0}, refused{0}, evicted{0}, busy{0}, requests{0}, bad_requests{0}, timeouts{0},
        tls_failures{0}, tls_reloads{0};
    std::atomic<int64_t> in_flight{0};
  } counts;
  std::atomic<bool> draining{false};  // no new request is read; answers close their connection
  std::atomic<bool> stopped{false};   // nobody runs the io_context any more

  HttpCounters counters() const;
};

// Starts a session on an accepted `socket` (TLS when `tls` is set: the
// context its handshake uses, kept by the session however often the
// certificate is reloaded meanwhile).
void start_http_session(std::shared_ptr<SessionShared> shared, boost::asio::ip::tcp::socket socket, std::string remote,
                        std::shared_ptr<boost::asio::ssl::context> tls);

}  // namespace fracpack::server
