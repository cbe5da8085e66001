// Answers the extender's services give alike.
#pragma once

#include <string>

#include "common/error_body.h"
#include "server/http_server.h"

namespace fracpack::server {

// 400 with the extender's error body naming what was wrong.
inline HttpResponse bad_request(const std::string& message) { return HttpResponse{400, error_body(message)}; }

}  // namespace fracpack::server
