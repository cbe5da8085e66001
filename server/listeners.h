// The daemon's three HTTP listeners and their options, from the
// configuration: one function, so the limits, timeouts and TLS files they
// share are read in one place and each listener's differences stand beside
// each other.
//
//   kExtender   listen: the verbs, /healthz, /readyz, /metrics, /version;
//               the configured limits and TLS (tls.*).
//   kMetrics    metricsListen: probes and /metrics only; one thread, 64
//               connections, plain HTTP (what kubelet's probes and a
//               scrape expect).
//   kAdmission  admission.listen: the validating webhook; one thread, 256
//               connections, 8 MiB bodies, TLS with admission.certFile and
//               keyFile and no client certificates (the API server
//               authenticates the webhook, not the other way round).
#pragma once

#include "common/result.h"
#include "config/config.h"
#include "server/http_server.h"

namespace fracpack::server {

enum class Listener { kExtender, kMetrics, kAdmission };

// The key that configures the listener's address ("listen", "metricsListen",
// "admission.listen"): errors start with it.
std::string_view listener_key(Listener listener);

// The options of `listener`; an error when its address does not parse.
Result<HttpOptions> listener_options(const config::Config& c, Listener listener);

}  // namespace fracpack::server
