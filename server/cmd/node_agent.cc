// fracpack node-agent: the device plugin and card publisher on each GPU
// node (see server/node_agent.h).
#include <cstdlib>
#include <iostream>

#include "config/config.h"
#include "k8s/auth.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"
#include "server/log.h"
#include "server/node_agent.h"
#include "server/record_keys.h"

namespace fracpack::cli {
namespace {

constexpr const char* kNodeAgentHelp = R"(usage: fracpack node-agent [options]

Runs on each GPU node (a DaemonSet): discovers the cards with NVML,
publishes them as the Node's fracpack.io/gpu-devices annotation (written
only when it changes), registers the kubelet device plugin for
fracpack.io/gpu and answers each container's Allocate with the cards the
extender recorded in its pod's fracpack.io/allocation. Cards turn
unhealthy on NVML's Xid and ECC events. GET /healthz, /readyz, /metrics.
SIGTERM or SIGINT stop it.

Flags override the configuration file's nodeAgent section (and
cluster.kubeconfig, contract, log; config/fracpack.yaml documents them).

options:
  --config FILE             the YAML configuration
  --node-name NAME          this node (default $NODE_NAME, else config: nodeAgent.nodeName)
  --kubeconfig FILE         API server access from a kubeconfig (default: in-cluster)
  --device-plugin-dir DIR   kubelet's device plugin directory
                            (config: nodeAgent.devicePluginDir; default /var/lib/kubelet/device-plugins)
  --nvml-library PATH       NVML (config: nodeAgent.nvmlLibrary; default libnvidia-ml.so.1)
  --listen ADDR:PORT        /healthz, /readyz, /metrics (config: nodeAgent.listen; default 0.0.0.0:8890)
  --state-file FILE         what was allocated, kept across restarts
                            (config: nodeAgent.stateFile; default /var/lib/fracpack/node-agent.state)
  --ids-per-card N          device IDs per card: how many containers share one at most
                            (config: nodeAgent.idsPerCard; default 32)
  --without-devices MODE    no NVML or no cards: fail (exit 1) or idle
                            (config: nodeAgent.withoutDevices; default fail)
  --isolation MODE          what holds each container to its share: none, mps (the MPS control
                            daemon, `fracpack mps-control-daemon`, runs on the node) or hami-core
                            (HAMi-core's library on the node) (config: nodeAgent.isolation; default none)
  --mps-dir DIR             the MPS control daemon's folder (config: nodeAgent.mpsDir;
                            default /run/fracpack/mps)
  --mps-control PATH        nvidia-cuda-mps-control, for fracpack mps-control-daemon (config:
                            nodeAgent.mpsControl; the agent itself only reads the daemon's status)
  --hami-core-library PATH  HAMi-core's library on the node (config: nodeAgent.hamiCoreLibrary;
                            default /usr/local/vgpu/libvgpu.so)
  --verify-keys LIST        public keys (PEM files or folders, comma-separated) that sign the
                            allocation records it serves (config: security.verifyKeys)
  --log-level LEVEL         debug, info, warn, error (default info)
  --log-format FORMAT       json or logfmt (default json)
  --check-config            validate the configuration and flags, then exit (0 valid, 1 not)
)";

}  // namespace

