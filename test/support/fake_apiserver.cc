#include "test/support/fake_apiserver.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/time.h"
#include "test/support/fake_apiserver_routes.h"
#include "test/support/fake_apiserver_store.h"

namespace fracpack::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr auto kTuple = asio::as_tuple(use_awaitable);

}  // namespace

// The transport: an Asio io thread accepting (TLS optional), one coroutine
// per connection, chunked watch streams that wait on a timer each and wake
// when the store changes; the injected faults that shape a stream.
struct FakeApiServer::Impl {
  FakeApiServerOptions options;
  // Owned so the destructor can destroy coroutine frames before the members
  // they refer to.
  std::unique_ptr<asio::io_context> ioc_owner = std::make_unique<asio::io_context>();
  asio::io_context& ioc = *ioc_owner;
  std::unique_ptr<asio::ssl::context> ssl;
  std::optional<tcp::acceptor> acceptor_owner{std::in_place, ioc};
  tcp::acceptor& acceptor = *acceptor_owner;
  std::thread thread;
  Faults faults;
  fake::Dice dice;
  fake::FakeStore store{options};
  fake::FakeRoutes routes{store, faults, dice, options};
  std::atomic<int> connections{0};

  // Watches (io thread only): each waits on its timer; a change marks it
  // dirty and cancels the wait (a change during a write is not lost).
  std::map<asio::steady_timer*, bool*> watch_timers;
  bool closing_watches = false;

