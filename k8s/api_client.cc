#include "k8s/api_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>

#include <fstream>
#include <optional>
#include <sstream>

#include "k8s/objects.h"

namespace fracpack::k8s {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

std::string Endpoint::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + port + base_path;
}

Result<Endpoint> Endpoint::parse(std::string_view url) {
  Endpoint e;
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos) return Error{"server URL \"" + std::string(url) + "\" has no scheme (http:// or https://)"};
  e.scheme = std::string(url.substr(0, sep));
  if (e.scheme != "http" && e.scheme != "https") {
    return Error{"server URL \"" + std::string(url) + "\": scheme must be http or https"};
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    e.base_path = std::string(rest.substr(slash));
    while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  }
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error{"server URL \"" + std::string(url) + "\": unclosed '['"};
    e.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty()) {
      if (authority[0] != ':') return Error{"server URL \"" + std::string(url) + "\": junk after the address"};
      e.port = std::string(authority.substr(1));
    }
  } else {
    const size_t colon = authority.rfind(':');
    e.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) e.port = std::string(authority.substr(colon + 1));
  }
  if (e.host.empty()) return Error{"server URL \"" + std::string(url) + "\" has no host"};
  if (e.port.empty()) e.port = e.tls() ? "443" : "80";
  for (char c : e.port) {
    if (c < '0' || c > '9') return Error{"server URL \"" + std::string(url) + "\": bad port"};
  }
  return e;
}

std::shared_ptr<TokenSource> TokenSource::fixed(std::string token) {
  std::shared_ptr<TokenSource> t(new TokenSource());
  t->token_ = std::move(token);
  t->stale_ = false;
  return t;
}

std::shared_ptr<TokenSource> TokenSource::file(std::string path, std::chrono::seconds refresh) {
  std::shared_ptr<TokenSource> t(new TokenSource());
  t->path_ = std::move(path);
  t->refresh_ = refresh;
  return t;
}

Result<std::string> TokenSource::token() {
  std::lock_guard lock(mu_);
  if (path_.empty()) return token_;
  const auto now = std::chrono::steady_clock::now();
  if (stale_ || now - read_at_ >= refresh_) {
    ++reads_;
    std::ifstream in(path_);  // reopened by path on every read: the kubelet swaps a symlink
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
    size_t b = 0;
    while (b < t.size() && (t[b] == ' ' || t[b] == '\t' || t[b] == '\n')) ++b;
    t.erase(0, b);
    if (in.good() || !t.empty()) {
      if (!t.empty()) {
        token_ = std::move(t);
        read_at_ = now;
        stale_ = false;
      }
    }
    if (token_.empty()) return Error{"cannot read a token from " + path_};
  }
  return token_;
}

void TokenSource::invalidate() {
  std::lock_guard lock(mu_);
  if (!path_.empty()) stale_ = true;
}

int TokenSource::reads() const {
  std::lock_guard lock(mu_);
  return reads_;
}

std::chrono::milliseconds retry_after_delay(const std::string& header) {
  int s = 0;
  for (char c : header) {
    if (c < '0' || c > '9') return std::chrono::milliseconds(0);
    s = s * 10 + (c - '0');
    if (s > 3600) break;
  }
  return std::chrono::milliseconds(int64_t{s} * 1000);
}

std::string api_error_message(const HttpResponse& r) {
  std::string m = status_message(r.body);
  if (m.empty()) {
    m = r.body.substr(0, 200);
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  }
  return "HTTP " + std::to_string(r.status) + (m.empty() ? "" : ": " + m);
}

struct ApiClient::Impl {
  explicit Impl(const ClientConfig& c) : config(c) {
    if (c.endpoint.tls()) {
      ssl = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    }
  }

