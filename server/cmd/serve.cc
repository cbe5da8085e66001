// fracpack serve: the extender kube-scheduler calls (see server/daemon.h).
#include <iostream>

#include "config/config.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"
#include "server/daemon.h"
#include "server/record_keys.h"
#include "server/log.h"

namespace fracpack::cli {
namespace {

constexpr const char* kServeHelp = R"(usage: fracpack serve [options]

Runs the kube-scheduler extender: POST <prefix>filter, prioritize, bind and
preempt; GET /healthz, /readyz, /metrics, /version, /debug/ledger and
/debug/snapshot. State comes from the API server (in-cluster credentials by
default, or --kubeconfig) or, standalone, from a snapshot file (binds then
change the in-memory state only). SIGTERM or SIGINT drain gracefully.

Flags override the configuration file (config/fracpack.yaml documents every key).

options:
  --config FILE        the YAML configuration
  --listen ADDR:PORT   listen address (config: listen; default 127.0.0.1:8888)
  --url-prefix PATH    the verbs' prefix (config: urlPrefix; default /)
  --metrics-listen ADDR:PORT
                       also serve /healthz, /readyz, /metrics, /version (only) here
                       (config: metricsListen; default none)
  --kubeconfig FILE    API server access from a kubeconfig (default: in-cluster)
  --snapshot FILE      standalone: a cluster snapshot (kubectl get nodes,pods,resourcequotas -A -o json)
  --policy NAME        placement policy (config: policy.name; default fracpack)
  --profile NAME       the contract with the node agent: fracpack, hami or gpushare
                       (config: contract.profile; default fracpack)
  --tls-cert FILE      serve TLS with this certificate chain (PEM) ...
  --tls-key FILE       ... and this private key (PEM); both reloaded when they change
  --tls-client-ca FILE require client certificates signed by this CA (mutual TLS)
  --signing-key FILE   the Ed25519 key (PEM) allocation records are signed with
                       (config: security.signingKey; required against an API server)
  --verify-keys LIST   public keys (PEM files or folders, comma-separated) whose
                       signatures are accepted beside the signing key's (config: security.verifyKeys)
  --admission-listen ADDR:PORT
                       serve the validating admission webhook there, over TLS (config: admission.listen)
  --admission-cert FILE, --admission-key FILE
                       the webhook's certificate and key, PEM (config: admission.certFile, keyFile)
  --log-level LEVEL    debug, info, warn, error (default info)
  --log-format FORMAT  json or logfmt (default json)
  --check-config       validate the configuration and flags, then exit (0 valid, 1 not)
)";

}  // namespace

int cmd_serve(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv,
                          {"config", "listen", "url-prefix", "metrics-listen", "kubeconfig", "snapshot", "policy", "profile", "tls-cert", "tls-key", "tls-client-ca",
                           "signing-key", "verify-keys", "admission-listen", "admission-cert", "admission-key", "log-level", "log-format"},
                          {"check-config", "help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kServeHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("serve takes no positional arguments (see --help)");
  auto loaded = config_from_flag(*args);
  if (!loaded) return fail(loaded.message());
  config::Config c = std::move(*loaded);
  if (auto v = args->get("listen")) c.listen = *v;
  if (auto v = args->get("url-prefix")) c.url_prefix = *v;
  if (auto v = args->get("metrics-listen")) c.metrics_listen = *v;
  if (auto v = args->get("kubeconfig")) {
    c.cluster.kubeconfig = *v;
    c.cluster.snapshot.clear();
  }
  if (auto v = args->get("snapshot")) {
    if (args->has("kubeconfig")) return usage_error("--snapshot and --kubeconfig exclude each other");
    c.cluster.snapshot = *v;
    c.cluster.kubeconfig.clear();
  }
  if (auto v = args->get("policy")) c.policy.name = *v;
  if (auto v = args->get("profile")) {
    auto profile = k8s::parse_profile(*v);
    if (!profile) return usage_error("--profile: " + profile.message());
    c.contract.profile = *profile;
  }
  if (auto v = args->get("tls-cert")) c.tls.cert_file = *v;
  if (auto v = args->get("tls-key")) c.tls.key_file = *v;
  if (auto v = args->get("tls-client-ca")) c.tls.client_ca_file = *v;
  if (auto v = args->get("signing-key")) c.security.signing_key = *v;
  if (auto v = args->get("verify-keys")) c.security.verify_keys = split_list(*v);
  if (auto v = args->get("admission-listen")) c.admission.listen = *v;
  if (auto v = args->get("admission-cert")) c.admission.cert_file = *v;
  if (auto v = args->get("admission-key")) c.admission.key_file = *v;
  if (Status s = apply_log_flags(*args, c.log); !s.ok()) return usage_error(s.message());
  if (auto s = config::validate(c); !s.ok()) return fail("invalid configuration: " + s.message());
  if (auto keys = server::load_record_keys(c.security, c.cluster.snapshot.empty() ? server::RecordRole::kExtender
                                                                                     : server::RecordRole::kStandaloneExtender);
      !keys) {
    return fail(keys.message());
  }
  if (args->has("check-config")) {
    std::cout << "configuration ok\n";
    return 0;
  }
  start_service_process(c);

  server::tune_allocator_for_large_bodies();
  server::DaemonOptions options;
  options.config = c;
  options.version = FRACPACK_VERSION_STRING;
  server::Daemon daemon(std::move(options));
  if (auto s = daemon.start(); !s.ok()) return fail(s.message());
  server::log_info("draining", {{"signal", wait_for_stop_signal()}});
  daemon.drain(std::chrono::seconds(10));
  server::log_info("stopped");
  return 0;
}

}  // namespace fracpack::cli