  explicit Impl(FakeApiServerOptions o) : options(std::move(o)) {
    if (options.tls) {
      ssl = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
      ssl->use_certificate_chain(asio::buffer(options.cert_pem));
      ssl->use_private_key(asio::buffer(options.key_pem), asio::ssl::context::pem);
    }
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    acceptor.open(ep.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(ep);
    acceptor.listen();
    routes.set_port(acceptor.local_endpoint().port());
    store.changed = [this] { notify(); };
    asio::co_spawn(ioc, accept_loop(), asio::detached);
    thread = std::thread([this] { ioc.run(); });
  }

  ~Impl() {
    asio::post(ioc, [this] {
      boost::system::error_code ec;
      acceptor.close(ec);
      ioc.stop();
    });
    thread.join();
    acceptor_owner.reset();
    ioc_owner.reset();  // destroys pending coroutine frames now
  }

  // Wakes every watch (runs on the io thread).
  void notify() {
    asio::post(ioc, [this] {
      for (auto& [t, dirty] : watch_timers) {
        *dirty = true;
        t->cancel();
      }
    });
  }

  // Records a change (mu held).
  awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec) co_return;
      ++connections;
      socket.set_option(tcp::no_delay(true));
      if (ssl) {
        asio::co_spawn(ioc, tls_session(std::move(socket)), asio::detached);
      } else {
        asio::co_spawn(ioc, session(beast::tcp_stream(std::move(socket))), asio::detached);
      }
    }
  }

  awaitable<void> tls_session(tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *ssl);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kTuple);
    if (ec) co_return;
    beast::get_lowest_layer(stream).expires_never();
    co_await session(std::move(stream));
  }

  template <class Stream>
  awaitable<void> session(Stream stream) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 << 20);
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
      if (ec) co_return;
      auto req = parser.release();
      const bool keep = req.keep_alive();
      const bool go_on = co_await handle(stream, req);
      if (!go_on || !keep) break;
    }
    boost::system::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  template <class Stream>
  awaitable<bool> reply(Stream& stream, const http::request<http::string_body>& req, const fake::Response& r) {
    if (r.parts.empty()) {
      http::response<http::string_body> res{static_cast<http::status>(r.status), req.version()};
      res.set(http::field::content_type, r.content_type);
      if (!r.retry_after.empty()) res.set(http::field::retry_after, r.retry_after);
      res.keep_alive(req.keep_alive());
      res.body() = r.body;
      res.prepare_payload();
      auto [ec, n] = co_await http::async_write(stream, res, kTuple);
      co_return !ec;
    }
    // A large body: the header, then the pieces by gathered writes.
    http::response<http::empty_body> res{static_cast<http::status>(r.status), req.version()};
    res.set(http::field::content_type, r.content_type);
    res.keep_alive(req.keep_alive());
    size_t length = r.body.size();
    for (const auto& p : r.parts) length += p->size();
    res.content_length(length);
    http::response_serializer<http::empty_body> sr(res);
    {
      auto [ec, n] = co_await http::async_write_header(stream, sr, kTuple);
      if (ec) co_return false;
    }
    std::vector<asio::const_buffer> buffers;
    buffers.emplace_back(r.body.data(), r.body.size());
    for (size_t i = 0; i <= r.parts.size(); ++i) {
      if (buffers.size() == 256 || i == r.parts.size()) {
        auto [ec, n] = co_await asio::async_write(stream, buffers, kTuple);
        if (ec) co_return false;
        buffers.clear();
      }
      if (i < r.parts.size()) buffers.emplace_back(r.parts[i]->data(), r.parts[i]->size());
    }
    co_return true;
  }

  // Returns false when the connection must be closed.
  template <class Stream>
  awaitable<bool> handle(Stream& stream, const http::request<http::string_body>& req) {
    fake::Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    const size_t qmark = r.target.find('?');
    r.path = r.target.substr(0, qmark);
    r.query = fake::parse_query(qmark == std::string::npos ? "" : r.target.substr(qmark + 1));
    r.body = req.body();
    r.authorization = std::string(req[http::field::authorization]);
    r.content_type = std::string(req[http::field::content_type]);
    if (int ms = faults.slow_ms.load(); ms > 0 && (faults.slow_permille.load() == 0 || dice.draw(faults.slow_permille))) {
      asio::steady_timer t(ioc, std::chrono::milliseconds(ms));
      co_await t.async_wait(kTuple);
    }
    fake::Route route = routes.route(r);
    if (route.watch) co_return co_await serve_watch(stream, req, route.kind, route.ns, r.query);
    if (route.drop) co_return false;
    co_return co_await reply(stream, req, route.response);
  }

  template <class Stream>
  awaitable<bool> write_chunk(Stream& stream, const std::string& data) {
    auto [ec, n] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(data)), kTuple);
    co_return !ec;
  }

  template <class Stream>
  awaitable<bool> serve_watch(Stream& stream, const http::request<http::string_body>& req, const std::string& kind,
                              const std::string& ns, const std::map<std::string, std::string>& q) {
    if (fake::trace()) std::fprintf(stderr, "watch %s start %s\n", kind.c_str(), std::string(req.target()).c_str());
    struct Trace {
      std::string kind;
      ~Trace() {
        if (fake::trace()) std::fprintf(stderr, "watch %s end\n", kind.c_str());
      }
    } trace_end{kind};
    std::string error;
    auto terms = fake::parse_selector(kind, q.contains("fieldSelector") ? q.at("fieldSelector") : "", error);
    if (!terms) co_return co_await reply(stream, req, fake::Response(400, fake::status_json(400, "BadRequest", error)));
    const std::string rv_param = q.contains("resourceVersion") ? q.at("resourceVersion") : "";
    const bool bookmarks = q.contains("allowWatchBookmarks") && q.at("allowWatchBookmarks") == "true";
    int timeout = 1800;
    if (q.contains("timeoutSeconds")) timeout = std::stoi(q.at("timeoutSeconds"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);

    http::response<http::empty_body> res{http::status::ok, req.version()};
    res.set(http::field::content_type, "application/json");
    res.chunked(true);
    res.keep_alive(req.keep_alive());
    http::response_serializer<http::empty_body> sr{res};
    {
      auto [ec, n] = co_await http::async_write_header(stream, sr, kTuple);
      if (ec) co_return false;
    }
    auto finish = [&]() -> awaitable<bool> {
      auto [ec, n] = co_await asio::async_write(stream, http::make_chunk_last(), kTuple);
      co_return !ec;
    };
    if (fake::consume(faults.close_watches)) co_return co_await finish();

    const fake::WatchBatch start = store.watch_start(kind, ns, *terms, rv_param, fake::consume(faults.expire_watches));
    if (start.expired) {
      if (!co_await write_chunk(stream, start.events[0])) co_return false;
      co_return co_await finish();
    }
    if (!start.events.empty() && !co_await send_events(stream, start.events)) co_return false;
    uint64_t sent = start.sent;

    asio::steady_timer timer(ioc);
    bool dirty = false;
    watch_timers.emplace(&timer, &dirty);
    struct Unregister {
      Impl* self;
      asio::steady_timer* t;
      ~Unregister() { self->watch_timers.erase(t); }
    } unregister{this, &timer};
    auto next_bookmark = std::chrono::steady_clock::now() + options.bookmark_interval;
    for (;;) {
      const fake::WatchBatch next = store.watch_next(kind, ns, *terms, sent);
      if (next.expired) {
        co_await write_chunk(stream, next.events[0]);
        co_return co_await finish();
      }
      const uint64_t current = next.sent;
      sent = current;
      if (!next.events.empty() && !co_await send_events(stream, next.events)) co_return false;
      const auto now = std::chrono::steady_clock::now();
      if (closing_watches || now >= deadline) {
        if (bookmarks) {
          if (!co_await write_chunk(stream, store.bookmark(kind, current))) co_return false;
        }
        co_return co_await finish();
      }
      if (bookmarks && now >= next_bookmark) {
        if (!co_await write_chunk(stream, store.bookmark(kind, current))) co_return false;
        next_bookmark = now + options.bookmark_interval;
      }
      if (dirty) {
        dirty = false;
        continue;
      }
      timer.expires_at(std::min(deadline, bookmarks ? next_bookmark : deadline));
      co_await timer.async_wait(kTuple);
      dirty = false;
    }
  }

  template <class Stream>
  awaitable<bool> send_events(Stream& stream, const std::vector<std::string>& events) {
    if (int ms = faults.event_delay_ms.load(); ms > 0) {
      asio::steady_timer t(ioc, std::chrono::milliseconds(ms));
      co_await t.async_wait(kTuple);
    }
    if (faults.batch_events.load()) {
      std::string all;
      for (const auto& e : events) all += e;
      co_return co_await write_chunk(stream, all);
    }
    if (!faults.split_events.load() && faults.drop_mid_event.load() == 0 && faults.cut_event_permille.load() == 0) {
      // One chunk per event, as the API server flushes each, sent with one
      // write: the wire is the same, the system calls are not per event.
      std::string wire;
      for (size_t i = 0; i < events.size(); ++i) {
        char size[20];
        const int n = std::snprintf(size, sizeof size, "%zx\r\n", events[i].size());
        wire.append(size, static_cast<size_t>(n)).append(events[i]).append("\r\n");
        if (wire.size() >= (256 << 10) || i + 1 == events.size()) {
          auto [ec, written] = co_await asio::async_write(stream, asio::buffer(wire), kTuple);
          if (ec) co_return false;
          wire.clear();
        }
      }
      co_return true;
    }
    for (const auto& e : events) {
      if (fake::consume(faults.drop_mid_event) || dice.draw(faults.cut_event_permille)) {
        co_await write_chunk(stream, e.substr(0, e.size() / 2));
        boost::system::error_code ec;
        beast::get_lowest_layer(stream).socket().close(ec);
        co_return false;
      }
      if (faults.split_events.load() && e.size() > 3) {
        const size_t third = e.size() / 3;
        for (std::string part : {e.substr(0, third), e.substr(third, third), e.substr(2 * third)}) {
          if (!co_await write_chunk(stream, part)) co_return false;
          asio::steady_timer pause(ioc, std::chrono::milliseconds(1));
          co_await pause.async_wait(kTuple);
        }
        continue;
      }
      if (!co_await write_chunk(stream, e)) co_return false;
    }
    co_return true;
  }
};

