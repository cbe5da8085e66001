#include "server/http_server.h"

#include "common/error_body.h"

#include <sys/stat.h>

#include <atomic>
#include <boost/asio/read.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <array>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

namespace fracpack::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr size_t kHeaderLimit = 16 << 10;
constexpr size_t kReadBytes = 64 << 10;  // one read of a header (and what follows it)
constexpr size_t kDirectBodyBytes = 256 << 10;  // bodies this large bypass the HTTP parser (see on_header)
// Read, and charged to the in-flight budget, a step at a time: a client
// that announces a body and sends little of it holds one step. 128 KiB x
// the 1 024 connections of the default cap is half the default budget.
constexpr size_t kDirectStep = 128 << 10;
constexpr size_t kLingerBytes = 4 << 20;        // after a refusal, what is drained before closing ...
constexpr auto kLinger = std::chrono::seconds(2);  // ... and for how long at most
constexpr size_t kBodyPadding = PaddedText::kPadding;  // a parser reads past the end (HttpRequest::padded_body)

std::string describe(const error_code& ec) { return ec.message(); }

// Modification time of a file, 0 if it cannot be read.
int64_t mtime_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

Result<std::shared_ptr<ssl::context>> make_tls_context(const std::string& cert, const std::string& key, const std::string& client_ca) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) return Error{"TLS certificate " + cert + ": " + describe(ec)};
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  if (ec) return Error{"TLS key " + key + ": " + describe(ec)};
  if (!client_ca.empty()) {
    // Mutual TLS (kube-scheduler's tlsConfig.certFile/keyFile): a client
    // without a certificate signed by this CA fails the handshake.
    ctx->load_verify_file(client_ca, ec);
    if (ec) return Error{"TLS client CA " + client_ca + ": " + describe(ec)};
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return Error{"TLS client CA " + client_ca + ": " + describe(ec)};
  }
  return ctx;
}

}  // namespace

class SessionBase {
 public:
  virtual ~SessionBase() = default;
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

namespace {
int64_t steady_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(HttpOptions o, Handler h) : options(std::move(o)), handler(std::move(h)) {}

  // Declared before the io_context: sessions destroyed with it still count.
  HttpOptions options;
  Handler handler;
  std::atomic<uint64_t> connections{0}, refused{0}, evicted{0}, busy{0}, requests{0}, bad_requests{0}, timeouts{0},
      tls_failures{0}, tls_reloads{0};
  std::atomic<int64_t> open_connections{0}, in_flight{0}, body_bytes{0};
  std::atomic<bool> draining{false};
  mutable std::mutex mu;  // guards stopped, sessions, tls
  bool stopped = false;
  std::list<std::weak_ptr<SessionBase>> sessions;
  std::shared_ptr<ssl::context> tls;
  int64_t cert_mtime = 0, key_mtime = 0, ca_mtime = 0;

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

