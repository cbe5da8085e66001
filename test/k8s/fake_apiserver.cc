#include "test/k8s/fake_apiserver.h"

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

namespace fracpack::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr auto kTuple = asio::as_tuple(use_awaitable);

std::string now_rfc3339() { return format_rfc3339(std::chrono::system_clock::now()); }

// The fields selectors and routing look at, kept beside the JSON text.
struct Fields {
  std::string ns, name, node_name, phase, scheduler_name;
  bool unschedulable = false;
  bool deleting = false;
};

Fields fields_of(const json& o) {
  Fields f;
  const json& m = o.value("metadata", json::object());
  f.ns = m.value("namespace", "");
  f.name = m.value("name", "");
  f.deleting = m.contains("deletionTimestamp") && !m["deletionTimestamp"].is_null();
  const json& spec = o.value("spec", json::object());
  f.node_name = spec.value("nodeName", "");
  f.scheduler_name = spec.value("schedulerName", "");
  f.unschedulable = spec.value("unschedulable", false);
  f.phase = o.value("status", json::object()).value("phase", "");
  return f;
}

struct Obj {
  std::string uid;
  uint64_t rv = 0;
  Fields fields;
  std::shared_ptr<const std::string> json;
};

struct HistoryEvent {
  uint64_t rv = 0;
  std::string kind;
  std::string type;                   // ADDED, MODIFIED, DELETED
  std::shared_ptr<const std::string> json;
  Fields now;
  std::optional<Fields> before;       // for selector transitions
  std::shared_ptr<const std::string> before_json;  // what a watcher gets when the object stops matching
};

struct Term {
  std::string field, value;
  bool negate = false;
};

// field=value, field==value, field!=value, comma-separated, ANDed.
std::optional<std::vector<Term>> parse_selector(const std::string& kind, const std::string& s, std::string& error) {
  std::vector<Term> terms;
  if (s.empty()) return terms;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Term t;
    size_t op = part.find("!=");
    if (op != std::string::npos) {
      t.negate = true;
      t.field = part.substr(0, op);
      t.value = part.substr(op + 2);
    } else if ((op = part.find("==")) != std::string::npos) {
      t.field = part.substr(0, op);
      t.value = part.substr(op + 2);
    } else if ((op = part.find('=')) != std::string::npos) {
      t.field = part.substr(0, op);
      t.value = part.substr(op + 1);
    } else {
      error = "invalid selector: '" + s + "'; can't understand '" + part + "'";
      return std::nullopt;
    }
    static const std::set<std::string> kPod = {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.host",
                                               "spec.schedulerName", "status.phase"};
    static const std::set<std::string> kNode = {"metadata.name", "spec.unschedulable"};
    if ((kind == "pods" && !kPod.contains(t.field)) || (kind == "nodes" && !kNode.contains(t.field)) ||
        (kind != "pods" && kind != "nodes" && t.field != "metadata.name" && t.field != "metadata.namespace")) {
      error = "field label not supported: " + t.field;
      return std::nullopt;
    }
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return terms;
}

bool matches(const std::vector<Term>& terms, const Fields& f) {
  static const std::string kTrue = "true", kFalse = "false", kNone;
  for (const Term& t : terms) {
    const std::string* v = &kNone;
    if (t.field == "metadata.name") v = &f.name;
    else if (t.field == "metadata.namespace") v = &f.ns;
    else if (t.field == "spec.nodeName" || t.field == "spec.host") v = &f.node_name;
    else if (t.field == "spec.schedulerName") v = &f.scheduler_name;
    else if (t.field == "status.phase") v = &f.phase;
    else if (t.field == "spec.unschedulable") v = f.unschedulable ? &kTrue : &kFalse;
    if ((*v == t.value) == t.negate) return false;
  }
  return true;
}

// The node a selector pins pods to (spec.nodeName=X), or null.
const std::string* pinned_node(const std::vector<Term>& terms) {
  for (const Term& t : terms) {
    if ((t.field == "spec.nodeName" || t.field == "spec.host") && !t.negate && !t.value.empty()) return &t.value;
  }
  return nullptr;
}

std::string status_json(int code, const std::string& reason, const std::string& message, const json& details = nullptr) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", code < 300 ? "Success" : "Failure"}, {"message", message}, {"reason", reason}, {"code", code}};
  if (code < 300) {
    s.erase("message");
    s.erase("reason");
  }
  if (!details.is_null()) s["details"] = details;
  return s.dump();
}

std::string kind_name(const std::string& kind) {
  if (kind == "pods") return "Pod";
  if (kind == "nodes") return "Node";
  return "Event";
}

std::map<std::string, std::string> parse_query(const std::string& q) {
  std::map<std::string, std::string> out;
  auto decode = [](const std::string& s) {
    std::string o;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        o.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else if (s[i] == '+') {
        o.push_back(' ');
      } else {
        o.push_back(s[i]);
      }
    }
    return o;
  };
  size_t start = 0;
  while (start < q.size()) {
    const size_t amp = q.find('&', start);
    const std::string kv = q.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    const size_t eq = kv.find('=');
    if (!kv.empty()) out[decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : decode(kv.substr(eq + 1));
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

// RFC 7386 JSON merge patch.
void merge_patch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_null()) {
      target.erase(it.key());
    } else {
      merge_patch(target[it.key()], it.value());
    }
  }
}