FakeApiServer::FakeApiServer(FakeApiServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

uint16_t FakeApiServer::port() const { return impl_->acceptor.local_endpoint().port(); }
std::string FakeApiServer::url() const {
  return std::string(impl_->options.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port());
}
Faults& FakeApiServer::faults() { return impl_->faults; }

std::string FakeApiServer::create(const std::string& kind, const std::string& text) {
  std::lock_guard lock(impl_->store.mu);
  const std::string out = impl_->store.create_locked(kind, nlohmann::json::parse(text));
  impl_->notify();
  return out;
}

bool FakeApiServer::update(const std::string& kind, const std::string& ns, const std::string& name,
                           const std::function<std::string(const std::string&)>& fn) {
  std::lock_guard lock(impl_->store.mu);
  auto r = impl_->store.update_locked(kind, fake::FakeStore::key(kind, ns, name), [&](nlohmann::json& o) { o = nlohmann::json::parse(fn(o.dump())); });
  impl_->notify();
  return r.has_value();
}

bool FakeApiServer::remove(const std::string& kind, const std::string& ns, const std::string& name) {
  std::lock_guard lock(impl_->store.mu);
  const bool ok = impl_->store.remove_locked(kind, fake::FakeStore::key(kind, ns, name));
  impl_->notify();
  return ok;
}

std::optional<std::string> FakeApiServer::get(const std::string& kind, const std::string& ns, const std::string& name) const {
  std::lock_guard lock(impl_->store.mu);
  auto& m = impl_->store.objects[kind];
  auto it = m.find(fake::FakeStore::key(kind, ns, name));
  if (it == m.end()) return std::nullopt;
  return *it->second.json;
}

std::vector<std::string> FakeApiServer::list(const std::string& kind) const {
  std::lock_guard lock(impl_->store.mu);
  std::vector<std::string> out;
  for (const auto& [k, o] : impl_->store.objects[kind]) out.push_back(*o.json);
  return out;
}

std::vector<std::string> FakeApiServer::pods_on(const std::string& node) const {
  std::lock_guard lock(impl_->store.mu);
  std::vector<std::string> out;
  auto on = impl_->store.pods_by_node.find(node);
  if (on == impl_->store.pods_by_node.end()) return out;
  const auto& pods = impl_->store.objects["pods"];
  for (const std::string& k : on->second) {
    if (auto it = pods.find(k); it != pods.end()) out.push_back(*it->second.json);
  }
  return out;
}

namespace {

// An object recorded without parsing (benchmarks), at the next resourceVersion.
fake::Obj raw_object(fake::FakeStore& store, const std::string& ns, const std::string& name, const std::string& uid,
                     std::string text, const std::string& node_name, const std::string& phase) {
  fake::Obj o;
  o.uid = uid;
  o.rv = ++store.rv;
  o.fields.ns = ns;
  o.fields.name = name;
  o.fields.node_name = node_name;
  o.fields.phase = phase;
  o.json = std::make_shared<const std::string>(std::move(text));
  return o;
}

}  // namespace

uint64_t FakeApiServer::load_raw(const std::string& kind, const std::string& ns, const std::string& name,
                                 const std::string& uid, std::string text, const std::string& node_name,
                                 const std::string& phase) {
  std::lock_guard lock(impl_->store.mu);
  fake::Obj o = raw_object(impl_->store, ns, name, uid, std::move(text), node_name, phase);
  auto& slot = impl_->store.objects[kind][fake::FakeStore::key(kind, ns, name)];
  if (kind == "pods") impl_->store.index_pod(slot.json ? std::optional<fake::Fields>(slot.fields) : std::nullopt, &o.fields);
  slot = std::move(o);
  impl_->store.compacted = impl_->store.rv;  // bulk loads are not in the watch history
  return impl_->store.rv;
}

uint64_t FakeApiServer::put_raw_event(const std::string& kind, const std::string& type, const std::string& ns,
                                      const std::string& name, const std::string& uid, std::string text,
                                      const std::string& node_name, const std::string& phase) {
  std::lock_guard lock(impl_->store.mu);
  fake::Obj o = raw_object(impl_->store, ns, name, uid, std::move(text), node_name, phase);
  const std::string k = fake::FakeStore::key(kind, ns, name);
  auto& m = impl_->store.objects[kind];
  std::optional<fake::Fields> before;
  std::shared_ptr<const std::string> before_json;
  if (auto it = m.find(k); it != m.end()) {
    before = it->second.fields;
    before_json = it->second.json;
  }
  if (type == "DELETED") {
    m.erase(k);
  } else {
    m[k] = o;
  }
  impl_->store.record(kind, type, o, before ? before : std::optional<fake::Fields>(o.fields), before_json);
  impl_->notify();
  return impl_->store.rv;
}

uint64_t FakeApiServer::resource_version() const {
  std::lock_guard lock(impl_->store.mu);
  return impl_->store.rv;
}

void FakeApiServer::compact() {
  std::lock_guard lock(impl_->store.mu);
  impl_->store.history.clear();
  impl_->store.compacted = impl_->store.rv;
  impl_->notify();
}

void FakeApiServer::close_watches() {
  asio::post(impl_->ioc, [this] {
    impl_->closing_watches = true;
    for (auto& [t, dirty] : impl_->watch_timers) {
      *dirty = true;
      t->cancel();
    }
    asio::post(impl_->ioc, [this] { impl_->closing_watches = false; });
  });
}

std::vector<std::string> FakeApiServer::request_log() const { return impl_->routes.request_log(); }

int FakeApiServer::requests(const std::string& prefix) const { return impl_->routes.requests(prefix); }

namespace {
// The counted faults, by name: one list for clear() and pending().
constexpr std::pair<const char*, std::atomic<int> Faults::*> kCountedFaults[] = {
    {"close_watches", &Faults::close_watches},     {"drop_mid_event", &Faults::drop_mid_event},
    {"expire_watches", &Faults::expire_watches},   {"expire_lists", &Faults::expire_lists},
    {"conflict_bindings", &Faults::conflict_bindings}, {"fail_bindings", &Faults::fail_bindings},
    {"throttle", &Faults::throttle},               {"unauthorized", &Faults::unauthorized},
    {"slow_ms", &Faults::slow_ms},                 {"drop_binding_response", &Faults::drop_binding_response},
    {"fail_gets", &Faults::fail_gets},             {"event_delay_ms", &Faults::event_delay_ms},
    {"cut_event_permille", &Faults::cut_event_permille}, {"slow_permille", &Faults::slow_permille},
    {"lose_binding_permille", &Faults::lose_binding_permille},
};
}  // namespace

void Faults::clear() {
  for (const auto& [name, counter] : kCountedFaults) (this->*counter) = 0;
  split_events = false;
  batch_events = false;
}

std::string Faults::pending() const {
  std::string out;
  for (const auto& [name, counter] : kCountedFaults) {
    if (const int v = (this->*counter).load(); v != 0) out += (out.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(v);
  }
  return out.empty() ? "none" : out;
}

int FakeApiServer::connections() const { return impl_->connections.load(); }

std::string FakeApiServer::last_authorization() const { return impl_->routes.last_authorization(); }

int FakeApiServer::open_watches() const {
  std::promise<int> p;
  asio::post(impl_->ioc, [&] { p.set_value(static_cast<int>(impl_->watch_timers.size())); });
  return p.get_future().get();
}

TestCertificate make_test_certificate(const std::string& cn) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* x = X509_new();
  // Version 3: a version 1 certificate carries no extensions, and Go's TLS
  // (kube-apiserver calling the webhook) then finds no subjectAltName.
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365 * 10);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  X509_add_ext(x, san, -1);
  X509_EXTENSION_free(san);
  X509_EXTENSION* bc = X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE");
  X509_add_ext(x, bc, -1);
  X509_EXTENSION_free(bc);
  X509_sign(x, key, EVP_sha256());
  auto pem = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    const long n = BIO_ctrl(bio, BIO_CTRL_INFO, 0, static_cast<void*>(&data));
    std::string s(data, static_cast<size_t>(n));
    BIO_free(bio);
    return s;
  };
  TestCertificate c;
  c.cert_pem = pem([&](BIO* b) { PEM_write_bio_X509(b, x); });
  c.key_pem = pem([&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(x);
  EVP_PKEY_free(key);
  return c;
}

}  // namespace fracpack::testing