  bool tls_enabled() const { return !options.cert_file.empty(); }
  std::shared_ptr<ssl::context> tls_context() {
    std::lock_guard lock(mu);
    return tls;
  }

  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void schedule_reload();
  void reload_tls();
  std::list<std::weak_ptr<SessionBase>>::iterator add_session(std::weak_ptr<SessionBase> s) {
    std::lock_guard lock(mu);
    sessions.push_front(std::move(s));
    return sessions.begin();
  }
  void remove_session(std::list<std::weak_ptr<SessionBase>>::iterator it) {
    std::lock_guard lock(mu);
    sessions.erase(it);
  }
  // Takes `n` bytes of the in-flight body budget; false if they would pass it.
  bool reserve_body(size_t n) {
    const auto limit = static_cast<int64_t>(options.max_body_bytes_in_flight);
    int64_t now = body_bytes.load();
    do {
      if (now + static_cast<int64_t>(n) > limit) return false;
    } while (!body_bytes.compare_exchange_weak(now, now + static_cast<int64_t>(n)));
    return true;
  }
  // The connection that has waited longest for a request (null if none waits).
  std::shared_ptr<SessionBase> longest_idle() const {
    // The sessions are copied out first: a copy may be a session's last
    // owner, and its destructor takes `mu`.
    std::vector<std::shared_ptr<SessionBase>> live;
    {
      std::lock_guard lock(mu);
      live.reserve(sessions.size());
      for (const auto& w : sessions) {
        if (auto s = w.lock()) live.push_back(std::move(s));
      }
    }
    std::shared_ptr<SessionBase> best;
    int64_t best_since = INT64_MAX;
    for (auto& s : live) {
      const int64_t since = s->idle_since();
      if (since > 0 && since < best_since) {
        best_since = since;
        best = s;
      }
    }
    return best;
  }
  void close_sessions(bool even_if_busy) {
    std::vector<std::shared_ptr<SessionBase>> live;
    {
      std::lock_guard lock(mu);
      for (auto& w : sessions) {
        if (auto s = w.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->close_when_idle(even_if_busy);
  }
};

namespace {

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  // `tls` (with TLS): the context the stream uses, kept alive by the session
  // however often the certificate is reloaded meanwhile.
  Session(std::shared_ptr<HttpServer::Impl> server, tcp::socket socket, std::string remote, std::shared_ptr<ssl::context> tls)
      : server_(std::move(server)), tls_(std::move(tls)), stream_(make_stream(std::move(socket), tls_)), remote_(std::move(remote)) {
    ++server_->open_connections;
  }
  ~Session() override {
    release_body();
    --server_->open_connections;
    server_->remove_session(registration_);
  }

  int64_t idle_since() const override { return idle_since_.load(std::memory_order_relaxed); }

  void start() {
    registration_ = server_->add_session(this->weak_from_this());
    if constexpr (kTls) {
      // A handshake that stalls is as idle as a request that does not
      // come: the connection may be evicted at the cap.
      idle_ = true;
      idle_since_ = steady_ns();
      lowest().expires_after(server_->options.header_timeout);
      stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](error_code ec) {
        if (ec) {
          ++self->server_->tls_failures;
          return;
        }
        self->read_header();
      });
    } else {
      read_header();
    }
  }

  bool claim_for_eviction() override {
    int64_t since = idle_since_.load();
    while (since > 0) {
      if (idle_since_.compare_exchange_weak(since, -1)) return true;
    }
    return false;
  }

  void close_when_idle(bool even_if_busy, bool evicting) override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this(), even_if_busy, evicting] {
      if (self->idle_ || even_if_busy) {
        if (evicting) ++self->server_->evicted;
        self->closing_ = true;
        error_code ignored;
        self->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        self->lowest().close();
      }
    });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  static Stream make_stream(tcp::socket socket, const std::shared_ptr<ssl::context>& tls) {
    if constexpr (kTls) {
      return Stream(beast::tcp_stream(std::move(socket)), *tls);
    } else {
      (void)tls;
      return Stream(std::move(socket));
    }
  }

  void read_header() {
    if (closing_ || server_->draining) return close();
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(server_->options.max_body_bytes);
    idle_ = true;
    idle_since_ = steady_ns();
    // The first request's headers must come within the header timeout; on a
    // kept-alive connection, waiting for the next request and receiving its
    // headers share the idle timeout.
    lowest().expires_after(first_ ? server_->options.header_timeout : server_->options.idle_timeout);
    read_header_part();
  }

  // The header is read here rather than by http::async_read_header so that
  // its raw bytes are seen before the parser: Beast unfolds obsolete line
  // folding (a line starting with a space continues the last field), which
  // RFC 9112 §5.2 lets a server do or refuse; on_header refuses it (400), as
  // it refuses the other framing fracpack's clients never send.
  void read_header_part() {
    if (buffer_.size() > 0) {
      const std::string_view raw(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      const size_t end = raw.find("\r\n\r\n");
      if (end != std::string_view::npos || raw.size() > kHeaderLimit) {
        folded_ = end != std::string_view::npos && has_obs_fold(raw.substr(0, end + 2));
        error_code ec;
        const size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec != http::error::need_more) return on_header(ec);
        if (parser_->is_header_done()) return on_header({});
      }
    }
    stream_.async_read_some(buffer_.prepare(kReadBytes), [self = this->shared_from_this()](error_code ec, size_t n) {
                              if (ec) return self->on_header(ec);
                              self->buffer_.commit(n);
                              self->read_header_part();
                            });
  }