struct Response {
  Response(int s = 200, std::string b = {}, std::string ra = {}) : status(s), body(std::move(b)), retry_after(std::move(ra)) {}
  int status;
  std::string body;
  std::string retry_after;
  std::string content_type = "application/json";
  // Written after `body` without copying (large lists): shared with the
  // store, which may change meanwhile.
  std::vector<std::shared_ptr<const std::string>> parts;
};

// `text` (an object) with metadata.resourceVersion set to `rv`; a text scan,
// as benchmarks record objects without parsing them.
std::string with_resource_version(const std::string& text, uint64_t rv) {
  std::vector<char> open;  // '{' or '[' per nesting level
  bool expect_key = false;
  bool in_metadata = false;
  std::string_view last_top_key;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size()) return text;
      const std::string_view str(text.data() + i + 1, end - i - 1);
      if (expect_key && open.size() == 1) last_top_key = str;
      if (expect_key && open.size() == 2 && in_metadata && str == "resourceVersion") {
        size_t v = end + 1;
        while (v < text.size() && (text[v] == ':' || text[v] == ' ')) ++v;
        if (v >= text.size() || text[v] != '"') return text;
        size_t v_end = v + 1;
        while (v_end < text.size() && text[v_end] != '"') ++v_end;
        return text.substr(0, v + 1) + std::to_string(rv) + text.substr(v_end);
      }
      expect_key = false;
      i = end;
      continue;
    }
    switch (c) {
      case '{':
        open.push_back('{');
        expect_key = true;
        if (open.size() == 2) in_metadata = last_top_key == "metadata";
        break;
      case '[':
        open.push_back('[');
        expect_key = false;
        break;
      case '}':
      case ']':
        if (!open.empty()) open.pop_back();
        expect_key = false;
        break;
      case ',':
        expect_key = !open.empty() && open.back() == '{';
        break;
      default:
        break;
    }
  }
  return text;
}

}  // namespace

struct FakeApiServer::Impl {
  FakeApiServerOptions options;
  // Owned through pointers so ~Impl can destroy the io_context (and with it
  // the suspended coroutines) while the state they touch still exists.
  std::unique_ptr<asio::io_context> ioc_owner = std::make_unique<asio::io_context>();
  asio::io_context& ioc = *ioc_owner;
  std::unique_ptr<asio::ssl::context> ssl;
  std::optional<tcp::acceptor> acceptor_owner{std::in_place, ioc};
  tcp::acceptor& acceptor = *acceptor_owner;
  std::thread thread;
  Faults faults;
  std::mutex draw_mu;
  std::mt19937_64 draw_rng{20261124};

  mutable std::mutex mu;
  std::map<std::string, std::map<std::string, Obj>> store;  // kind -> key -> object
  std::deque<HistoryEvent> history;
  uint64_t rv = 1;
  uint64_t compacted = 1;  // resume points below this are gone
  uint64_t uid_counter = 0;
  struct Snapshot {
    uint64_t rv;
    std::vector<std::shared_ptr<const std::string>> items;  // shared with the store: a copy is a count
    std::chrono::steady_clock::time_point created;
  };
  // Continue snapshots kept at most (the oldest dropped, its token then
  // 410 Expired, as an expired one): a client that reads one page of a long
  // list (limit=1, to learn the current resourceVersion) never continues.
  static constexpr size_t kMaxSnapshots = 64;
  std::map<std::string, Snapshot> snapshots;  // continue token id -> snapshot
  uint64_t snapshot_counter = 0;
  std::map<std::string, int> request_counts;
  std::deque<std::string> request_log;
  std::atomic<int> connections{0};
  std::string last_authorization;

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

