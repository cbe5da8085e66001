#include "server/http_session.h"

#include <array>
#include <atomic>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "common/error_body.h"
#include "server/http_framing.h"
#include "server/padded_body.h"

namespace fracpack::server {

HttpCounters SessionShared::counters() const {
  HttpCounters c;
  c.connections = counts.connections;
  c.refused = counts.refused;
  c.evicted = counts.evicted;
  c.busy = counts.busy;
  c.body_bytes = body_budget.held();
  c.requests = counts.requests;
  c.bad_requests = counts.bad_requests;
  c.timeouts = counts.timeouts;
  c.tls_failures = counts.tls_failures;
  c.tls_reloads = counts.tls_reloads;
  c.open_connections = connection_budget.open();
  c.in_flight = counts.in_flight;
  return c;
}

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

int64_t steady_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class Stream>
class Session : public BudgetedConnection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  // `tls` (with TLS): the context the stream uses, kept alive by the session
  // however often the certificate is reloaded meanwhile.
  Session(std::shared_ptr<SessionShared> shared, tcp::socket socket, std::string remote, std::shared_ptr<ssl::context> tls)
      : shared_(std::move(shared)), tls_(std::move(tls)), stream_(make_stream(std::move(socket), tls_)), remote_(std::move(remote)) {}
  ~Session() override {
    release_body();
    shared_->connection_budget.remove(registration_);
  }

  int64_t idle_since() const override { return idle_since_.load(std::memory_order_relaxed); }

  void start() {
    registration_ = shared_->connection_budget.add(this->weak_from_this());
    if constexpr (kTls) {
      // A handshake that stalls is as idle as a request that does not
      // come: the connection may be evicted at the cap.
      idle_ = true;
      idle_since_ = steady_ns();
      lowest().expires_after(shared_->options.header_timeout);
      stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](error_code ec) {
        if (ec) {
          ++self->shared_->counts.tls_failures;
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
        if (evicting) ++self->shared_->counts.evicted;
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
    if (closing_ || shared_->draining) return close();
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(shared_->options.max_body_bytes);
    idle_ = true;
    idle_since_ = steady_ns();
    // The first request's headers must come within the header timeout; on a
    // kept-alive connection, waiting for the next request and receiving its
    // headers share the idle timeout.
    lowest().expires_after(first_ ? shared_->options.header_timeout : shared_->options.idle_timeout);
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

  void on_header(error_code ec) {
    idle_ = false;
    idle_since_ = 0;
    first_ = false;
    arrived_ = std::chrono::steady_clock::now();  // the request's deadlines count from here
    head_ = !ec && parser_->get().method() == http::verb::head;  // never a stale HEAD's on an error answer
    if (ec) return on_read_error(ec);
    const std::string why = folded_ ? "a folded header line (obsolete line folding, RFC 9112 section 5.2)" : framing_error(parser_->get());
    if (!why.empty()) {
      ++shared_->counts.bad_requests;
      version_ = parser_->get().version();
      return reply_and_close(400, why);
    }
    lowest().expires_after(shared_->options.body_timeout);
    // Bodies are charged to the in-flight budget as they arrive, before
    // their bytes are stored: an announced length costs nothing until sent.
    const auto length = parser_->content_length();
    if (length && *length >= kDirectBodyBytes && !parser_->chunked()) {
      // A large body (a full NodeList is tens of MB) is read straight into
      // its final buffer, kDirectStep at a time, with room for the JSON
      // parser's padding (PaddedString's), rather than through the parser.
      // The buffer is address space until a step is read into it.
      direct_length_ = static_cast<size_t>(*length);
      direct_body_.clear();
      direct_body_.reserve(direct_length_);
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
    if (!shared_->body_budget.take(n)) return false;
    reserved_ += n;
    return true;
  }
  void release_body() {
    if (reserved_ == 0) return;
    shared_->body_budget.give_back(reserved_);
    reserved_ = 0;
  }
  // The body would pass the in-flight budget: 503 before reading the rest,
  // and the connection closed (after draining what the client still sends).
  void refuse_busy() {
    ++shared_->counts.busy;
    keep_alive_ = false;
    linger_ = true;
    version_ = parser_->get().version();
    HttpResponse r{503, error_body("busy: request bodies in flight would pass " + std::to_string(shared_->options.max_body_bytes_in_flight) +
                                   " bytes (limits.maxBodyBytesInFlight); retry")};
    r.headers.emplace_back("Retry-After", "1");
    write(std::move(r));
  }

  void on_direct_body(error_code ec) {
    if (ec) {
      if (ec == asio::error::eof) return close();  // the client gave up mid-body
      return on_read_error(ec);
    }
    parser_->get().body() = std::move(direct_body_);
    direct_body_ = PaddedString();
    on_body(ec);
  }

  void on_read_error(const error_code& ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted || closing_) {
      return close();
    }
    if (ec == beast::error::timeout) {
      ++shared_->counts.timeouts;
      return close();
    }
    ++shared_->counts.bad_requests;
    if (ec == http::error::body_limit) {
      return reply_and_close(413, "request body exceeds " + std::to_string(shared_->options.max_body_bytes) + " bytes");
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
    ++shared_->counts.requests;
    ++shared_->counts.in_flight;
    lowest().expires_never();  // the handler may take its time (bind waits for the API server)
    Reply reply = make_reply();
    try {
      shared_->handler(std::move(req), reply);
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
        --s->shared_->counts.in_flight;
        if (s->shared_->stopped) return;  // nobody runs the io_context any more
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
    res->keep_alive(keep_alive_ && !shared_->draining && !closing_);
    res->body() = boost::beast::span<const char>(body->data(), body->size());
    res->prepare_payload();
    // A HEAD answer has the GET's header and no body (RFC 9110 section
    // 9.3.2): a body would be read as the start of the next answer.
    if (head_) res->body() = boost::beast::span<const char>();
    lowest().expires_after(shared_->options.write_timeout);
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

  std::shared_ptr<SessionShared> shared_;
  std::shared_ptr<ssl::context> tls_;  // before stream_, which refers to it
  Stream stream_;
  std::string remote_;
  beast::flat_buffer buffer_;
  PaddedString direct_body_;
  size_t direct_length_ = 0;
  bool linger_ = false;  // a refusal left the request unread: drain before closing
  bool folded_ = false;  // the header now parsed had a folded line
  std::chrono::steady_clock::time_point arrived_{};  // when the current request's header was read
  std::optional<http::request_parser<PaddedBody>> parser_;
  ConnectionBudget::Registration registration_;
  std::atomic<int64_t> idle_since_{0};
  size_t reserved_ = 0;  // of the in-flight body budget, for the request now read or handled
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool head_ = false;  // the request being answered is a HEAD
  bool first_ = true;
  bool idle_ = false;
  bool closing_ = false;
};

}  // namespace

void start_http_session(std::shared_ptr<SessionShared> shared, tcp::socket socket, std::string remote, std::shared_ptr<ssl::context> tls) {
  if (tls) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(std::move(shared), std::move(socket), std::move(remote), std::move(tls))
        ->start();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(std::move(shared), std::move(socket), std::move(remote), nullptr)->start();
  }
}

}  // namespace fracpack::server