  // CRLF then a space or a tab inside the header block: a continuation line.
  static bool has_obs_fold(std::string_view head) {
    for (size_t i = head.find("\r\n"); i != std::string_view::npos && i + 2 < head.size(); i = head.find("\r\n", i + 2)) {
      if (head[i + 2] == ' ' || head[i + 2] == '\t') return true;
    }
    return false;
  }

  void on_header(error_code ec) {
    idle_ = false;
    idle_since_ = 0;
    first_ = false;
    arrived_ = std::chrono::steady_clock::now();  // the request's deadlines count from here
    if (ec) return on_read_error(ec);
    const std::string why = folded_ ? "a folded header line (obsolete line folding, RFC 9112 section 5.2)" : framing_error(parser_->get());
    if (!why.empty()) {
      ++server_->bad_requests;
      version_ = parser_->get().version();
      return reply_and_close(400, why);
    }
    lowest().expires_after(server_->options.body_timeout);
    // Bodies are charged to the in-flight budget as they arrive, before
    // their bytes are stored: an announced length costs nothing until sent.
    const auto length = parser_->content_length();
    if (length && *length >= kDirectBodyBytes && !parser_->chunked()) {
      // A large body (a full NodeList is tens of MB) is read straight into
      // its final buffer, kDirectStep at a time, with room for the JSON
      // parser's padding, rather than through the parser. The buffer is
      // address space until a step is read into it.
      direct_length_ = static_cast<size_t>(*length);
      direct_body_.clear();
      direct_body_.reserve(direct_length_ + kBodyPadding);
      const size_t have = std::min(buffer_.size(), direct_length_);
      if (!reserve(have)) return refuse_busy();
      direct_body_.append(static_cast<const char*>(buffer_.data().data()), have);
      buffer_.consume(have);
      return read_direct_step();
    }
    read_body_part();
  }

  void read_direct_step() {
    const size_t got = direct_body_.size();
    if (got == direct_length_) return on_direct_body({});
    const size_t step = std::min(direct_length_ - got, kDirectStep);
    if (!reserve(step)) return refuse_busy();
    direct_body_.resize(got + step);
    asio::async_read(stream_, asio::buffer(direct_body_.data() + got, step), [self = this->shared_from_this()](error_code e, size_t) {
      if (e) return self->on_direct_body(e);
      self->read_direct_step();
    });
  }

  // The body through the parser, a read at a time: a chunked body's growth
  // is charged to the in-flight budget as it comes.
  void read_body_part() {
    if (parser_->is_done()) return on_body({});
    http::async_read_some(stream_, buffer_, *parser_, [self = this->shared_from_this()](error_code e, size_t) {
      if (e) return self->on_read_error(e);
      const size_t have = self->parser_->get().body().size();
      if (have > self->reserved_ && !self->reserve(have - self->reserved_)) return self->refuse_busy();
      self->read_body_part();
    });
  }

  bool reserve(size_t n) {
    if (!server_->reserve_body(n)) return false;
    reserved_ += n;
    return true;
  }
  void release_body() {
    if (reserved_ == 0) return;
    server_->body_bytes -= static_cast<int64_t>(reserved_);
    reserved_ = 0;
  }
  // The body would pass the in-flight budget: 503 before reading the rest,
  // and the connection closed (after draining what the client still sends).
  void refuse_busy() {
    ++server_->busy;
    keep_alive_ = false;
    linger_ = true;
    version_ = parser_->get().version();
    HttpResponse r{503, error_body("busy: request bodies in flight would pass " + std::to_string(server_->options.max_body_bytes_in_flight) +
                                   " bytes (limits.maxBodyBytesInFlight); retry")};
    r.headers.emplace_back("Retry-After", "1");
    write(std::move(r));
  }

