#include "server/admission_routes.h"

#include <chrono>

#include "common/error_body.h"
#include "server/log.h"

namespace fracpack::server {

void AdmissionRoutes::handle(HttpRequest&& request, Reply reply) {
  const std::string path(request.path());
  if (path == "/healthz" && (request.method == "GET" || request.method == "HEAD")) return reply(HttpResponse{200, "ok\n", "text/plain"});
  if (path != "/validate") return reply(HttpResponse{404, error_body("only POST /validate (admission reviews) and GET /healthz are served here")});
  if (request.method != "POST") return reply(HttpResponse{405, error_body("use POST for /validate")});
  const auto started = std::chrono::steady_clock::now();
  auto decided = k8s::review_admission(request.body.text(), policy_);
  HttpResponse r;
  if (!decided) {
    metrics_.admission("bad_request");
    log_warn("admission review refused", {{"remote", request.remote}, {"reason", decided.message()}});
    r = HttpResponse{400, error_body(decided.message())};
  } else {
    metrics_.admission(decided->allowed ? "allowed" : "denied");
    if (!decided->allowed) log_info("admission denied", {{"reason", decided->message}});
    r = HttpResponse{200, std::move(decided->response)};
  }
  metrics_.observe_request("admission", r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  reply(std::move(r));
}

}  // namespace fracpack::server
