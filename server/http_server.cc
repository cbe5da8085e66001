// The listener and the server's lifecycle: binds, accepts (making room at
// the connection cap), starts a session per connection (http_session.cc),
// reloads the TLS context on a timer, drains and stops.
#include "server/http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <optional>
#include <thread>

#include "server/http_session.h"
#include "server/reloading_tls_context.h"

namespace fracpack::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(HttpOptions o, Handler h) : shared(std::move(o), std::move(h)) {
    if (tls_enabled()) tls.emplace(options().cert_file, options().key_file, options().client_ca_file);
  }

  // Declared before the io_context: sessions destroyed with it still count.
  SessionShared shared;
  std::optional<ReloadingTlsContext> tls;  // when TLS is configured

  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  // The acceptor and the reload timer live on one strand: their handlers,
  // and the closes that drain() and stop() post, run one at a time on
  // whichever I/O thread (TSan saw drain's and stop's closes of the
  // acceptor race on two threads).
  asio::strand<asio::io_context::executor_type> control{asio::make_strand(ioc)};
  tcp::acceptor acceptor{control};
  asio::steady_timer reload_timer{control};
  std::vector<std::thread> threads;

  const HttpOptions& options() const { return shared.options; }
  bool tls_enabled() const { return !options().cert_file.empty(); }

  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void schedule_reload();
};

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc),
                        [self = shared_from_this()](error_code ec, tcp::socket socket) { self->on_accept(ec, std::move(socket)); });
}

void HttpServer::Impl::on_accept(error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
  if (!ec) {
    ++shared.counts.connections;
    error_code ignored;
    if (!shared.connection_budget.make_room()) {
      ++shared.counts.refused;
      socket.close(ignored);
    } else {
      socket.set_option(tcp::no_delay(true), ignored);  // no Nagle delay between headers and body
      std::string remote;
      auto ep = socket.remote_endpoint(ignored);
      if (!ignored) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
      // The session owns the whole server state through its part (the
      // io_context its socket belongs to included).
      start_http_session(std::shared_ptr<SessionShared>(shared_from_this(), &shared), std::move(socket), std::move(remote),
                         tls ? tls->current() : nullptr);
    }
  }
  if (!shared.draining) accept();
}

void HttpServer::Impl::schedule_reload() {
  reload_timer.expires_after(options().tls_reload);
  reload_timer.async_wait([self = shared_from_this()](error_code ec) {
    if (ec) return;
    if (self->tls->reload_if_changed()) ++self->shared.counts.tls_reloads;
    self->schedule_reload();
  });
}

HttpServer::HttpServer(HttpOptions options, Handler handler)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  Impl& m = *impl_;
  const HttpOptions& o = m.options();
  if (m.tls) {
    if (Status s = m.tls->load(); !s.ok()) return s;
  }
  error_code ec;
  const auto address = asio::ip::make_address(o.address, ec);
  if (ec) return Error{"listen address \"" + o.address + "\": " + ec.message()};
  const tcp::endpoint endpoint(address, o.port);
  const std::string where = o.address + ":" + std::to_string(o.port);
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on " + where + ": " + ec.message()};
  m.work.emplace(m.ioc.get_executor());
  m.accept();
  if (m.tls && o.tls_reload.count() > 0) m.schedule_reload();
  const int n = std::max(1, o.threads);
  for (int i = 0; i < n; ++i) m.threads.emplace_back([&m] { m.ioc.run(); });
  return Status::Ok();
}

uint16_t HttpServer::port() const {
  error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void HttpServer::drain(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  if (m.threads.empty()) return;
  m.shared.draining = true;
  asio::post(m.control, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
  });
  m.shared.connection_budget.close_all(false);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline &&
         (m.shared.counts.in_flight.load() > 0 || m.shared.connection_budget.open() > 0)) {
    m.shared.connection_budget.close_all(false);  // connections that went idle since
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
}

void HttpServer::stop() {
  Impl& m = *impl_;
  if (m.threads.empty()) return;
  m.shared.stopped = true;
  m.shared.draining = true;
  asio::post(m.control, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
    m.reload_timer.cancel();
  });
  m.shared.connection_budget.close_all(true);
  m.work.reset();
  // Let the sessions wind down (their operations fail at once), then stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!m.ioc.stopped() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m.ioc.stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
}

HttpCounters HttpServer::counters() const { return impl_->shared.counters(); }

std::string HttpServer::saturation() const { return impl_->shared.connection_budget.saturation(); }

}  // namespace fracpack::server