  // What RFC 9112 makes a server refuse before reading a body: an HTTP/1.1
  // request without Host (§3.2), a transfer coding other than chunked
  // alone (§6.1: the body's end is unknown, and nothing here decodes
  // gzip), and Transfer-Encoding beside Content-Length (§6.3: a request
  // smuggling vector). "" when the framing is sound.
  static std::string framing_error(const http::request_header<>& h) {
    if (h.version() >= 11 && h.find(http::field::host) == h.end()) return "HTTP/1.1 request without a Host header";
    size_t codings = 0;
    std::string_view coding;
    for (const auto& f : h) {
      if (f.name() != http::field::transfer_encoding) continue;
      ++codings;
      coding = f.value();
    }
    if (codings == 0) return "";
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
    if (codings > 1 || !beast::iequals(coding, "chunked")) {
      return "unsupported Transfer-Encoding \"" + std::string(coding.substr(0, 64)) + "\" (only chunked is accepted)";
    }
    if (h.find(http::field::content_length) != h.end()) return "both Transfer-Encoding and Content-Length";
    return "";
  }

  void on_direct_body(error_code ec) {
    if (ec) {
      if (ec == asio::error::eof) return close();  // the client gave up mid-body
      return on_read_error(ec);
    }
    parser_->get().body() = std::move(direct_body_);
    direct_body_ = std::string();
    on_body(ec);
  }

  void on_read_error(const error_code& ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted || closing_) {
      return close();
    }
    if (ec == beast::error::timeout) {
      ++server_->timeouts;
      return close();
    }
    ++server_->bad_requests;
    if (ec == http::error::body_limit) {
      return reply_and_close(413, "request body exceeds " + std::to_string(server_->options.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) return reply_and_close(431, "request headers exceed 16 KiB");
    return reply_and_close(400, "malformed HTTP request: " + ec.message());
  }

  void on_body(error_code ec) {
    if (ec) return on_read_error(ec);
    auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.content_type = std::string(msg[http::field::content_type]);
    req.body = std::move(msg.body());
    req.remote = remote_;
    req.arrived = arrived_;
    version_ = msg.version();
    parser_.reset();
    ++server_->requests;
    ++server_->in_flight;
    lowest().expires_never();  // the handler may take its time (bind waits for the API server)
    Reply reply = make_reply();
    try {
      server_->handler(std::move(req), reply);
    } catch (const std::exception& e) {
      // A handler bug must cost one request, never the process.
      reply(HttpResponse{500, error_body(std::string("internal error: ") + e.what())});
    }
  }

  // A Reply that answers on this session's strand, once; if every copy is
  // dropped unanswered, the client still gets a 500.
  Reply make_reply() {
    struct State {
      std::shared_ptr<Session> session;
      std::atomic<bool> done{false};
      ~State() {
        if (!done.exchange(true)) deliver(session, HttpResponse{500, R"({"Error":"the request was dropped unanswered"})"});
      }
      static void deliver(const std::shared_ptr<Session>& s, HttpResponse r) {
        --s->server_->in_flight;
        {
          std::lock_guard lock(s->server_->mu);
          if (s->server_->stopped) return;  // nobody runs the io_context any more
        }
        asio::post(s->stream_.get_executor(), [s, r = std::move(r)]() mutable { s->write(std::move(r)); });
      }
    };
    auto state = std::make_shared<State>();
    state->session = this->shared_from_this();
    return [state](HttpResponse r) {
      if (!state->done.exchange(true)) State::deliver(state->session, std::move(r));
    };
  }

  void reply_and_close(int status, const std::string& message) {
    keep_alive_ = false;
    linger_ = true;  // the request's rest is unread
    write(HttpResponse{status, error_body(message)});
  }

  void write(HttpResponse r) {
    release_body();  // the request is answered: its body is no longer held for it
    // The body is written from where it lies (a shared reply is not copied).
    std::shared_ptr<const std::string> body =
        r.shared_body ? std::move(r.shared_body) : std::make_shared<const std::string>(std::move(r.body));
    auto res = std::make_shared<http::response<http::span_body<const char>>>(static_cast<http::status>(r.status), version_);
    res->set(http::field::server, "fracpack");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_ && !server_->draining && !closing_);
    res->body() = boost::beast::span<const char>(body->data(), body->size());
    res->prepare_payload();
    lowest().expires_after(server_->options.write_timeout);
    http::async_write(stream_, *res, [self = this->shared_from_this(), res, body](error_code ec, size_t) {
      if (ec) return self->close();
      if (!res->keep_alive()) return self->linger_ ? self->drain_then_close() : self->close();
      self->read_header();
    });
  }