  static std::string key(const std::string& kind, const std::string& ns, const std::string& name) {
    return kind == "nodes" ? name : ns + "/" + name;
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
  // Pods by spec.nodeName, as the API server's watch cache indexes them:
  // a kubelet's (or the bind fence's) list of one node's pods does not scan
  // the cluster.
  std::unordered_map<std::string, std::set<std::string>> pods_by_node;

  void index_pod(const std::optional<Fields>& before, const Fields* now) {
    if (before && !before->node_name.empty()) {
      auto it = pods_by_node.find(before->node_name);
      if (it != pods_by_node.end()) {
        it->second.erase(key("pods", before->ns, before->name));
        if (it->second.empty()) pods_by_node.erase(it);
      }
    }
    if (now != nullptr && !now->node_name.empty()) pods_by_node[now->node_name].insert(key("pods", now->ns, now->name));
  }

  void record(const std::string& kind, const std::string& type, const Obj& now, std::optional<Fields> before,
              std::shared_ptr<const std::string> before_json = nullptr) {
    if (kind == "pods") index_pod(before, type == "DELETED" ? nullptr : &now.fields);
    // A watcher whose selector the object stops matching gets the previous
    // state at the resource version of this change (etcd3 watcher: "the
    // *old* object with the etcd revision for the time at which it gets
    // deleted"), or its resume point would go back in time.
    if (before_json && type == "MODIFIED") {
      before_json = std::make_shared<const std::string>(with_resource_version(*before_json, now.rv));
    }
    HistoryEvent ev{now.rv, kind, type, now.json, now.fields, std::move(before), std::move(before_json)};
    history.push_back(std::move(ev));
    while (history.size() > options.history) {
      compacted = history.front().rv;
      history.pop_front();
    }
  }

  std::string create_locked(const std::string& kind, json o) {
    json& m = o["metadata"];
    if (!m.contains("uid") || m["uid"].get<std::string>().empty()) {
      m["uid"] = "uid-" + std::to_string(++uid_counter) + "-" + m.value("name", "x");
    }
    if (!m.contains("creationTimestamp") || m["creationTimestamp"].is_null()) m["creationTimestamp"] = now_rfc3339();
    if (kind == "events" && m.value("name", "").empty()) {
      m["name"] = m.value("generateName", "event.") + std::to_string(++uid_counter);
    }
    o["kind"] = kind_name(kind);
    o["apiVersion"] = "v1";
    m["resourceVersion"] = std::to_string(++rv);
    Obj obj;
    obj.uid = m["uid"];
    obj.rv = rv;
    obj.fields = fields_of(o);
    obj.json = std::make_shared<const std::string>(o.dump());
    const std::string k = key(kind, obj.fields.ns, obj.fields.name);
    const bool existed = store[kind].contains(k);
    std::optional<Fields> before;
    std::shared_ptr<const std::string> before_json;
    if (existed) {
      before = store[kind][k].fields;
      before_json = store[kind][k].json;
    }
    store[kind][k] = obj;
    record(kind, existed ? "MODIFIED" : "ADDED", obj, before, before_json);
    return *obj.json;
  }

  // Applies fn to the stored object and bumps its version (mu held).
  std::optional<std::string> update_locked(const std::string& kind, const std::string& k,
                                           const std::function<void(json&)>& fn) {
    auto it = store[kind].find(k);
    if (it == store[kind].end()) return std::nullopt;
    json o = json::parse(*it->second.json);
    fn(o);
    o["metadata"]["resourceVersion"] = std::to_string(++rv);
    const Fields before = it->second.fields;
    auto before_json = it->second.json;
    it->second.rv = rv;
    it->second.fields = fields_of(o);
    it->second.json = std::make_shared<const std::string>(o.dump());
    record(kind, "MODIFIED", it->second, before, std::move(before_json));
    return *it->second.json;
  }

  bool remove_locked(const std::string& kind, const std::string& k) {
    auto it = store[kind].find(k);
    if (it == store[kind].end()) return false;
    json o = json::parse(*it->second.json);
    o["metadata"]["resourceVersion"] = std::to_string(++rv);
    Obj last = it->second;
    last.rv = rv;
    last.json = std::make_shared<const std::string>(o.dump());
    store[kind].erase(it);
    record(kind, "DELETED", last, last.fields);
    return true;
  }

  // --- networking ---

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
  awaitable<bool> reply(Stream& stream, const http::request<http::string_body>& req, const Response& r) {
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

  // A standing fault strikes this time (`permille` in thousandths).
  bool draw(const std::atomic<int>& permille) {
    const int p = permille.load();
    if (p <= 0) return false;
    std::lock_guard lock(draw_mu);
    return static_cast<int>(draw_rng() % 1000) < p;
  }

  bool consume(std::atomic<int>& counter) {
    int v = counter.load();
    while (v > 0) {
      if (counter.compare_exchange_weak(v, v - 1)) return true;
    }
    return false;
  }

  // Returns false when the connection must be closed.
  template <class Stream>
  awaitable<bool> handle(Stream& stream, const http::request<http::string_body>& req) {
    const std::string target(req.target());
    const size_t qmark = target.find('?');
    const std::string path = target.substr(0, qmark);
    const auto query = parse_query(qmark == std::string::npos ? "" : target.substr(qmark + 1));
    if (int ms = faults.slow_ms.load(); ms > 0 && (faults.slow_permille.load() == 0 || draw(faults.slow_permille))) {
      asio::steady_timer t(ioc, std::chrono::milliseconds(ms));
      co_await t.async_wait(kTuple);
    }
    Route r = route(req, path, query);
    if (r.watch) co_return co_await serve_watch(stream, req, r.kind, r.ns, query);
    if (r.drop) co_return false;
    co_return co_await reply(stream, req, r.response);
  }

  struct Route {
    Response response;
    bool watch = false;  // stream a watch of kind/ns instead
    bool drop = false;   // close the connection without answering
    std::string kind, ns;
  };

  static Route answer(int status, std::string body, std::string retry_after = {}) {
    Route r;
    r.response = Response(status, std::move(body), std::move(retry_after));
    return r;
  }

  // "?key=value&..." with the values that change from call to call (resume
  // points, tokens, timeouts) masked, so requests(prefix) can count a kind
  // of request: "GET /api/v1/pods?fieldSelector=spec.nodeName=n1,...".
  static std::string query_shape(const std::map<std::string, std::string>& query) {
    std::string out;
    for (const auto& [k, v] : query) {
      const bool masked = k == "resourceVersion" || k == "continue" || k == "timeoutSeconds";
      out += (out.empty() ? "?" : "&") + k + "=" + (masked && v != "0" ? std::string("*") : v);
    }
    return out;
  }

  Route route(const http::request<http::string_body>& req, const std::string& path,
              const std::map<std::string, std::string>& query) {
    const std::string method(req.method_string());
    if (trace()) std::fprintf(stderr, "request %s %s\n", method.c_str(), std::string(req.target()).c_str());
    {
      std::lock_guard lock(mu);
      ++request_counts[method + " " + path + query_shape(query)];
      request_log.push_back(method + " " + std::string(req.target()));
      if (request_log.size() > 1000) request_log.pop_front();
      last_authorization = std::string(req[http::field::authorization]);
    }
    if (ssl && !options.token.empty()) {
      if (std::string(req[http::field::authorization]) != "Bearer " + options.token) {
        return answer(401, status_json(401, "Unauthorized", "Unauthorized"));
      }
    }
    if (consume(faults.unauthorized)) return answer(401, status_json(401, "Unauthorized", "Unauthorized"));
    if (consume(faults.throttle)) {
      return answer(429,
                    status_json(429, "TooManyRequests", "Too many requests, please try again later.",
                                json{{"retryAfterSeconds", 1}}),
                    "1");
    }

    // Discovery and version, for kubectl.
    if (method == "GET" && path == "/version") {
      return answer(200, json{{"major", "1"}, {"minor", "28"}, {"gitVersion", "v1.28.0-fracpack-fake"},
                              {"platform", "linux/amd64"}}
                             .dump());
    }
    if (method == "GET" && path == "/api") {
      return answer(200, json{{"kind", "APIVersions"},
                              {"versions", {"v1"}},
                              {"serverAddressByClientCIDRs",
                               {{{"clientCIDR", "0.0.0.0/0"},
                                 {"serverAddress", "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port())}}}}}
                             .dump());
    }
    if (method == "GET" && path == "/apis") {
      return answer(200, json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array()}}.dump());
    }
    if (method == "GET" && path == "/api/v1") {
      auto res = [](const char* name, const char* kind, bool namespaced, json verbs, json short_names = json::array()) {
        return json{{"name", name}, {"singularName", ""}, {"namespaced", namespaced}, {"kind", kind}, {"verbs", verbs},
                    {"shortNames", short_names}};
      };
      json list = {{"kind", "APIResourceList"}, {"groupVersion", "v1"},
                   {"resources",
                    {res("pods", "Pod", true, {"create", "delete", "get", "list", "patch", "update", "watch"}, {"po"}),
                     res("pods/binding", "Binding", true, {"create"}),
                     res("bindings", "Binding", true, {"create"}),
                     res("nodes", "Node", false, {"get", "list", "watch"}, {"no"}),
                     res("events", "Event", true, {"create", "get", "list", "watch"}, {"ev"})}}};
      return answer(200, list.dump());
    }

    // /api/v1/{kind} | /api/v1/namespaces/{ns}/{kind}[/{name}[/{sub}]] | /api/v1/nodes/{name}
    std::vector<std::string> parts;
    for (size_t s = 1; s <= path.size();) {
      const size_t e = path.find('/', s);
      parts.push_back(path.substr(s, e == std::string::npos ? std::string::npos : e - s));
      if (e == std::string::npos) break;
      s = e + 1;
    }
    const std::string not_found = status_json(404, "NotFound", "the server could not find the requested resource");
    if (parts.size() < 3 || parts[0] != "api" || parts[1] != "v1") return answer(404, not_found);
    std::string ns, kind, name, sub;
    if (parts[2] == "namespaces" && parts.size() >= 5) {
      ns = parts[3];
      kind = parts[4];
      if (parts.size() >= 6) name = parts[5];
      if (parts.size() >= 7) sub = parts[6];
    } else {
      kind = parts[2];
      if (parts.size() >= 4) name = parts[3];
      if (parts.size() >= 5) sub = parts[4];
    }
    if (kind != "pods" && kind != "nodes" && kind != "events" && kind != "bindings" && kind != "configmaps") {
      return answer(404, not_found);
    }

    if (method == "GET" && name.empty()) {
      const bool watch = query.contains("watch") && (query.at("watch") == "true" || query.at("watch") == "1");
      if (watch) {
        Route r;
        r.watch = true;
        r.kind = kind;
        r.ns = ns;
        return r;
      }
      Route r;
      r.response = serve_list(kind, ns, query);
      return r;
    }
    if (method == "GET" && sub.empty()) {
      if (consume(faults.fail_gets)) return answer(500, status_json(500, "InternalError", "Internal error occurred: injected failure"));
      std::lock_guard lock(mu);
      auto it = store[kind].find(key(kind, ns, name));
      if (it == store[kind].end()) {
        return answer(404, status_json(404, "NotFound", kind + " \"" + name + "\" not found",
                                       json{{"name", name}, {"kind", kind}}));
      }
      return answer(200, *it->second.json);
    }
    if (method == "POST" && kind == "pods" && sub == "binding") {
      if (consume(faults.drop_binding_response)) {
        bind(ns, name, req.body());
        Route r;
        r.drop = true;  // applied, then the connection drops before the answer
        return r;
      }
      Route r;
      r.response = bind(ns, name, req.body());
      if (r.response.status == 201 && draw(faults.lose_binding_permille)) {
        r.response = Response(500, status_json(500, "InternalError", "Internal error occurred: injected failure after the write"));
      }
      return r;
    }
    if (method == "POST" && kind == "bindings") {
      json b = json::parse(req.body(), nullptr, false);
      const std::string n = b.is_object() ? b.value("metadata", json::object()).value("name", "") : "";
      Route r;
      r.response = bind(ns, n, req.body());
      return r;
    }
    if (method == "POST" && (kind == "events" || kind == "pods") && name.empty()) {
      json o = json::parse(req.body(), nullptr, false);
      if (!o.is_object()) return answer(400, status_json(400, "BadRequest", "invalid JSON body"));
      o["metadata"]["namespace"] = ns;
      std::lock_guard lock(mu);
      const std::string stored = create_locked(kind, o);
      notify();
      return answer(201, stored);
    }
    if (method == "PATCH" && kind == "pods" && !name.empty() && sub.empty()) {
      Route r;
      r.response = patch(ns, name, std::string(req[http::field::content_type]), req.body());
      return r;
    }
    if (method == "DELETE" && !name.empty() && sub.empty()) {
      std::lock_guard lock(mu);
      if (!remove_locked(kind, key(kind, ns, name))) {
        return answer(404, status_json(404, "NotFound", kind + " \"" + name + "\" not found"));
      }
      notify();
      return answer(200, status_json(200, "", ""));
    }
    return answer(405, status_json(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }

  Response serve_list(const std::string& kind, const std::string& ns, const std::map<std::string, std::string>& q) {
    std::string error;
    auto terms = parse_selector(kind, q.contains("fieldSelector") ? q.at("fieldSelector") : "", error);
    if (!terms) return {400, status_json(400, "BadRequest", error)};
    const std::string rv_param = q.contains("resourceVersion") ? q.at("resourceVersion") : "";
    const std::string cont = q.contains("continue") ? q.at("continue") : "";
    size_t limit = 0;
    if (q.contains("limit")) limit = static_cast<size_t>(std::stoul(q.at("limit")));
    if (options.watch_cache && cont.empty() && rv_param == "0") limit = 0;  // served from the cache, whole
    std::lock_guard lock(mu);
    if (!cont.empty() && !rv_param.empty() && rv_param != "0") {
      return {400, status_json(400, "BadRequest", "specifying resource version is not allowed when using continue")};
    }
    if (cont.empty() && !rv_param.empty() && rv_param != "0") {
      if (consume(faults.expire_lists)) {
        return {410, status_json(410, "Expired", "too old resource version: " + rv_param + " (" + std::to_string(compacted) + ")")};
      }
      const uint64_t asked = std::stoull(rv_param);
      if (asked > rv) {
        return {504, status_json(504, "Timeout", "Too large resource version: " + rv_param + ", current: " + std::to_string(rv)), "1"};
      }
      // "Exact" (with a limit) needs the state at that version, which only the current one is.
      if (limit > 0 && asked != rv && q.contains("resourceVersionMatch") && q.at("resourceVersionMatch") == "Exact") {
        return {410, status_json(410, "Expired", "too old resource version: " + rv_param)};
      }
    }
    // Expire old continue snapshots.
    const auto now = std::chrono::steady_clock::now();
    for (auto it = snapshots.begin(); it != snapshots.end();) {
      it = now - it->second.created > options.continue_ttl ? snapshots.erase(it) : std::next(it);
    }
    Snapshot* snap = nullptr;
    size_t offset = 0;
    std::string id;
    if (!cont.empty()) {
      const size_t colon = cont.find(':');
      id = cont.substr(0, colon);
      auto it = snapshots.find(id);
      if (colon == std::string::npos || it == snapshots.end()) {
        return {410, status_json(410, "Expired",
                                 "The provided continue parameter is too old to display a consistent list result. You can "
                                 "start a new list without the continue parameter.")};
      }
      snap = &it->second;
      offset = std::stoul(cont.substr(colon + 1));
    } else {
      Snapshot s{rv, {}, now};
      auto consider = [&](const Obj& o) {
        if (!ns.empty() && o.fields.ns != ns) return;
        if (matches(*terms, o.fields)) s.items.push_back(o.json);
      };
      const auto& objects = store[kind];
      if (const std::string* node = kind == "pods" ? pinned_node(*terms) : nullptr) {
        if (auto it = pods_by_node.find(*node); it != pods_by_node.end()) {
          for (const auto& k : it->second) consider(objects.at(k));
        }
      } else {
        for (const auto& [k, o] : objects) consider(o);
      }
      id = std::to_string(++snapshot_counter);
      snap = &snapshots.emplace(id, std::move(s)).first->second;
    }
    const size_t end = limit == 0 ? snap->items.size() : std::min(snap->items.size(), offset + limit);
    std::string body = R"({"kind":")" + kind_name(kind) + R"(List","apiVersion":"v1","metadata":{"resourceVersion":")" +
                       std::to_string(snap->rv) + "\"";
    if (end < snap->items.size()) body += R"(,"continue":")" + id + ":" + std::to_string(end) + "\"";
    body += R"(},"items":[)";
    Response r(200, std::move(body));
    static const auto comma = std::make_shared<const std::string>(",");
    static const auto close = std::make_shared<const std::string>("]}");
    r.parts.reserve(2 * (end - offset) + 1);
    for (size_t i = offset; i < end; ++i) {
      if (i > offset) r.parts.push_back(comma);
      r.parts.push_back(snap->items[i]);
    }
    r.parts.push_back(close);
    if (end >= snap->items.size()) {
      snapshots.erase(id);
    } else {
      while (snapshots.size() > kMaxSnapshots) {
        auto oldest = std::min_element(snapshots.begin(), snapshots.end(),
                                       [](const auto& a, const auto& b) { return a.second.created < b.second.created; });
        snapshots.erase(oldest);
      }
    }
    return r;
  }

  Response bind(const std::string& ns, const std::string& name, const std::string& body) {
    if (consume(faults.conflict_bindings)) {
      return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + name + "\": injected conflict")};
    }
    if (consume(faults.fail_bindings)) return {500, status_json(500, "InternalError", "Internal error occurred: injected failure")};
    json b = json::parse(body, nullptr, false);
    if (!b.is_object()) return {400, status_json(400, "BadRequest", "invalid JSON body")};
    const json meta = b.value("metadata", json::object());
    if (meta.value("name", "") != name) return {400, status_json(400, "BadRequest", "name in URL does not match name in Binding object")};
    const json target = b.value("target", json::object());
    const std::string tkind = target.value("kind", "");
    if ((tkind != "" && tkind != "Node") || target.value("name", "").empty()) {
      return {500, status_json(500, "InternalError", "Internal error occurred: target.kind must be Node and target.name non-empty")};
    }
    std::lock_guard lock(mu);
    const std::string k = key("pods", ns, name);
    auto it = store["pods"].find(k);
    if (it == store["pods"].end()) {
      return {404, status_json(404, "NotFound", "pods \"" + name + "\" not found", json{{"name", name}, {"kind", "pods"}})};
    }
    const std::string conflict = "Operation cannot be fulfilled on pods/binding \"" + name + "\": ";
    json details = {{"name", name}, {"kind", "pods/binding"}};
    if (meta.contains("uid") && meta["uid"].get<std::string>() != it->second.uid) {
      return {409, status_json(409, "Conflict",
                               conflict + "Precondition failed: UID in precondition: " + meta["uid"].get<std::string>() +
                                   ", UID in object meta: " + it->second.uid,
                               details)};
    }
    if (it->second.fields.deleting) {
      return {409, status_json(409, "Conflict", conflict + "pod " + name + " is being deleted, cannot be assigned to a host", details)};
    }
    if (!it->second.fields.node_name.empty()) {
      return {409, status_json(409, "Conflict",
                               conflict + "pod " + name + " is already assigned to node \"" + it->second.fields.node_name + "\"",
                               details)};
    }
    json current = json::parse(*it->second.json);
    if (current["spec"].contains("schedulingGates") && !current["spec"]["schedulingGates"].empty()) {
      return {409, status_json(409, "Conflict", conflict + "pod " + name + " has non-empty .spec.schedulingGates", details)};
    }
    update_locked("pods", k, [&](json& o) {
      o["spec"]["nodeName"] = target["name"];
      if (meta.contains("annotations")) {
        for (auto a = meta["annotations"].begin(); a != meta["annotations"].end(); ++a) o["metadata"]["annotations"][a.key()] = a.value();
      }
      json cond = {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", now_rfc3339()}};
      json& conds = o["status"]["conditions"];
      if (!conds.is_array()) conds = json::array();
      conds.push_back(cond);
    });
    notify();
    return {201, status_json(201, "", "")};
  }

  Response patch(const std::string& ns, const std::string& name, const std::string& content_type, const std::string& body) {
    if (content_type.find("application/merge-patch+json") == std::string::npos &&
        content_type.find("application/strategic-merge-patch+json") == std::string::npos) {
      return {415, status_json(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json")};
    }
    json p = json::parse(body, nullptr, false);
    if (!p.is_object()) return {400, status_json(400, "BadRequest", "invalid JSON patch")};
    std::lock_guard lock(mu);
    const std::string k = key("pods", ns, name);
    auto it = store["pods"].find(k);
    if (it == store["pods"].end()) return {404, status_json(404, "NotFound", "pods \"" + name + "\" not found")};
    if (p.contains("metadata") && p["metadata"].contains("resourceVersion") &&
        p["metadata"]["resourceVersion"].get<std::string>() != std::to_string(it->second.rv)) {
      return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on pods \"" + name +
                                                    "\": the object has been modified; please apply your changes to the latest version and try again")};
    }
    if (p.contains("metadata")) p["metadata"].erase("resourceVersion");
    auto updated = update_locked("pods", k, [&](json& o) { merge_patch(o, p); });
    notify();
    return {200, *updated};
  }

  template <class Stream>
  awaitable<bool> write_chunk(Stream& stream, const std::string& data) {
    auto [ec, n] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(data)), kTuple);
    co_return !ec;
  }

  static bool trace() {
    static const bool on = std::getenv("FAKE_APISERVER_TRACE") != nullptr;
    return on;
  }

  template <class Stream>
  awaitable<bool> serve_watch(Stream& stream, const http::request<http::string_body>& req, const std::string& kind,
                              const std::string& ns, const std::map<std::string, std::string>& q) {
    if (trace()) std::fprintf(stderr, "watch %s start %s\n", kind.c_str(), std::string(req.target()).c_str());
    struct Trace {
      std::string kind;
      ~Trace() {
        if (FakeApiServer::Impl::trace()) std::fprintf(stderr, "watch %s end\n", kind.c_str());
      }
    } trace_end{kind};
    std::string error;
    auto terms = parse_selector(kind, q.contains("fieldSelector") ? q.at("fieldSelector") : "", error);
    if (!terms) co_return co_await reply(stream, req, Response(400, status_json(400, "BadRequest", error)));
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
    if (consume(faults.close_watches)) co_return co_await finish();

    uint64_t sent = 0;
    std::vector<std::string> initial;
    {
      std::lock_guard lock(mu);
      if (consume(faults.expire_watches) || (!rv_param.empty() && rv_param != "0" && std::stoull(rv_param) < compacted)) {
        const std::string ev = R"({"type":"ERROR","object":)" +
                               status_json(410, "Expired", "too old resource version: " + rv_param + " (" + std::to_string(compacted) + ")") +
                               "}\n";
        // fall through after unlocking
        initial.push_back(ev);
        sent = UINT64_MAX;
      } else if (rv_param.empty() || rv_param == "0") {
        for (const auto& [k, o] : store[kind]) {
          if (!ns.empty() && o.fields.ns != ns) continue;
          if (matches(*terms, o.fields)) initial.push_back(R"({"type":"ADDED","object":)" + *o.json + "}\n");
        }
        sent = rv;
      } else {
        sent = std::stoull(rv_param);
      }
    }
    if (sent == UINT64_MAX) {
      if (!co_await write_chunk(stream, initial[0])) co_return false;
      co_return co_await finish();
    }
    if (!initial.empty() && !co_await send_events(stream, initial)) co_return false;

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
      std::vector<std::string> out;
      uint64_t current = 0;
      {
        std::lock_guard lock(mu);
        current = rv;
        if (sent < compacted) {
          // Fell behind the history while streaming: the server's cache would drop us.
          out.push_back(R"({"type":"ERROR","object":)" + status_json(410, "Expired", "too old resource version") + "}\n");
          sent = UINT64_MAX;
        } else {
          // The history is in resource-version order: start after `sent`.
          auto first = std::partition_point(history.begin(), history.end(),
                                            [&](const HistoryEvent& ev) { return ev.rv <= sent; });
          for (auto it = first; it != history.end(); ++it) {
            const HistoryEvent& ev = *it;
            if (ev.kind != kind) continue;
            if (!ns.empty() && ev.now.ns != ns) continue;
            const bool now_in = matches(*terms, ev.now);
            const bool was_in = ev.before && matches(*terms, *ev.before);
            std::string type = ev.type;
            if (ev.type == "DELETED") {
              if (!was_in) continue;
            } else if (now_in && !was_in) {
              type = "ADDED";
            } else if (!now_in && was_in) {
              type = "DELETED";  // stopped matching: the client gets the previous state
            } else if (!now_in && !was_in) {
              continue;
            }
            const auto& text = type == "DELETED" && ev.type != "DELETED" && ev.before_json ? ev.before_json : ev.json;
            out.push_back(R"({"type":")" + type + R"(","object":)" + *text + "}\n");
          }
          sent = current;
        }
      }
      if (sent == UINT64_MAX) {
        co_await write_chunk(stream, out[0]);
        co_return co_await finish();
      }
      if (!out.empty() && !co_await send_events(stream, out)) co_return false;
      const auto now = std::chrono::steady_clock::now();
      if (closing_watches || now >= deadline) {
        if (bookmarks) {
          if (!co_await write_chunk(stream, bookmark(kind, current))) co_return false;
        }
        co_return co_await finish();
      }
      if (bookmarks && now >= next_bookmark) {
        if (!co_await write_chunk(stream, bookmark(kind, current))) co_return false;
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

  std::string bookmark(const std::string& kind, uint64_t at) const {
    return R"({"type":"BOOKMARK","object":{"kind":")" + kind_name(kind) + R"(","apiVersion":"v1","metadata":{"resourceVersion":")" +
           std::to_string(at) + R"("}}})" + "\n";
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
      if (consume(faults.drop_mid_event) || draw(faults.cut_event_permille)) {
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
  std::lock_guard lock(impl_->mu);
  const std::string out = impl_->create_locked(kind, json::parse(text));
  impl_->notify();
  return out;
}

bool FakeApiServer::update(const std::string& kind, const std::string& ns, const std::string& name,
                           const std::function<std::string(const std::string&)>& fn) {
  std::lock_guard lock(impl_->mu);
  auto r = impl_->update_locked(kind, Impl::key(kind, ns, name), [&](json& o) { o = json::parse(fn(o.dump())); });
  impl_->notify();
  return r.has_value();
}

bool FakeApiServer::remove(const std::string& kind, const std::string& ns, const std::string& name) {
  std::lock_guard lock(impl_->mu);
  const bool ok = impl_->remove_locked(kind, Impl::key(kind, ns, name));
  impl_->notify();
  return ok;
}

std::optional<std::string> FakeApiServer::get(const std::string& kind, const std::string& ns, const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  auto& m = impl_->store[kind];
  auto it = m.find(Impl::key(kind, ns, name));
  if (it == m.end()) return std::nullopt;
  return *it->second.json;
}

std::vector<std::string> FakeApiServer::list(const std::string& kind) const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [k, o] : impl_->store[kind]) out.push_back(*o.json);
  return out;
}