  Status setup_tls() {
    if (!ssl || tls_ready) return Status::Ok();
    error_code ec;
    const TlsOptions& t = config.tls;
    if (t.insecure_skip_verify) {
      ssl->set_verify_mode(asio::ssl::verify_none);
    } else {
      if (!t.ca_pem.empty()) {
        ssl->add_certificate_authority(asio::buffer(t.ca_pem), ec);
        if (ec) return Error{"cannot load the CA certificate: " + ec.message()};
      } else {
        ssl->set_default_verify_paths(ec);
        if (ec) return Error{"cannot load the system's CA certificates: " + ec.message()};
      }
      ssl->set_verify_mode(asio::ssl::verify_peer);
      ssl->set_verify_callback(
          asio::ssl::host_name_verification(t.server_name.empty() ? config.endpoint.host : t.server_name));
    }
    if (!t.client_cert_pem.empty()) {
      ssl->use_certificate_chain(asio::buffer(t.client_cert_pem), ec);
      if (ec) return Error{"cannot load the client certificate: " + ec.message()};
      ssl->use_private_key(asio::buffer(t.client_key_pem), asio::ssl::context::pem, ec);
      if (ec) return Error{"cannot load the client key: " + ec.message()};
    }
    tls_ready = true;
    return Status::Ok();
  }

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *tcp; }
  bool open() const { return (tcp && tcp->socket().is_open()) || (tls && beast::get_lowest_layer(*tls).socket().is_open()); }

  // Whether the kept-alive connection can carry the next request: the
  // server has sent nothing since its last answer. An API server that stops
  // (a restart) closes its idle connections: the socket has then seen the
  // FIN (recv gives 0) or a reset, and a request written there is never
  // read. Found so here, the connection is dropped before a byte is sent,
  // so the request goes out on a fresh connection, or is known never to
  // have left (Go's transport does the same: errServerClosedIdle). Bytes
  // the server sent unasked (HTTP/1.1 has none; a TLS close_notify) or left
  // in our buffers also end the connection.
  bool reusable() {
    if (!open() || buffer.size() != 0) return false;
    if (tls && SSL_pending(tls->native_handle()) > 0) return false;
    char byte;
    const ssize_t n = ::recv(lowest().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  // Runs the io_context until the started operation completes.
  void run() {
    ioc.restart();
    ioc.run();
  }

  std::string where() const { return config.endpoint.url(); }

  // A fresh connection; on any failure none is left open (a socket whose
  // connect or handshake failed must not be reused for the next request:
  // it would fail again as "SSL routines::uninitialized").
  Status connect() {
    Status s = open_connection();
    if (!s.ok()) close();
    return s;
  }

  Status open_connection() {
    if (Status s = setup_tls(); !s.ok()) return s;
    tcp.reset();
    tls.reset();
    buffer.clear();
    // Beast reads at most the buffer's free capacity (down to 512 bytes) per
    // system call: a small buffer turns a gigabyte list into millions of reads.
    buffer.reserve(kReadBuffer);
    tcp::resolver resolver(ioc);
    error_code ec;
    tcp::resolver::results_type endpoints;
    resolver.async_resolve(config.endpoint.host, config.endpoint.port,
                           [&](error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             endpoints = std::move(r);
                           });
    run();
    if (ec) return Error{"cannot resolve " + config.endpoint.host + ": " + ec.message()};
    if (ssl) {
      tls.emplace(ioc, *ssl);
    } else {
      tcp.emplace(ioc);
    }
    lowest().expires_after(config.connect_timeout);
    lowest().async_connect(endpoints, [&](error_code e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec) return Error{"cannot connect to " + where() + ": " + describe(ec, config.connect_timeout)};
    lowest().socket().set_option(tcp::no_delay(true), ec);  // no Nagle delay on small requests
    if (tls) {
      const std::string& sni = config.tls.server_name.empty() ? config.endpoint.host : config.tls.server_name;
      // SSL_set_tlsext_host_name, without its C cast.
      if (SSL_ctrl(tls->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   const_cast<char*>(sni.c_str())) != 1) {
        return Error{"cannot set the TLS server name " + sni};
      }
      lowest().expires_after(config.connect_timeout);
      tls->async_handshake(asio::ssl::stream_base::client, [&](error_code e) { ec = e; });
      run();
      if (ec) return Error{"TLS handshake with " + where() + " failed: " + describe(ec, config.connect_timeout)};
    }
    return Status::Ok();
  }

  static std::string describe(const error_code& ec, std::chrono::milliseconds t) {
    if (ec == beast::error::timeout) return "timed out after " + std::to_string(t.count()) + " ms";
    std::string m = ec.message();
    if (ec.category() == asio::error::get_ssl_category()) {
      char buf[256];
      ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof buf);
      m = buf;
    }
    return m;
  }

  void close() {
    error_code ec;
    if (tcp) tcp->socket().close(ec);
    if (tls) beast::get_lowest_layer(*tls).socket().close(ec);
    tcp.reset();
    tls.reset();
    buffer.clear();
  }

  template <class Fn>
  void with_stream(Fn&& fn) {
    if (tls) {
      fn(*tls);
    } else {
      fn(*tcp);
    }
  }

  http::request<http::string_body> make_request(http::verb verb, std::string_view target, std::string_view body,
                                                std::string_view content_type, Status& status) {
    http::request<http::string_body> req{verb, config.endpoint.base_path + std::string(target), 11};
    req.set(http::field::host, config.endpoint.host);
    req.set(http::field::user_agent, config.user_agent);
    req.set(http::field::accept, "application/json");
    // Like client-go, send a bearer token only over TLS.
    if (config.token && config.endpoint.tls()) {
      auto t = config.token->token();
      if (!t) {
        status = Error{t.message()};
      } else {
        req.set(http::field::authorization, "Bearer " + *t);
      }
    }
    if (!body.empty() || verb == http::verb::post || verb == http::verb::patch || verb == http::verb::put) {
      req.set(http::field::content_type, content_type);
      req.body() = std::string(body);
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }

  static constexpr size_t kReadBuffer = 1 << 20;
  const ClientConfig& config;
  asio::io_context ioc;
  std::unique_ptr<asio::ssl::context> ssl;
  bool tls_ready = false;
  std::optional<beast::tcp_stream> tcp;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
};

ApiClient::ApiClient(ClientConfig config) : config_(std::move(config)), impl_(std::make_unique<Impl>(config_)) {}
ApiClient::~ApiClient() { impl_->close(); }

void ApiClient::close() { impl_->close(); }

void ApiClient::cancel() {
  asio::post(impl_->ioc, [this] {
    error_code ec;
    if (impl_->tcp) impl_->tcp->socket().close(ec);
    if (impl_->tls) beast::get_lowest_layer(*impl_->tls).socket().close(ec);
  });
}

namespace {

bool retryable(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::ssl::error::stream_truncated;
}

}  // namespace

Result<HttpResponse> ApiClient::request(std::string_view method, std::string_view target, std::string_view body,
                                        std::string_view content_type, std::chrono::milliseconds timeout) {
  Impl& m = *impl_;
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) return Error{"unknown HTTP method " + std::string(method)};
  if (timeout.count() == 0) timeout = config_.request_timeout;
  const std::string what = std::string(method) + " " + std::string(target);
  // Whether the request left the client is decided here and only here
  // (last_request_sent): it has once the whole request was written to a
  // connection that looked alive. Every failure before that is a known
  // "not sent": no address, no connection (refused, timed out), a failed
  // TLS handshake, no token, a kept-alive connection the server had already
  // closed (reusable), a write that failed (the server holds at most part
  // of the request, which it never acts on). A failure after it (no answer,
  // a cut answer) may follow a request the server applied: outcome unknown.
  // A retry on a fresh connection keeps the first attempt's "sent".
  last_sent_ = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = m.open();
    if (reused && !m.reusable()) {
      m.close();
      reused = false;
    }
    if (!reused) {
      if (Status s = m.connect(); !s.ok()) return Error{what + ": " + s.message()};
    }
    Status st;
    auto req = m.make_request(verb, target, body, content_type, st);
    if (!st.ok()) return Error{what + ": " + st.message()};
    error_code ec;
    m.lowest().expires_after(timeout);
    m.with_stream([&](auto& s) { http::async_write(s, req, [&](error_code e, size_t) { ec = e; }); });
    m.run();
    if (ec) {
      m.close();
      if (reused && retryable(ec)) continue;
      return Error{what + ": " + Impl::describe(ec, timeout)};
    }
    // Written whole: from here on the server may act on it.
    last_sent_ = true;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 31);
    m.lowest().expires_after(timeout);
    m.with_stream([&](auto& s) { http::async_read(s, m.buffer, parser, [&](error_code e, size_t) { ec = e; }); });
    m.run();
    if (ec) {
      const bool nothing_read = !parser.got_some();
      m.close();
      if (reused && nothing_read && retryable(ec)) continue;
      return Error{what + ": " + Impl::describe(ec, timeout)};
    }
    auto res = parser.release();
    HttpResponse out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    out.content_type = std::string(res[http::field::content_type]);
    out.retry_after = std::string(res[http::field::retry_after]);
    if (!res.keep_alive()) m.close();
    if (out.status == 401 && config_.token) config_.token->invalidate();
    return out;
  }
  return Error{what + ": the connection was closed twice in a row"};
}