  // After a refusal with the request unread: closing at once would make
  // the kernel answer the client's next bytes with a reset, which can
  // discard the reply before it is read. The sending side is shut (the
  // client sees the end after the reply) and what still comes is read and
  // dropped, at most kLingerBytes for kLinger, then the socket is closed.
  void drain_then_close() {
    if constexpr (kTls) {
      close();
    } else {
      error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      lowest().expires_after(kLinger);
      drain_part(0);
    }
  }
  void drain_part(size_t drained) {
    if (drained >= kLingerBytes || closing_) return close();
    auto scratch = std::make_shared<std::array<char, 16384>>();
    lowest().async_read_some(asio::buffer(*scratch), [self = this->shared_from_this(), scratch, drained](error_code ec, size_t n) {
      if (ec) return self->close();
      self->drain_part(drained + n);
    });
  }

  void close() {
    closing_ = true;
    release_body();
    if constexpr (kTls) {
      lowest().expires_after(std::chrono::seconds(2));
      stream_.async_shutdown([self = this->shared_from_this()](error_code) { self->lowest().close(); });
    } else {
      error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      lowest().close();
    }
  }

  std::shared_ptr<HttpServer::Impl> server_;
  std::shared_ptr<ssl::context> tls_;  // before stream_, which refers to it
  Stream stream_;
  std::string remote_;
  beast::flat_buffer buffer_;
  std::string direct_body_;
  size_t direct_length_ = 0;
  bool linger_ = false;  // a refusal left the request unread: drain before closing
  bool folded_ = false;  // the header now parsed had a folded line
  std::chrono::steady_clock::time_point arrived_{};  // when the current request's header was read
  std::optional<http::request_parser<http::string_body>> parser_;
  std::list<std::weak_ptr<SessionBase>>::iterator registration_;
  std::atomic<int64_t> idle_since_{0};
  size_t reserved_ = 0;  // of the in-flight body budget, for the request now read or handled
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool first_ = true;
  bool idle_ = false;
  bool closing_ = false;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc),
                        [self = shared_from_this()](error_code ec, tcp::socket socket) { self->on_accept(ec, std::move(socket)); });
}

void HttpServer::Impl::on_accept(error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
  if (!ec) {
    ++connections;
    bool room = open_connections.load() < static_cast<int64_t>(options.max_connections);
    if (!room) {
      // Make room: the connection idle the longest goes (its client, if it
      // comes back, reconnects). A little past the cap while it closes; never
      // more than a few.
      constexpr int64_t kSlack = 16;
      if (open_connections.load() < static_cast<int64_t>(options.max_connections) + kSlack) {
        for (int tries = 0; tries < 4 && !room; ++tries) {
          auto idle = longest_idle();
          if (!idle) break;
          if (!idle->claim_for_eviction()) continue;  // another accept took it, or it woke up
          idle->close_when_idle(false, true);
          room = true;
        }
      }
    }
    if (!room) {
      ++refused;
      error_code ignored;
      socket.close(ignored);
    } else {
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // no Nagle delay between headers and body
      std::string remote;
      auto ep = socket.remote_endpoint(ignored);
      if (!ignored) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
      if (tls_enabled()) {
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(shared_from_this(), std::move(socket), std::move(remote),
                                                                         tls_context())
            ->start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(shared_from_this(), std::move(socket), std::move(remote), nullptr)->start();
      }
    }
  }
  if (!draining) accept();
}

