// What a parse cannot check (config/validate.cc): relations between keys,
// and values the command-line flags set after the parse. validate() is
// called on a Config built in code here; config_test.cc sees the same rules
// through the file, with their lines.
#include <gtest/gtest.h>

#include <functional>

#include "config/config.h"

namespace fracpack::config::validate_test {
namespace {

TEST(Validate, TheDefaultsAreValid) { EXPECT_TRUE(validate(Config{}).ok()) << validate(Config{}).message(); }

struct Case {
  const char* name;
  std::function<void(Config&)> change;
  const char* message;  // the start of validate()'s message
};

const Case kRefused[] = {
    {"listen without a port", [](Config& c) { c.listen = "8888"; },
     "listen: expected HOST:PORT"},
    {"verbs open to the network", [](Config& c) { c.listen = ":8888"; }, "listen: \":8888\" is reachable from other hosts"},
    {"no scheduler name", [](Config& c) { c.scheduler_names.clear(); }, "schedulerNames: must name at least one scheduler"},
    {"unsigned before a non-time", [](Config& c) { c.security.unsigned_before = "yesterday"; },
     "security.unsignedBefore: \"yesterday\" is not an RFC 3339 time"},
    {"webhook listen unreadable", [](Config& c) { c.admission.listen = "x"; }, "admission.listen: expected HOST:PORT"},
    {"webhook without a certificate", [](Config& c) { c.admission.listen = ":9443"; },
     "admission.listen: needs admission.certFile and admission.keyFile"},
    {"metrics listen unreadable", [](Config& c) { c.metrics_listen = "x"; }, "metricsListen: expected HOST:PORT"},
    {"metrics on listen's port", [](Config& c) { c.metrics_listen = ":8888"; }, "metricsListen: the port 8888 is listen's too"},
    {"bodies in flight below one request", [](Config& c) { c.limits.max_body_bytes_in_flight = c.limits.max_request_bytes - 1; },
     "limits.maxBodyBytesInFlight: "},
    {"url prefix without slash", [](Config& c) { c.url_prefix = "x/"; }, "urlPrefix: must start with \"/\""},
    {"empty url prefix", [](Config& c) { c.url_prefix.clear(); }, "urlPrefix: must start with \"/\""},
    {"certificate without key", [](Config& c) { c.tls.cert_file = "/c"; }, "tls.certFile: needs tls.keyFile too"},
    {"key without certificate", [](Config& c) { c.tls.key_file = "/k"; }, "tls.keyFile: needs tls.certFile too"},
    {"client CA without TLS", [](Config& c) { c.tls.client_ca_file = "/ca"; }, "tls.clientCaFile: needs tls.certFile and tls.keyFile"},
    {"kubeconfig and snapshot", [](Config& c) { c.cluster.kubeconfig = "/k"; c.cluster.snapshot = "/s"; },
     "cluster.snapshot: excludes cluster.kubeconfig"},
    {"unknown policy", [](Config& c) { c.policy.name = "magic"; }, "policy.name: unknown policy \"magic\" (known: "},
    {"workload ConfigMap without a name", [](Config& c) { c.workload.config_map = "ns/"; }, "workload.configMap: expected namespace/name"},
    {"bind fence marker with two slashes", [](Config& c) { c.cluster.bind_fence_marker = "a/b/c"; },
     "cluster.bindFenceMarker: expected namespace/name of a pod"},
    {"node agent listen", [](Config& c) { c.node_agent.listen = "nowhere"; }, "nodeAgent.listen: expected HOST:PORT"},
    {"no device plugin folder", [](Config& c) { c.node_agent.device_plugin_dir.clear(); }, "nodeAgent.devicePluginDir: must not be empty"},
    {"no NVML library", [](Config& c) { c.node_agent.nvml_library.clear(); }, "nodeAgent.nvmlLibrary: must not be empty"},
};

TEST(Validate, RefusesEachBrokenRelationNamingItsKey) {
  for (const Case& k : kRefused) {
    Config c;
    k.change(c);
    const Status s = validate(c);
    ASSERT_FALSE(s.ok()) << k.name;
    EXPECT_EQ(s.message().rfind(k.message, 0), 0u) << k.name << ": got " << s.message();
  }
}

TEST(Validate, AcceptsWhatEachRuleAllows) {
  const std::function<void(Config&)> allowed[] = {
      [](Config& c) { c.listen = ":8888"; c.security.allow_unauthenticated_listen = true; },
      [](Config& c) { c.listen = ":8888"; c.tls = {"/c", "/k", "/ca", c.tls.reload_interval}; },
      [](Config& c) { c.listen = "[::1]:8888"; },
      [](Config& c) { c.metrics_listen = ":0"; c.listen = "127.0.0.1:0"; },  // port 0: any, never a clash
      [](Config& c) { c.metrics_listen = ":9090"; },
      [](Config& c) { c.security.unsigned_before = "2026-11-26T00:00:00Z"; },
      [](Config& c) { c.admission = {":9443", "/c", "/k", c.admission.record_writers}; },
      [](Config& c) { c.workload.config_map.clear(); },
      [](Config& c) { c.cluster.bind_fence_marker.clear(); },
      [](Config& c) { c.cluster.snapshot = "/s"; },
      [](Config& c) { c.limits.max_body_bytes_in_flight = c.limits.max_request_bytes; },
  };
  for (size_t i = 0; i < std::size(allowed); ++i) {
    Config c;
    allowed[i](c);
    const Status s = validate(c);
    EXPECT_TRUE(s.ok()) << "case " << i << ": " << s.message();
  }
}

}  // namespace
}  // namespace fracpack::config::validate_test