Result<int> ApiClient::stream(std::string_view target, std::chrono::milliseconds idle_timeout, const HeadHandler& on_head,
                              const DataHandler& on_data) {
  Impl& m = *impl_;
  const std::string what = "GET " + std::string(target);
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = m.open();
    if (reused && !m.reusable()) {
      m.close();
      reused = false;
    }
    if (!reused) {
      if (Status s = m.connect(); !s.ok()) return Error{what + ": " + s.message()};
    }
    Status st;
    auto req = m.make_request(http::verb::get, target, {}, {}, st);
    if (!st.ok()) return Error{what + ": " + st.message()};
    error_code ec;
    m.lowest().expires_after(config_.request_timeout);
    m.with_stream([&](auto& s) { http::async_write(s, req, [&](error_code e, size_t) { ec = e; }); });
    m.run();
    if (ec) {
      m.close();
      if (reused && retryable(ec)) continue;
      return Error{what + ": " + Impl::describe(ec, config_.request_timeout)};
    }
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    m.lowest().expires_after(idle_timeout);
    m.with_stream([&](auto& s) { http::async_read_header(s, m.buffer, parser, [&](error_code e, size_t) { ec = e; }); });
    m.run();
    if (ec) {
      const bool nothing_read = !parser.got_some();
      m.close();
      if (reused && nothing_read && retryable(ec)) continue;
      return Error{what + ": " + Impl::describe(ec, idle_timeout)};
    }
    const int status = static_cast<int>(parser.get().result_int());
    if (status == 401 && config_.token) config_.token->invalidate();
    if (Status s = on_head(status, std::string(parser.get()[http::field::retry_after])); !s.ok()) {
      m.close();
      return Error{s.message()};
    }
    static thread_local std::vector<char> chunk(1 << 16);
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      m.lowest().expires_after(idle_timeout);
      // read_some: hand over whatever arrived (a watch event is small; a
      // full read would wait for 64 KiB).
      m.with_stream([&](auto& s) { http::async_read_some(s, m.buffer, parser, [&](error_code e, size_t) { ec = e; }); });
      m.run();
      const size_t got = chunk.size() - parser.get().body().size;
      if (got > 0) {
        if (Status s = on_data(std::string_view(chunk.data(), got)); !s.ok()) {
          m.close();
          return Error{s.message()};
        }
      }
      if (ec == http::error::need_buffer) continue;
      if (ec) {
        m.close();
        return Error{what + ": " + Impl::describe(ec, idle_timeout)};
      }
    }
    if (!parser.keep_alive()) m.close();
    return status;
  }
  return Error{what + ": the connection was closed twice in a row"};
}

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace fracpack::k8s
