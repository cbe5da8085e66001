// A real Kubernetes v1.20.2 on this machine, for the real-cluster test tier
// and the real-scheduler bench: etcd, kube-apiserver (RBAC on, token
// authentication), kube-scheduler (the shipped extender block, as v1beta1),
// `fracpack serve` (the shipped configuration, with the webhook registered),
// and, for the node side, containerd + CNI loopback + kubelet + `fracpack
// node-agent` over the test fake NVML. How each component starts on this
// kind of machine is ../shared/k8s/README.md; this class is how fracpack's
// tests use them: the shipped manifests applied unchanged (namespace, RBAC,
// the node agent's account, the webhook registration pointed at loopback),
// one identity per component, a tenant user `alice` who may edit pods in
// namespace team-b and nothing else.
//
// Needs root, the binaries of ../shared/k8s, and etcd, containerd, runc and
// the CNI plugins from Debian (.ci/install-deps). unavailable() says why not.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/api_client.h"
#include "common/result.h"

namespace fracpack::real {

struct RealClusterOptions {
  bool node = true;        // containerd, kubelet and the node agent (false: the control plane only, e.g. a bench)
  bool fracpack = true;    // fracpack serve and the scheduler calling it (false: a bare kube-scheduler)
  bool webhook = true;     // register fracpack's admission webhook
  std::string fence_read;  // fracpack's cluster.bindFenceRead ("" keeps the shipped configuration's)
  int cards = 4;           // the fake NVML's cards (A100 40 GB, two per NUMA node)
};

class RealCluster {
 public:
  explicit RealCluster(RealClusterOptions options = {});
  ~RealCluster();  // down()
  RealCluster(const RealCluster&) = delete;
  RealCluster& operator=(const RealCluster&) = delete;

  // Why this machine cannot run it ("" when it can): not root, a binary or
  // package missing.
  static std::string unavailable();

  Status up();
  void down();

  // Stops and starts again; each returns once the component is ready.
  Status restart_fracpack(bool kill_hard = true);
  Status restart_apiserver();
  // kube-apiserver stopped as a restart stops it (SIGTERM: it closes its
  // idle connections, then its port refuses), and started again.
  Status stop_apiserver();
  Status start_apiserver_again();
  // A client as cluster admin, for tests that drive fracpack's own client
  // code (k8s/api_client.h) against the real API server.
  k8s::ClientConfig admin_client_config() const;
  // kube-apiserver's audit log (JSON lines): every pods/binding request as
  // it was received (RequestReceived), for what reached the API server.
  std::string audit_log() const;
  Status restart_kubelet();
  // Restarts the node agent; waits until kubelet offers its cards, or (with
  // kubelet stopped: `offered` false) only until it publishes them.
  Status restart_agent(bool offered = true);
  // The agent's --isolation from its next start ("": the configuration's).
  void set_agent_isolation(std::string isolation) { agent_isolation_ = std::move(isolation); }
  // The HA pair of manifests/deployment.yaml: kube-scheduler restarted as
  // replica 1 with the shipped leader election (running, as the Deployment
  // does, as fracpack's ServiceAccount), then replica 2 (its kube-scheduler
  // and its fracpack, on ports of their own) as the standby.
  Status start_ha_pair();
  // The replica whose kube-scheduler holds the lease (0: none).
  int leader();
  // SIGKILLs replica `i` (1 or 2): its kube-scheduler and its fracpack.
  void kill_replica(int i);
  Status stop_kubelet();
  Status start_kubelet();
  // `fracpack mps-control-daemon` (the shipped config's isolation is mps),
  // run with the stand-in nvidia-cuda-mps-control and the fake NVML: start
  // waits until its status says ready; stop is SIGTERM (it quits the
  // control daemon and says stopped).
  Status start_mps_daemon();
  // hard: SIGKILL, as when its container is killed (its control daemon,
  // in a process group of its own, lives on; the status goes stale).
  void stop_mps_daemon(bool hard = false);
  std::string mps_dir() const { return dir_ + "/mps"; }
  // Compacts etcd to its current revision (watches resumed from older
  // versions then get 410 Gone).
  Status compact_etcd();
  // Removes / registers fracpack's ValidatingWebhookConfiguration.
  Status set_webhook(bool on);

  // Requests as cluster admin, fracpack, or the tenant user alice.
  enum class As { kAdmin, kAlice };
  Result<k8s::HttpResponse> request(const std::string& method, const std::string& path, const std::string& body = {},
                                    As as = As::kAdmin, const std::string& content_type = "application/json");
  Result<nlohmann::json> get(const std::string& path);
  // Creates `object` (JSON) in its collection; the stored object or the API server's refusal.
  Result<nlohmann::json> create(const nlohmann::json& object, As as = As::kAdmin);
  // The items of a list at `path` (none when it cannot be read).
  std::vector<nlohmann::json> items(const std::string& path);
  std::vector<nlohmann::json> pods(const std::string& ns);
  std::vector<nlohmann::json> events(const std::string& ns);
  std::optional<nlohmann::json> pod(const std::string& ns, const std::string& name);
  // Deletes every pod of `ns` (grace 0) and waits until they are gone.
  void delete_pods(const std::string& ns);
  // The log of a pod's container.
  std::string log(const std::string& ns, const std::string& pod, const std::string& container);

  // Waits for `pred`, polling every 100 ms.
  static bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

  const std::string& dir() const { return dir_; }
  // The log of component `name` (etcd, kube-apiserver, kube-scheduler, fracpack, containerd, kubelet, node-agent).
  std::string component_log(const std::string& name) const;
  // Bring-up figures, "component seconds".
  const std::vector<std::pair<std::string, double>>& timings() const { return timings_; }
  uint16_t fracpack_metrics_port() const { return 19090; }
  std::string fracpack_metrics();
  // The first replica's ledger as it sees it (/debug/ledger), "" when it does not answer.
  std::string fracpack_ledger();
  std::string agent_metrics();

 private:
  struct Proc {
    pid_t pid = -1;
    std::vector<std::string> argv;
    std::vector<std::string> env;
  };
  Status spawn(const std::string& name, std::vector<std::string> argv, std::vector<std::string> env = {});
  void stop(const std::string& name, bool hard = false, std::chrono::seconds grace = std::chrono::seconds(10));
  Status start_etcd();
  Status start_apiserver();
  Status apply_manifests();
  Status start_fracpack(int replica = 1);
  Status start_scheduler(int replica = 1, bool ha = false);
  Status start_containerd();
  Status start_kubelet_process();
  Status start_agent(bool offered = true);
  Status wait_ready(const std::string& what, const std::function<bool()>& pred, std::chrono::seconds timeout);
  std::string kubeconfig(const std::string& name, const std::string& token);
  k8s::ApiClient& client(As as);
  void clean_node_side();

  RealClusterOptions options_;
  std::string dir_;
  std::string k8s_dir_;
  std::map<std::string, Proc> procs_;
  std::map<std::string, std::string> tokens_;
  std::map<std::string, std::string> sysctls_;  // saved before kubelet changed them
  bool var_lib_kubelet_existed_ = false;
  std::unique_ptr<k8s::ApiClient> admin_, alice_;
  std::string ca_pem_;
  std::string webhook_json_;  // the registration as applied
  std::vector<std::pair<std::string, double>> timings_;
  bool up_ = false;
  std::string agent_isolation_;
};

}  // namespace fracpack::real
