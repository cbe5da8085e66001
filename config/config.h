// fracpack's configuration: one YAML file (config/fracpack.yaml documents
// every key), overridden by command-line flags. Reading is strict: an
// unknown key, a wrong type or an out-of-range value is an error naming the
// key and its line, never ignored.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/values.h"
#include "k8s/bind_fence_read.h"
#include "k8s/contract/profiles.h"
#include "scheduling/model.h"
#include "k8s/scheduler_names.h"
#include "common/result.h"

namespace fracpack::config {

using std::chrono::milliseconds;

struct TlsConfig {
  std::string cert_file;  // both set: the extender port speaks TLS
  std::string key_file;
  std::string client_ca_file;  // mutual TLS: clients must present a certificate signed by this CA
  milliseconds reload_interval{10000};  // how often the files are checked for a new certificate
  bool operator==(const TlsConfig&) const = default;
};

struct LimitsConfig {
  int64_t max_request_bytes = 64 << 20;
  int64_t max_connections = 1024;
  int64_t max_body_bytes_in_flight = 256 << 20;
  milliseconds header_timeout{10000};
  milliseconds body_timeout{30000};
  milliseconds idle_timeout{120000};
  milliseconds write_timeout{30000};
  bool operator==(const LimitsConfig&) const = default;
};

struct ClusterConfig {
  std::string kubeconfig;  // "" and no snapshot: in-cluster
  std::string snapshot;    // a cluster snapshot file: no API server
  milliseconds request_timeout{10000};
  milliseconds assume_ttl{30000};
  milliseconds reconcile_interval{10000};
  // A bind not posted within this of its arrival is refused: below
  // kube-scheduler's extender httpTimeout (5 s by default), so no Binding is
  // posted after the scheduler stopped waiting for it.
  milliseconds bind_timeout{4000};
  // How a GPU bind reads what the API server has bound on its node
  // (k8s/bind_fence.h): auto (the API server's version picks: consistent
  // from 1.31, where the watch cache serves it, marker before),
  // consistent (one consistent list), marker (a write to the marker pod,
  // then a cached read) or resourceVersion (two reads; waits for a pod
  // write before 1.21).
  k8s::BindFenceRead bind_fence_read = k8s::BindFenceRead::kAuto;
  // The marker pod, namespace/name ("" = none: marker reads consistently).
  std::string bind_fence_marker = "fracpack-system/fracpack-bind-fence";
  bool events = true;
  bool operator==(const ClusterConfig&) const = default;
};

struct PolicyConfig {
  std::string name = "fracpack";
  int64_t seed = 42;
  bool learn = true;
  double learn_half_life = 2000;
  double prior_weight = 2000;
  bool check_node_resources = true;  // also check CPU and memory, as NodeResourcesFit does
  bool operator==(const PolicyConfig&) const = default;
};

struct WorkloadConfig {
  std::string config_map = "fracpack-system/fracpack-target-workload";  // namespace/name; "" = none
  std::string file;                                                 // a workload JSON file
  bool operator==(const WorkloadConfig&) const = default;
};

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kJson;
  bool operator==(const LogConfig&) const = default;
};

// The configuration's enums (WithoutDevices, RecordSigning, LogLevel,
// LogFormat) and their one parser each: config/values.h.

