// The HTTP handler of `fracpack serve`: the extender verbs under the URL
// prefix (POST only) and the status routes (GET/HEAD), every answer timed
// and counted under its verb (fracpack_http_request_duration_seconds,
// fracpack_http_requests_total).
#pragma once

#include <string>

#include "server/bind_service.h"
#include "server/extender_service.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/status_routes.h"

namespace fracpack::server {

class Router {
 public:
  Router(ExtenderService& verbs, BindService& binds, StatusRoutes& status, Metrics& metrics, const std::string& url_prefix);
  void handle(HttpRequest&& request, Reply reply);

 private:
  ExtenderService& verbs_;
  BindService& binds_;
  StatusRoutes& status_;
  Metrics& metrics_;
  std::string prefix_;  // url_prefix ending in "/"
};

}  // namespace fracpack::server