uint64_t FakeApiServer::load_raw(const std::string& kind, const std::string& ns, const std::string& name,
                                 const std::string& uid, std::string text, const std::string& node_name,
                                 const std::string& phase) {
  std::lock_guard lock(impl_->mu);
  Obj o;
  o.uid = uid;
  o.rv = ++impl_->rv;
  o.fields.ns = ns;
  o.fields.name = name;
  o.fields.node_name = node_name;
  o.fields.phase = phase;
  o.json = std::make_shared<const std::string>(std::move(text));
  auto& slot = impl_->store[kind][Impl::key(kind, ns, name)];
  if (kind == "pods") impl_->index_pod(slot.json ? std::optional<Fields>(slot.fields) : std::nullopt, &o.fields);
  slot = std::move(o);
  impl_->compacted = impl_->rv;  // bulk loads are not in the watch history
  return impl_->rv;
}

uint64_t FakeApiServer::put_raw_event(const std::string& kind, const std::string& type, const std::string& ns,
                                      const std::string& name, const std::string& uid, std::string text,
                                      const std::string& node_name, const std::string& phase) {
  std::lock_guard lock(impl_->mu);
  Obj o;
  o.uid = uid;
  o.rv = ++impl_->rv;
  o.fields.ns = ns;
  o.fields.name = name;
  o.fields.node_name = node_name;
  o.fields.phase = phase;
  o.json = std::make_shared<const std::string>(std::move(text));
  const std::string k = Impl::key(kind, ns, name);
  auto& m = impl_->store[kind];
  std::optional<Fields> before;
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
  impl_->record(kind, type, o, before ? before : std::optional<Fields>(o.fields), before_json);
  impl_->notify();
  return impl_->rv;
}

uint64_t FakeApiServer::resource_version() const {
  std::lock_guard lock(impl_->mu);
  return impl_->rv;
}

void FakeApiServer::compact() {
  std::lock_guard lock(impl_->mu);
  impl_->history.clear();
  impl_->compacted = impl_->rv;
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

std::vector<std::string> FakeApiServer::request_log() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->request_log.begin(), impl_->request_log.end()};
}

int FakeApiServer::requests(const std::string& prefix) const {
  std::lock_guard lock(impl_->mu);
  int n = 0;
  for (const auto& [k, v] : impl_->request_counts) {
    if (k.rfind(prefix, 0) == 0) n += v;
  }
  return n;
}

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

std::string FakeApiServer::last_authorization() const {
  std::lock_guard lock(impl_->mu);
  return impl_->last_authorization;
}

int FakeApiServer::open_watches() const {
  std::promise<int> p;
  asio::post(impl_->ioc, [&] { p.set_value(static_cast<int>(impl_->watch_timers.size())); });
  return p.get_future().get();
}

TestCertificate make_test_certificate(const std::string& cn) {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* x = X509_new();
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