// `fracpack node-agent` (the DaemonSet on GPU nodes). It shares the
// contract's names, cluster.kubeconfig and log with the extender.
struct NodeAgentConfig {
  std::string node_name;  // when $NODE_NAME is unset
  std::string device_plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string listen = "0.0.0.0:8890";  // /healthz, /readyz, /metrics
  std::string state_file = "/var/lib/fracpack/node-agent.state";
  int64_t ids_per_card = 32;            // device IDs per card: containers sharing it at most
  WithoutDevices without_devices = WithoutDevices::kFail;  // no NVML or no cards: fail (exit 1) or idle
  bool cdi = true;                      // Allocate names CDI devices
  bool visible_devices_env = true;      // Allocate sets NVIDIA_VISIBLE_DEVICES
  milliseconds record_wait{10000};      // an Allocate waits this long for its pod to be seen
  // What holds each container to its share (README "Isolation"): none,
  // mps (the MPS control daemon `fracpack mps-control-daemon` runs beside
  // the agent) or hami-core (HAMi-core's library at hami_core_library).
  scheduling::CardIsolation isolation = scheduling::CardIsolation::kNone;
  std::string mps_control = "nvidia-cuda-mps-control";     // the MPS control binary (mps-control-daemon)
  std::string mps_dir = "/run/fracpack/mps";                // host folder the MPS daemon owns: pipe/, log/, shm/, status
  std::string hami_core_library = "/usr/local/vgpu/libvgpu.so";  // host path of HAMi-core's library
  std::string hami_core_dir = "/var/lib/fracpack/hami-core";      // host folder of the per-container caches
  bool operator==(const NodeAgentConfig&) const = default;
};

// Tenant safety (README "Security model"): who may write what, and what
// each layer checks.
struct SecurityConfig {
  // kSigned: the extender signs every allocation record (signing_key); it
  // and the node agents charge and serve only records that verify with
  // verify_keys (k8s/record_signature.h). kUnsigned: records are taken as
  // written — any user who may patch a pod can forge one; only where
  // admission control stops users writing them.
  RecordSigning records = RecordSigning::kSigned;
  std::string signing_key;               // Ed25519 private key, PEM (the extender)
  std::vector<std::string> verify_keys;  // public keys: PEM files or folders of them
  // RFC 3339: pods created before this may carry unsigned records (the
  // records of a live switch from an older fracpack or from a peer's
  // scheduler). "" none.
  std::string unsigned_before;
  // A `listen` other than loopback serves bind to anyone who reaches it:
  // refused unless clients must show a certificate (tls.clientCaFile) or
  // this is set.
  bool allow_unauthenticated_listen = false;
  bool operator==(const SecurityConfig&) const = default;
};

// The validating admission webhook (k8s/admission.h), served over TLS on
// its own listener.
struct AdmissionConfig {
  std::string listen;  // "" off; e.g. ":9443"
  std::string cert_file;
  std::string key_file;
  // Users who may write the record's annotations (the extender's service
  // account writes them through pods/binding; a peer's device plugin
  // rewrites its own).
  std::vector<std::string> record_writers = {"system:serviceaccount:fracpack-system:fracpack"};
  bool operator==(const AdmissionConfig&) const = default;
};

struct Config {
  std::string listen = "127.0.0.1:8888";
  std::string url_prefix = "/";  // the verbs are served under it: <prefix>filter, ...
  // A second, plain-HTTP listener serving only /healthz, /readyz, /metrics
  // and /version ("" = none): the verbs stay on a loopback `listen` while
  // kubelet's probes and Prometheus reach the pod's address.
  std::string metrics_listen;
  int64_t io_threads = 2;
  int64_t bind_workers = 64;
  TlsConfig tls;
  LimitsConfig limits;
  ClusterConfig cluster;
  PolicyConfig policy;
  WorkloadConfig workload;
  LogConfig log;
  // The schedulerName(s) of the pods fracpack places: it binds, and its node
  // agent serves, no other pod.
  std::vector<std::string> scheduler_names = k8s::default_scheduler_names();
  k8s::ContractConfig contract;  // "contract:" in the file: the profile, its names and options
  NodeAgentConfig node_agent;    // "nodeAgent:"
  SecurityConfig security;
  AdmissionConfig admission;
  bool operator==(const Config&) const = default;
};

// Parses YAML text; `source` names it in errors ("fracpack.yaml").
Result<Config> parse_config(std::string_view yaml, const std::string& source);
Result<Config> load_config(const std::string& path);

// Every key the file may hold, dotted ("limits.maxConnections").
std::vector<std::string> config_keys();

// Checks what a parse cannot (relations between keys); parse_config calls it.
Status validate(const Config& c);

// parse_duration, parse_listen, loopback_host: config/values.h.

}  // namespace fracpack::config
