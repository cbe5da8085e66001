#include "test/support/fake_apiserver_routes.h"

#include <cstdio>
#include <cstdlib>

namespace fracpack::testing::fake {

bool consume(std::atomic<int>& counter) {
  int v = counter.load();
  while (v > 0) {
    if (counter.compare_exchange_weak(v, v - 1)) return true;
  }
  return false;
}

bool Dice::draw(const std::atomic<int>& permille) {
  const int p = permille.load();
  if (p <= 0) return false;
  std::lock_guard lock(mu_);
  return static_cast<int>(rng_() % 1000) < p;
}

bool trace() {
  static const bool on = std::getenv("FAKE_APISERVER_TRACE") != nullptr;
  return on;
}

namespace {

Route answer(int status, std::string body, std::string retry_after = {}) {
  Route r;
  r.response = Response(status, std::move(body), std::move(retry_after));
  return r;
}

// "?key=value&..." with the values that change from call to call (resume
// points, tokens, timeouts) masked, so requests(prefix) can count a kind
// of request: "GET /api/v1/pods?fieldSelector=spec.nodeName=n1,...".
std::string query_shape(const std::map<std::string, std::string>& query) {
  std::string out;
  for (const auto& [k, v] : query) {
    const bool masked = k == "resourceVersion" || k == "continue" || k == "timeoutSeconds";
    out += (out.empty() ? "?" : "&") + k + "=" + (masked && v != "0" ? std::string("*") : v);
  }
  return out;
}

}  // namespace

Route FakeRoutes::route(const Request& req) {
  const std::string& method = req.method;
  const std::string& path = req.path;
  const auto& query = req.query;
  if (trace()) std::fprintf(stderr, "request %s %s\n", method.c_str(), req.target.c_str());
  {
    std::lock_guard lock(log_mu_);
    ++request_counts_[method + " " + path + query_shape(query)];
    request_log_.push_back(method + " " + req.target);
    if (request_log_.size() > 1000) request_log_.pop_front();
    last_authorization_ = req.authorization;
  }
  if (options_.tls && !options_.token.empty()) {
    if (req.authorization != "Bearer " + options_.token) {
      return answer(401, status_json(401, "Unauthorized", "Unauthorized"));
    }
  }
  if (consume(faults_.unauthorized)) return answer(401, status_json(401, "Unauthorized", "Unauthorized"));
  if (consume(faults_.throttle)) {
    return answer(429,
                  status_json(429, "TooManyRequests", "Too many requests, please try again later.",
                              json{{"retryAfterSeconds", 1}}),
                  "1");
  }

  // Discovery and version, for kubectl.
  if (method == "GET" && path == "/version") {
    return answer(200, json{{"major", "1"}, {"minor", options_.minor_version}, {"gitVersion", "v1." + options_.minor_version + ".0-fracpack-fake"},
                            {"platform", "linux/amd64"}}
                           .dump());
  }
  if (method == "GET" && path == "/api") {
    return answer(200, json{{"kind", "APIVersions"},
                            {"versions", {"v1"}},
                            {"serverAddressByClientCIDRs",
                             {{{"clientCIDR", "0.0.0.0/0"},
                               {"serverAddress", "127.0.0.1:" + std::to_string(port_)}}}}}
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
                   res("nodes", "Node", false, {"get", "list", "patch", "watch"}, {"no"}),
                   res("events", "Event", true, {"create", "get", "list", "watch"}, {"ev"}),
                   res("resourcequotas", "ResourceQuota", true, {"create", "delete", "get", "list", "watch"}, {"quota"})}}};
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
  if (kind != "pods" && kind != "nodes" && kind != "events" && kind != "bindings" && kind != "configmaps" && kind != "resourcequotas") {
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
    r.response = store_.list(kind, ns, query, !query.contains("continue") && query.contains("resourceVersion") &&
                                                    query.at("resourceVersion") != "0" && query.at("resourceVersion") != "" &&
                                                    consume(faults_.expire_lists));
    return r;
  }
  if (method == "GET" && sub.empty()) {
    if (consume(faults_.fail_gets)) return answer(500, status_json(500, "InternalError", "Internal error occurred: injected failure"));
    std::lock_guard lock(store_.mu);
    auto it = store_.objects[kind].find(FakeStore::key(kind, ns, name));
    if (it == store_.objects[kind].end()) {
      return answer(404, status_json(404, "NotFound", kind + " \"" + name + "\" not found",
                                     json{{"name", name}, {"kind", kind}}));
    }
    return answer(200, *it->second.json);
  }
  if (method == "POST" && kind == "pods" && sub == "binding") {
    if (consume(faults_.drop_binding_response)) {
      bind(ns, name, req.body);
      Route r;
      r.drop = true;  // applied, then the connection drops before the answer
      return r;
    }
    Route r;
    r.response = bind(ns, name, req.body);
    if (r.response.status == 201 && dice_.draw(faults_.lose_binding_permille)) {
      r.response = Response(500, status_json(500, "InternalError", "Internal error occurred: injected failure after the write"));
    }
    return r;
  }
  if (method == "POST" && kind == "bindings") {
    json b = json::parse(req.body, nullptr, false);
    const std::string n = b.is_object() ? b.value("metadata", json::object()).value("name", "") : "";
    Route r;
    r.response = bind(ns, n, req.body);
    return r;
  }
  if (method == "POST" && (kind == "events" || kind == "pods" || kind == "resourcequotas") && name.empty()) {
    json o = json::parse(req.body, nullptr, false);
    if (!o.is_object()) return answer(400, status_json(400, "BadRequest", "invalid JSON body"));
    o["metadata"]["namespace"] = ns;
    std::lock_guard lock(store_.mu);
    const std::string stored = store_.create_locked(kind, o);
    store_.changed();
    return answer(201, stored);
  }
  if (method == "PATCH" && (kind == "pods" || kind == "nodes") && !name.empty() && sub.empty()) {
    Route r;
    r.response = store_.patch(kind, ns, name, req.content_type, req.body);
    return r;
  }
  if (method == "DELETE" && !name.empty() && sub.empty()) {
    std::lock_guard lock(store_.mu);
    if (!store_.remove_locked(kind, FakeStore::key(kind, ns, name))) {
      return answer(404, status_json(404, "NotFound", kind + " \"" + name + "\" not found"));
    }
    store_.changed();
    return answer(200, status_json(200, "", ""));
  }
  return answer(405, status_json(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
}

// The Binding, with the faults that answer it before the store sees it.
Response FakeRoutes::bind(const std::string& ns, const std::string& name, const std::string& body) {
  if (consume(faults_.conflict_bindings)) {
    return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + name + "\": injected conflict")};
  }
  if (consume(faults_.fail_bindings)) return {500, status_json(500, "InternalError", "Internal error occurred: injected failure")};
  return store_.bind(ns, name, body);
}

int FakeRoutes::requests(const std::string& prefix) const {
  std::lock_guard lock(log_mu_);
  int n = 0;
  for (const auto& [k, v] : request_counts_) {
    if (k.rfind(prefix, 0) == 0) n += v;
  }
  return n;
}

std::vector<std::string> FakeRoutes::request_log() const {
  std::lock_guard lock(log_mu_);
  return {request_log_.begin(), request_log_.end()};
}

std::string FakeRoutes::last_authorization() const {
  std::lock_guard lock(log_mu_);
  return last_authorization_;
}

}  // namespace fracpack::testing::fake