void HttpServer::Impl::schedule_reload() {
  reload_timer.expires_after(options.tls_reload);
  reload_timer.async_wait([self = shared_from_this()](error_code ec) {
    if (ec) return;
    self->reload_tls();
    self->schedule_reload();
  });
}

void HttpServer::Impl::reload_tls() {
  const int64_t c = mtime_of(options.cert_file), k = mtime_of(options.key_file), a = mtime_of(options.client_ca_file);
  {
    std::lock_guard lock(mu);
    if (c == cert_mtime && k == key_mtime && a == ca_mtime) return;
  }
  auto ctx = make_tls_context(options.cert_file, options.key_file, options.client_ca_file);
  if (!ctx) return;  // a half-written pair: keep serving the old one, try again later
  std::lock_guard lock(mu);
  tls = *ctx;
  cert_mtime = c;
  key_mtime = k;
  ca_mtime = a;
  ++tls_reloads;
}

HttpServer::HttpServer(HttpOptions options, Handler handler)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  Impl& m = *impl_;
  if (m.tls_enabled()) {
    if (m.options.key_file.empty()) return Error{"TLS needs both a certificate and a key file"};
    auto ctx = make_tls_context(m.options.cert_file, m.options.key_file, m.options.client_ca_file);
    if (!ctx) return Error{ctx.message()};
    m.tls = *ctx;
    m.cert_mtime = mtime_of(m.options.cert_file);
    m.key_mtime = mtime_of(m.options.key_file);
    m.ca_mtime = mtime_of(m.options.client_ca_file);
  }
  error_code ec;
  const auto address = asio::ip::make_address(m.options.address, ec);
  if (ec) return Error{"listen address \"" + m.options.address + "\": " + ec.message()};
  const tcp::endpoint endpoint(address, m.options.port);
  const std::string where = m.options.address + ":" + std::to_string(m.options.port);
  m.acceptor.open(endpoint.protocol(), ec);
  if (!ec) m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(endpoint, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on " + where + ": " + ec.message()};
  m.work.emplace(m.ioc.get_executor());
  m.accept();
  if (m.tls_enabled() && m.options.tls_reload.count() > 0) m.schedule_reload();
  const int n = std::max(1, m.options.threads);
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
  m.draining = true;
  asio::post(m.control, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
  });
  m.close_sessions(false);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline && (m.in_flight.load() > 0 || m.open_connections.load() > 0)) {
    m.close_sessions(false);  // connections that went idle since
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
}

void HttpServer::stop() {
  Impl& m = *impl_;
  if (m.threads.empty()) return;
  {
    std::lock_guard lock(m.mu);
    m.stopped = true;
  }
  m.draining = true;
  asio::post(m.control, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
    m.reload_timer.cancel();
  });
  m.close_sessions(true);
  m.work.reset();
  // Let the sessions wind down (their operations fail at once), then stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!m.ioc.stopped() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  m.ioc.stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
}

HttpCounters HttpServer::counters() const {
  const Impl& m = *impl_;
  HttpCounters c;
  c.connections = m.connections;
  c.refused = m.refused;
  c.evicted = m.evicted;
  c.busy = m.busy;
  c.body_bytes = m.body_bytes;
  c.requests = m.requests;
  c.bad_requests = m.bad_requests;
  c.timeouts = m.timeouts;
  c.tls_failures = m.tls_failures;
  c.tls_reloads = m.tls_reloads;
  c.open_connections = m.open_connections;
  c.in_flight = m.in_flight;
  return c;
}

std::string HttpServer::saturation() const {
  const Impl& m = *impl_;
  const int64_t open = m.open_connections.load();
  if (open < static_cast<int64_t>(m.options.max_connections) || m.longest_idle() != nullptr) return "";
  return std::to_string(open) + " of " + std::to_string(m.options.max_connections) +
         " connections open (limits.maxConnections), none idle to close for a new one";
}

}  // namespace fracpack::server
