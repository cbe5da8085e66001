// What a parse cannot check: relations between keys, and the values of
// keys set after the parse (the command-line flags). parse_config calls it;
// so do the commands, after applying their flags.
#include <algorithm>

#include "common/text.h"
#include "common/time.h"
#include "config/config.h"
#include "scheduling/policy.h"

namespace fracpack::config {

Status validate(const Config& c) {
  if (auto contract = k8s::make_contract(c.contract); !contract) return Error{"contract.profile: " + contract.message()};
  auto listen = parse_listen(c.listen);
  if (!listen) return Error{"listen: " + listen.message()};
  // Whoever reaches the verbs may bind pods with fracpack's rights.
  if (!loopback_host(listen->first) && c.tls.client_ca_file.empty() && !c.security.allow_unauthenticated_listen) {
    return Error{"listen: \"" + c.listen +
                 "\" is reachable from other hosts and its clients are not authenticated: anyone who reaches it could bind pods "
                 "with fracpack's rights. Listen on loopback (kube-scheduler runs beside fracpack), require client certificates "
                 "(tls.clientCaFile), or set security.allowUnauthenticatedListen: true"};
  }
  if (c.scheduler_names.empty()) return Error{"schedulerNames: must name at least one scheduler"};
  if (!c.security.unsigned_before.empty() && !parse_rfc3339(c.security.unsigned_before)) {
    return Error{"security.unsignedBefore: \"" + c.security.unsigned_before + "\" is not an RFC 3339 time like 2026-11-26T00:00:00Z"};
  }
  if (!c.admission.listen.empty()) {
    if (auto a = parse_listen(c.admission.listen); !a) return Error{"admission.listen: " + a.message()};
    if (c.admission.cert_file.empty() || c.admission.key_file.empty()) {
      return Error{"admission.listen: needs admission.certFile and admission.keyFile (the API server calls webhooks over TLS only)"};
    }
  }
  if (!c.metrics_listen.empty()) {
    auto m = parse_listen(c.metrics_listen);
    if (!m) return Error{"metricsListen: " + m.message()};
    auto l = parse_listen(c.listen);
    if (m->second != 0 && m->second == l->second) return Error{"metricsListen: the port " + std::to_string(m->second) + " is listen's too"};
  }
  if (c.limits.max_body_bytes_in_flight < c.limits.max_request_bytes) {
    return Error{"limits.maxBodyBytesInFlight: " + std::to_string(c.limits.max_body_bytes_in_flight) +
                 " is below limits.maxRequestBytes (" + std::to_string(c.limits.max_request_bytes) + "): the largest request could never be read"};
  }
  if (c.url_prefix.empty() || c.url_prefix.front() != '/') return Error{"urlPrefix: must start with \"/\" (got \"" + c.url_prefix + "\")"};
  if (c.tls.cert_file.empty() != c.tls.key_file.empty()) {
    return Error{c.tls.key_file.empty() ? "tls.certFile: needs tls.keyFile too (both or neither)" : "tls.keyFile: needs tls.certFile too (both or neither)"};
  }
  if (!c.tls.client_ca_file.empty() && c.tls.cert_file.empty()) {
    return Error{"tls.clientCaFile: needs tls.certFile and tls.keyFile (client certificates are a TLS feature)"};
  }
  if (!c.cluster.kubeconfig.empty() && !c.cluster.snapshot.empty()) {
    return Error{"cluster.snapshot: excludes cluster.kubeconfig (a snapshot needs no API server)"};
  }
  const auto& known = scheduling::policy_names();
  if (std::find(known.begin(), known.end(), c.policy.name) == known.end()) {
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    return Error{"policy.name: unknown policy \"" + c.policy.name + "\" (known: " + list + ")"};
  }
  if (!c.workload.config_map.empty() && !split_object_key(c.workload.config_map).valid) {
    return Error{"workload.configMap: expected namespace/name, got \"" + c.workload.config_map + "\""};
  }
  if (const std::string& m = c.cluster.bind_fence_marker; !m.empty()) {
    if (!split_object_key(m).valid) {
      return Error{"cluster.bindFenceMarker: expected namespace/name of a pod, got \"" + m + "\""};
    }
  }
  if (auto l = parse_listen(c.node_agent.listen); !l) return Error{"nodeAgent.listen: " + l.message()};
  if (c.node_agent.device_plugin_dir.empty()) return Error{"nodeAgent.devicePluginDir: must not be empty"};
  if (c.node_agent.nvml_library.empty()) return Error{"nodeAgent.nvmlLibrary: must not be empty"};
  return Status::Ok();
}

}  // namespace fracpack::config
