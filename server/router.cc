#include "server/router.h"

#include <chrono>

#include "common/error_body.h"

namespace fracpack::server {

Router::Router(ExtenderService& verbs, BindService& binds, StatusRoutes& status, Metrics& metrics, const std::string& url_prefix)
    : verbs_(verbs), binds_(binds), status_(status), metrics_(metrics), prefix_(url_prefix.empty() ? "/" : url_prefix) {
  if (prefix_.back() != '/') prefix_.push_back('/');
}

void Router::handle(HttpRequest&& request, Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  const std::string path(request.path());
  std::string verb = "other";
  for (const char* v : {"filter", "prioritize", "bind", "preempt"}) {
    if (path == prefix_ + v) verb = v;
  }
  // Every answer is timed and counted under its verb.
  Reply timed = [this, started, verb, reply = std::move(reply)](HttpResponse r) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.observe_request(verb, r.status, s);
    reply(std::move(r));
  };
  if (verb != "other") {
    if (request.method != "POST") return timed(HttpResponse{405, error_body("use POST for " + path)});
    if (verb == "filter") return timed(verbs_.filter(request.body.padded()));
    if (verb == "prioritize") return timed(verbs_.prioritize(request.body.padded()));
    if (verb == "preempt") return timed(verbs_.preempt(request.body.text()));
    return binds_.bind(request.body.text(), std::move(timed), request.arrived);
  }
  if (request.method != "GET" && request.method != "HEAD") {
    const bool known = path == "/healthz" || path == "/readyz" || path == "/metrics";
    return timed(HttpResponse{known ? 405 : 404, error_body("no " + request.method + " " + path)});
  }
  if (auto r = status_.get(path)) return timed(std::move(*r));
  timed(HttpResponse{404, error_body("no route " + path + " (verbs are served under " + prefix_ + ")")});
}

}  // namespace fracpack::server