int cmd_node_agent(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv,
                          {"config", "node-name", "kubeconfig", "device-plugin-dir", "nvml-library", "listen", "state-file", "ids-per-card",
                           "without-devices", "isolation", "mps-dir", "mps-control", "hami-core-library", "verify-keys", "log-level", "log-format"},
                          {"check-config", "help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kNodeAgentHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("node-agent takes no positional arguments (see --help)");
  auto loaded = config_from_flag(*args);
  if (!loaded) return fail(loaded.message());
  config::Config c = std::move(*loaded);
  config::NodeAgentConfig& a = c.node_agent;
  // The node's name: the flag, else $NODE_NAME (the DaemonSet's), else the
  // file (a file shared by every node must not name one).
  if (auto v = args->get("node-name")) {
    a.node_name = *v;
  } else if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') {
    a.node_name = env;
  }
  if (auto v = args->get("kubeconfig")) c.cluster.kubeconfig = *v;
  if (auto v = args->get("device-plugin-dir")) a.device_plugin_dir = *v;
  if (auto v = args->get("nvml-library")) a.nvml_library = *v;
  if (auto v = args->get("listen")) a.listen = *v;
  if (auto v = args->get("state-file")) a.state_file = *v;
  if (auto v = args->get("ids-per-card")) {
    const auto n = parse_integer(*v);
    if (!n || *n < 1 || *n > 1024) return usage_error("--ids-per-card: expected a whole number 1..1024, got \"" + *v + "\"");
    a.ids_per_card = *n;
  }
  if (auto v = args->get("without-devices")) {
    auto w = config::parse_without_devices(*v);
    if (!w) return usage_error("--without-devices: " + w.message());
    a.without_devices = *w;
  }
  if (auto v = args->get("isolation")) {
    if (!scheduling::parse_isolation(*v, a.isolation) || a.isolation == scheduling::CardIsolation::kMig) {
      return usage_error("--isolation: expected none, mps or hami-core, got \"" + *v + "\"");
    }
  }
  if (auto v = args->get("mps-dir")) a.mps_dir = *v;
  if (auto v = args->get("mps-control")) a.mps_control = *v;
  if (auto v = args->get("hami-core-library")) a.hami_core_library = *v;
  if (auto v = args->get("verify-keys")) c.security.verify_keys = split_list(*v);
  if (Status s = apply_log_flags(*args, c.log); !s.ok()) return usage_error(s.message());
  if (auto s = config::validate(c); !s.ok()) return fail("invalid configuration: " + s.message());
  if (!k8s::node_agent_serves(c.contract.profile)) {
    const std::string profile(k8s::profile_name(c.contract.profile));
    return fail("contract.profile is " + profile + ": the node agent carries out the fracpack and tke contracts only (with the " +
                profile + " profile, the peer's own device plugin runs on the nodes)");
  }
  if (c.contract.profile == k8s::Profile::kTke && args->has("ids-per-card")) {
    return usage_error("--ids-per-card: the tke profile advertises 100 IDs a card (tencent.com/vcuda-core is percent of a card)");
  }
  if (a.node_name.empty()) return fail("no node name: give --node-name or set NODE_NAME (the DaemonSet passes spec.nodeName)");
  auto keys = server::load_record_keys(c.security, server::RecordRole::kNodeAgent);
  if (!keys) return fail(keys.message());
  if (args->has("check-config")) {
    std::cout << "configuration ok\n";
    return 0;
  }
  start_service_process(c);
  if (!keys->trust.verifies()) {
    server::log_warn("allocation records are not verified",
                     {{"consequence", "any user who may patch a pod can write a record this agent serves"},
                      {"setting", "security.records: unsigned"}});
  }

  auto client = k8s::cluster_client_config(c.cluster.kubeconfig);
  if (!client) return fail(client.message() + " (give --kubeconfig)");
  client->request_timeout = c.cluster.request_timeout;
  server::NodeAgentOptions o;
  o.node_name = a.node_name;
  o.client = *client;
  o.names = c.contract.fracpack;
  if (c.contract.profile != k8s::Profile::kFracpack) {  // fracpack's: the agent's default contract, with o.names
    auto contract = k8s::make_contract(c.contract);
    if (!contract) return fail(contract.message());
    o.contract = *contract;
  }
  o.scheduler_names = c.scheduler_names;
  o.trust = keys->trust;
  o.plugin.plugin_dir = a.device_plugin_dir;
  o.plugin.slots = static_cast<int>(a.ids_per_card);
  o.plugin.cdi = a.cdi;
  o.plugin.visible_devices_env = a.visible_devices_env;
  o.plugin.record_wait = a.record_wait;
  o.plugin.isolation.mode = a.isolation;
  o.plugin.isolation.mps_dir = a.mps_dir;
  o.plugin.isolation.hami_core_library = a.hami_core_library;
  o.plugin.isolation.hami_core_dir = a.hami_core_dir;
  o.nvml_library = a.nvml_library;
  o.state_file = a.state_file;
  o.idle_without_devices = a.without_devices == config::WithoutDevices::kIdle;
  auto listen = config::parse_listen(a.listen);  // validate() accepted it
  o.listen_address = listen->first.empty() ? "0.0.0.0" : listen->first;
  o.listen_port = listen->second;
  o.version = FRACPACK_VERSION_STRING;
  server::NodeAgent agent(std::move(o));
  if (auto s = agent.start(); !s.ok()) return fail(s.message());
  server::log_info("stopping", {{"signal", wait_for_stop_signal()}});
  agent.stop();
  server::log_info("stopped");
  return 0;
}

}  // namespace fracpack::cli
