#include "server/listeners.h"

#include <string>

namespace fracpack::server {

std::string_view listener_key(Listener listener) {
  switch (listener) {
    case Listener::kExtender: return "listen";
    case Listener::kMetrics: return "metricsListen";
    case Listener::kAdmission: return "admission.listen";
  }
  return "?";
}

Result<HttpOptions> listener_options(const config::Config& c, Listener listener) {
  const std::string& address = listener == Listener::kExtender ? c.listen
                               : listener == Listener::kMetrics ? c.metrics_listen
                                                                 : c.admission.listen;
  auto parsed = config::parse_listen(address);
  if (!parsed) return Error{std::string(listener_key(listener)) + ": " + parsed.message()};
  HttpOptions o;
  o.address = parsed->first.empty() ? "0.0.0.0" : parsed->first;
  o.port = parsed->second;
  o.threads = static_cast<int>(c.io_threads);
  o.max_body_bytes = static_cast<size_t>(c.limits.max_request_bytes);
  o.max_connections = static_cast<size_t>(c.limits.max_connections);
  o.max_body_bytes_in_flight = static_cast<size_t>(c.limits.max_body_bytes_in_flight);
  o.header_timeout = c.limits.header_timeout;
  o.body_timeout = c.limits.body_timeout;
  o.idle_timeout = c.limits.idle_timeout;
  o.write_timeout = c.limits.write_timeout;
  o.cert_file = c.tls.cert_file;
  o.key_file = c.tls.key_file;
  o.client_ca_file = c.tls.client_ca_file;
  o.tls_reload = c.tls.reload_interval;
  switch (listener) {
    case Listener::kExtender:
      break;
    case Listener::kMetrics:
      o.threads = 1;
      o.max_connections = 64;
      o.cert_file.clear();  // plain HTTP: what kubelet's probes and a scrape expect
      o.key_file.clear();
      o.client_ca_file.clear();
      break;
    case Listener::kAdmission:
      o.threads = 1;
      o.max_connections = 256;
      // An AdmissionReview carries the object twice (object, oldObject): a
      // pod is at most ~1.5 MiB in etcd.
      o.max_body_bytes = 8 << 20;
      o.max_body_bytes_in_flight = 64 << 20;
      o.cert_file = c.admission.cert_file;
      o.key_file = c.admission.key_file;
      o.client_ca_file.clear();  // the API server authenticates the webhook, not the other way round
      break;
  }
  return o;
}

}  // namespace fracpack::server
