// manifests/ and manifests/chart, checked without a cluster: every object
// has its required fields; the KubeSchedulerConfiguration and the fracpack
// configuration agree (URL, verbs, resource names); the Deployment is
// locked down and its probes reach fracpack; the RBAC grants exactly the API
// calls the code makes; the signing key reaches the extender only and the
// public keys both the extender and the node agent; the admission webhook
// and policies agree with fracpack's configuration and contract; the example
// pods are accepted by the contract; and the chart renders the same objects
// as the plain manifests.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "config/config.h"
#include "k8s/contract/fracpack.h"
#include "k8s/objects.h"
#include "test/manifests/chart_renderer.h"
#include "test/support/testlib.h"

namespace fracpack::testing::manifests_test {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = FRACPACK_SOURCE_DIR;
const fs::path kManifests = kRoot / "manifests";

using Objects = std::vector<YAML::Node>;
using Problems = std::vector<std::string>;

Objects load_documents(const std::string& text, const std::string& source) {
  Objects out;
  for (YAML::Node doc : YAML::LoadAll(text)) {
    if (doc.IsNull()) continue;
    if (!doc.IsMap()) throw std::runtime_error(source + ": a document that is not a mapping");
    out.push_back(doc);
  }
  return out;
}

Objects load_file(const fs::path& p) {
  auto text = read_file(p.string());
  if (!text) throw std::runtime_error("cannot read " + p.string());
  return load_documents(*text, p.string());
}

// The plain manifests of an installation (not the Namespace, not the
// examples), with the admission webhook, its certificate and the 1.30+
// policies.
Objects plain_installation() {
  Objects out;
  for (const char* f : {"rbac.yaml", "config.yaml", "deployment.yaml", "service.yaml", "bind-fence.yaml", "monitoring/servicemonitor.yaml", "node-agent.yaml",
                        "admission/webhook.yaml", "admission/certificate.yaml", "admission/policy.yaml", "admission/node-agent-policy.yaml"}) {
    for (auto& o : load_file(kManifests / f)) out.push_back(o);
  }
  return out;
}

Objects render_chart(YAML::Node overrides = YAML::Node(YAML::NodeType::Map)) {
  ChartContext c;
  c.values = merge_values(YAML::LoadFile((kManifests / "chart/values.yaml").string()), overrides);
  c.chart_app_version = YAML::LoadFile((kManifests / "chart/Chart.yaml").string())["appVersion"].as<std::string>();
  Objects out;
  std::vector<fs::path> templates;
  for (const auto& e : fs::directory_iterator(kManifests / "chart/templates")) {
    if (e.path().extension() == ".yaml") templates.push_back(e.path());
  }
  std::sort(templates.begin(), templates.end());
  for (const auto& t : templates) {
    auto text = read_file(t.string());
    auto rendered = render_template(*text, c);
    if (!rendered) throw std::runtime_error(t.filename().string() + ": " + rendered.message());
    for (auto& o : load_documents(*rendered, t.string() + " (rendered)")) out.push_back(o);
  }
  return out;
}

// yaml-cpp: a const lookup of a missing key gives an invalid node that
// throws on the next lookup; the checks use non-const handles throughout.
std::string str(YAML::Node n) { return n.IsDefined() && n.IsScalar() ? n.Scalar() : ""; }
std::string key_of(YAML::Node o) { return str(o["kind"]) + "/" + str(o["metadata"]["namespace"]) + "/" + str(o["metadata"]["name"]); }

YAML::Node* find(const Objects& objects, const std::string& kind, const std::string& name) {
  for (const auto& c : objects) {
    auto& o = const_cast<YAML::Node&>(c);  // non-const lookups: see str()
    if (str(o["kind"]) == kind && str(o["metadata"]["name"]) == name) return &o;
  }
  return nullptr;
}

// Deep equality: maps as key sets, scalars with their quoting (a quoted
// "9090" is a string to Kubernetes, a plain 9090 a number).
void compare(YAML::Node a, YAML::Node b, const std::string& path, Problems& out) {
  if (a.Type() != b.Type()) {
    out.push_back(path + ": different kinds of value");
    return;
  }
  if (a.IsScalar()) {
    if (a.Scalar() != b.Scalar() || (a.Tag() == "!") != (b.Tag() == "!")) {
      out.push_back(path + ": " + a.Scalar() + (a.Tag() == "!" ? " (quoted)" : "") + " vs " + b.Scalar() + (b.Tag() == "!" ? " (quoted)" : ""));
    }
  } else if (a.IsSequence()) {
    if (a.size() != b.size()) {
      out.push_back(path + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " items");
      return;
    }
    for (size_t i = 0; i < a.size(); ++i) compare(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
  } else if (a.IsMap()) {
    std::set<std::string> keys;
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it->first.Scalar());
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it->first.Scalar());
    for (const auto& k : keys) {
      if (!a[k].IsDefined() || !b[k].IsDefined()) {
        out.push_back(path + "." + k + ": only on one side");
        continue;
      }
      compare(a[k], b[k], path + "." + k, out);
    }
  }
}

// The two configurations out of the ConfigMap.
struct Configs {
  std::optional<config::Config> fracpack;
  YAML::Node scheduler;
};

Configs configs(const Objects& objects, Problems& out) {
  Configs c;
  YAML::Node* cm = find(objects, "ConfigMap", "fracpack-config");
  if (!cm) {
    out.push_back("no ConfigMap fracpack-config");
    return c;
  }
  auto parsed = config::parse_config(str((*cm)["data"]["fracpack.yaml"]), "fracpack-config/fracpack.yaml");
  if (!parsed) {
    out.push_back(parsed.message());
  } else {
    c.fracpack = *parsed;
  }
  try {
    c.scheduler = YAML::Load(str((*cm)["data"]["scheduler-config.yaml"]));
  } catch (const YAML::Exception& e) {
    out.push_back(std::string("scheduler-config.yaml: ") + e.what());
  }
  return c;
}

// ../shared/reference/kubernetes-protocol.md §8.1.
bool valid_extended_resource_name(const std::string& n) {
  if (n.find('/') == std::string::npos || n.find("kubernetes.io/") != std::string::npos || n.rfind("requests.", 0) == 0) return false;
  static const std::regex qualified("^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$");
  return std::regex_match(n, qualified) && n.find('/') <= 253;
}

void check_scheduler_config(const config::Config& fc, YAML::Node ks, Problems& out) {
  auto bad = [&](const std::string& m) { out.push_back("KubeSchedulerConfiguration: " + m); };
  if (str(ks["apiVersion"]) != "kubescheduler.config.k8s.io/v1") bad("apiVersion must be kubescheduler.config.k8s.io/v1");
  if (str(ks["kind"]) != "KubeSchedulerConfiguration") bad("kind must be KubeSchedulerConfiguration");
  // Decoded strictly by kube-scheduler (§3): unknown fields are fatal there.
  static const std::set<std::string> top = {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
                                            "healthzBindAddress", "metricsBindAddress", "enableProfiling", "enableContentionProfiling",
                                            "percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles",
                                            "extenders", "delayCacheUntilActive"};
  for (auto it = ks.begin(); it != ks.end(); ++it) {
    if (!top.count(it->first.Scalar())) bad("unknown field " + it->first.Scalar());
  }
  if (str(ks["leaderElection"]["resourceName"]).empty() || str(ks["leaderElection"]["resourceName"]) == "kube-scheduler") {
    bad("a second scheduler needs its own leaderElection.resourceName");
  }
  if (!ks["profiles"].IsSequence() || ks["profiles"].size() == 0) bad("no profiles");
  for (auto p : ks["profiles"]) {
    if (str(p["schedulerName"]).empty() || str(p["schedulerName"]) == "default-scheduler") bad("the profile needs its own schedulerName");
  }
  if (!ks["extenders"].IsSequence() || ks["extenders"].size() != 1) {
    bad("expected exactly one extender");
    return;
  }
  YAML::Node e = ks["extenders"][0];
  static const std::set<std::string> fields = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
                                               "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"};
  for (auto it = e.begin(); it != e.end(); ++it) {
    if (!fields.count(it->first.Scalar())) bad("unknown extender field " + it->first.Scalar());
  }
  // The URL kube-scheduler calls: TrimRight(urlPrefix, "/") + "/" + verb (§2.1).
  static const std::regex url("^(https?)://([^/:]+):([0-9]+)(/.*)?$");
  std::smatch m;
  const std::string prefix = str(e["urlPrefix"]);
  if (!std::regex_match(prefix, m, url)) {
    bad("urlPrefix " + prefix + " is not scheme://host:port[/path]");
    return;
  }
  auto listen = config::parse_listen(fc.listen);
  if (!listen) return bad("fracpack listen: " + listen.message());
  if (listen->first != "127.0.0.1" || (m[2] != "127.0.0.1" && m[2] != "localhost")) {
    bad("fracpack and kube-scheduler share the pod: the verbs belong on 127.0.0.1 (listen " + fc.listen + ", urlPrefix " + prefix + ")");
  }
  if (std::stoi(m[3]) != listen->second) bad("urlPrefix port " + std::string(m[3]) + " is not fracpack's listen port " + std::to_string(listen->second));
  std::string path = m[4];
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string served = fc.url_prefix;
  if (served.back() != '/') served += '/';
  if (path + "/" != served) bad("urlPrefix path " + path + "/ is not fracpack's urlPrefix " + served);
  const bool https = m[1] == "https";
  if (https != !fc.tls.cert_file.empty()) bad(std::string("urlPrefix is ") + (https ? "https" : "http") + " but fracpack's TLS is " + (https ? "off" : "on"));
  if (https && !(e["enableHTTPS"].IsDefined() && e["enableHTTPS"].as<bool>())) bad("https needs enableHTTPS: true");
  if (https && str(e["tlsConfig"]["caFile"]).empty() && str(e["tlsConfig"]["caData"]).empty()) bad("enableHTTPS without a CA skips verification (§2.1)");
  if (!fc.tls.client_ca_file.empty() && (str(e["tlsConfig"]["certFile"]).empty() && str(e["tlsConfig"]["certData"]).empty())) {
    bad("fracpack requires client certificates (tls.clientCaFile) but kube-scheduler presents none (tlsConfig.certFile)");
  }
  for (const auto& [field, verb] : std::vector<std::pair<std::string, std::string>>{
           {"filterVerb", "filter"}, {"prioritizeVerb", "prioritize"}, {"bindVerb", "bind"}, {"preemptVerb", "preempt"}}) {
    if (str(e[field]) != verb) bad(field + " must be \"" + verb + "\" (what fracpack serves), got \"" + str(e[field]) + "\"");
  }
  if (!e["weight"].IsDefined() || e["weight"].as<int64_t>() <= 0) bad("a prioritizeVerb needs a positive weight");
  if (!e["nodeCacheCapable"].IsDefined() || !e["nodeCacheCapable"].as<bool>()) bad("nodeCacheCapable: true (names, not whole Node objects)");
  if (e["ignorable"].IsDefined() && e["ignorable"].as<bool>()) bad("ignorable: true would place GPU pods without fracpack");
  if (auto d = config::parse_duration(str(e["httpTimeout"])); !d || d->count() < 1000) {
    bad("httpTimeout must be a Go duration of at least 1s");
  } else if (fc.cluster.bind_timeout + std::chrono::milliseconds(500) > *d) {
    // fracpack refuses a bind it cannot post within bindTimeout; past
    // httpTimeout kube-scheduler has stopped waiting and retries the pod, so
    // a Binding posted then would race the retry.
    bad("fracpack's cluster.bindTimeout (" + std::to_string(fc.cluster.bind_timeout.count()) +
        " ms) must end at least 500 ms before kube-scheduler's httpTimeout (" + str(e["httpTimeout"]) + ")");
  }
  // A failover: the new leader starts leaseDuration after the old one's last
  // renewal, and the old one schedules until renewDeadline; every bind it
  // sent must be settled by then (fracpack refuses those it could not post
  // within bindTimeout), or they race the new leader's.
  const YAML::Node le = ks["leaderElection"];
  const auto lease = config::parse_duration(le["leaseDuration"].IsDefined() ? str(le["leaseDuration"]) : "15s");
  const auto renew = config::parse_duration(le["renewDeadline"].IsDefined() ? str(le["renewDeadline"]) : "10s");
  if (!lease || !renew) {
    bad("leaderElection.leaseDuration and renewDeadline must be Go durations");
  } else if (fc.cluster.bind_timeout >= *lease - *renew) {
    bad("fracpack's cluster.bindTimeout (" + std::to_string(fc.cluster.bind_timeout.count()) +
        " ms) must be shorter than kube-scheduler's leaseDuration - renewDeadline (" + std::to_string((*lease - *renew).count()) +
        " ms): an old leader's binds would still be posted when the new leader starts");
  }
  std::set<std::string> managed;
  // gpushare's resource is advertised by its device plugin on the node:
  // kube-scheduler counts it (the peer's own extender config says false);
  // fracpack's and HAMi's per-card shares are not node totals.
  const bool ignored = fc.contract.profile != k8s::Profile::kGpushare;
  for (auto r : e["managedResources"]) {
    managed.insert(str(r["name"]));
    if (!valid_extended_resource_name(str(r["name"]))) bad(str(r["name"]) + " is not a valid extended resource name");
    if (!r["ignoredByScheduler"].IsDefined() || r["ignoredByScheduler"].as<bool>() != ignored) {
      bad(str(r["name"]) + " needs ignoredByScheduler: " + (ignored ? "true" : "false") + " with the " + std::string(k8s::profile_name(fc.contract.profile)) + " profile");
    }
  }
  auto contract = k8s::make_contract(fc.contract);
  if (!contract) {
    bad("fracpack's contract: " + contract.message());
  } else {
    const auto want = (*contract)->pod_resources();
    if (managed != std::set<std::string>(want.begin(), want.end())) bad("managedResources must be the profile's pod resources");
  }
}

YAML::Node* container(YAML::Node deployment, const std::function<bool(YAML::Node)>& is) {
  for (auto c : deployment["spec"]["template"]["spec"]["containers"]) {
    if (is(c)) return new YAML::Node(c);  // freed by the caller via unique_ptr
  }
  return nullptr;
}

std::string joined(YAML::Node seq) {
  std::string s;
  for (auto x : seq) s += str(x) + " ";
  return s;
}

// The value of --config=PATH is a key of a ConfigMap volume mounted at its folder.
void check_config_mount(YAML::Node pod, YAML::Node c, const std::string& key, Problems& out) {
  static const std::regex flag("--config=(\\S+)");
  std::smatch m;
  const std::string line = joined(c["command"]) + joined(c["args"]);
  if (!std::regex_search(line, m, flag)) return out.push_back(str(c["name"]) + ": no --config=PATH");
  const fs::path p = std::string(m[1]);
  if (p.filename() != key) out.push_back(str(c["name"]) + ": --config names " + p.string() + ", the ConfigMap key is " + key);
  bool mounted = false;
  for (auto vm : c["volumeMounts"]) {
    if (str(vm["mountPath"]) != p.parent_path().string()) continue;
    for (auto v : pod["volumes"]) {
      mounted |= str(v["name"]) == str(vm["name"]) && str(v["configMap"]["name"]) == "fracpack-config";
    }
  }
  if (!mounted) out.push_back(str(c["name"]) + ": " + p.parent_path().string() + " is not the fracpack-config ConfigMap");
}

void check_locked_down(YAML::Node pod, Problems& out) {
  if (!pod["securityContext"]["runAsNonRoot"].IsDefined() || !pod["securityContext"]["runAsNonRoot"].as<bool>()) out.push_back("pod: runAsNonRoot");
  for (auto c : pod["containers"]) {
    const std::string n = str(c["name"]);
    YAML::Node sc = c["securityContext"];
    if (!sc["allowPrivilegeEscalation"].IsDefined() || sc["allowPrivilegeEscalation"].as<bool>()) out.push_back(n + ": allowPrivilegeEscalation: false");
    if (!sc["readOnlyRootFilesystem"].IsDefined() || !sc["readOnlyRootFilesystem"].as<bool>()) out.push_back(n + ": readOnlyRootFilesystem: true");
    if (sc["privileged"].IsDefined() && sc["privileged"].as<bool>()) out.push_back(n + ": privileged");
    bool drop_all = false;
    for (auto d : sc["capabilities"]["drop"]) drop_all |= str(d) == "ALL";
    if (!drop_all) out.push_back(n + ": capabilities.drop: [ALL]");
    if (str(c["resources"]["requests"]["cpu"]).empty() || str(c["resources"]["requests"]["memory"]).empty() ||
        str(c["resources"]["limits"]["memory"]).empty()) {
      out.push_back(n + ": resources: cpu and memory requests, a memory limit");
    }
    if (str(c["image"]).empty()) out.push_back(n + ": no image");
  }
}

// (apiGroup, resource, verb[, resourceName]) granted by a rule list.
std::set<std::string> grants(YAML::Node rules, Problems& out, const std::string& who) {
  std::set<std::string> g;
  for (auto r : rules) {
    std::vector<std::string> names;
    for (auto n : r["resourceNames"]) names.push_back(str(n));
    if (names.empty()) names.push_back("");
    for (auto group : r["apiGroups"]) {
      for (auto res : r["resources"]) {
        for (auto verb : r["verbs"]) {
          for (const auto& name : names) {
            if (str(group) == "*" || str(res) == "*" || str(verb) == "*") out.push_back(who + ": a wildcard rule");
            g.insert(str(group) + "|" + str(res) + "|" + str(verb) + (name.empty() ? "" : "|" + name));
          }
        }
      }
    }
  }
  return g;
}

// The cluster-wide grants bound to a namespace's service account.
std::set<std::string> cluster_grants(const Objects& objects, const std::string& sa, const std::string& ns, Problems& out) {
  std::set<std::string> held;
  for (auto b : objects) {
    if (str(b["kind"]) != "ClusterRoleBinding") continue;
    bool binds = false;
    for (auto s : b["subjects"]) binds |= str(s["kind"]) == "ServiceAccount" && str(s["name"]) == sa && str(s["namespace"]) == ns;
    if (!binds) continue;
    YAML::Node* role = find(objects, "ClusterRole", str(b["roleRef"]["name"]));
    if (!role) {
      out.push_back(key_of(b) + ": roleRef " + str(b["roleRef"]["name"]) + " does not exist");
      continue;
    }
    for (const auto& g : grants((*role)["rules"], out, key_of(*role))) held.insert(g);
  }
  return held;
}

// The node agent's DaemonSet, with the fracpack profile only: kubelet's
// device-plugin directory and the state file's directory from the host at
// the paths its flags name, its node's name, probes on its listener, no
// privilege, and exactly its API calls (RbacMatchesTheCode).
void check_node_agent(const Objects& objects, const config::Config& fc, Problems& out) {
  YAML::Node* ds = find(objects, "DaemonSet", "fracpack-node-agent");
  if (fc.contract.profile != k8s::Profile::kFracpack) {
    if (ds) out.push_back("DaemonSet fracpack-node-agent: only with the fracpack profile (with " + std::string(k8s::profile_name(fc.contract.profile)) + ", the peer's device plugin runs)");
    return;
  }
  if (!ds) {
    out.push_back("no DaemonSet fracpack-node-agent (the fracpack profile needs its node agent)");
    return;
  }
  YAML::Node pod = (*ds)["spec"]["template"]["spec"];
  YAML::Node labels = (*ds)["spec"]["template"]["metadata"]["labels"];
  for (auto it = (*ds)["spec"]["selector"]["matchLabels"].begin(); it != (*ds)["spec"]["selector"]["matchLabels"].end(); ++it) {
    if (str(labels[it->first.Scalar()]) != str(it->second)) out.push_back("DaemonSet: selector does not match the pod labels");
  }
  std::unique_ptr<const YAML::Node> agent(container(*ds, [](YAML::Node c) { return str(c["args"][0]) == "node-agent"; }));
  if (!agent) {
    out.push_back("DaemonSet: needs a fracpack node-agent container");
    return;
  }
  YAML::Node c = YAML::Clone(*agent);
  std::map<std::string, std::string> flags;
  for (auto a : c["args"]) {
    const std::string arg = str(a);
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) flags[arg.substr(2, arg.find('=') - 2)] = arg.substr(arg.find('=') + 1);
  }
  const config::NodeAgentConfig defaults;
  auto flag = [&](const std::string& k, const std::string& d) { return flags.count(k) ? flags[k] : d; };
  // The contract's names (the resource, the annotations) are the extender's.
  check_config_mount(pod, c, "fracpack.yaml", out);
  bool node_name = false;
  for (auto e : c["env"]) node_name |= str(e["name"]) == "NODE_NAME" && str(e["valueFrom"]["fieldRef"]["fieldPath"]) == "spec.nodeName";
  if (!node_name && !flags.count("node-name")) out.push_back("node-agent: NODE_NAME must come from the field spec.nodeName");
  const std::string state_file = flag("state-file", defaults.state_file);
  for (const std::string& dir : {flag("device-plugin-dir", defaults.device_plugin_dir), state_file.substr(0, state_file.rfind('/'))}) {
    bool mounted = false;
    for (auto m : c["volumeMounts"]) {
      if (str(m["mountPath"]) != dir) continue;
      for (auto v : pod["volumes"]) mounted |= str(v["name"]) == str(m["name"]) && str(v["hostPath"]["path"]) == dir;
    }
    if (!mounted) out.push_back("node-agent: " + dir + " must be the host's (a hostPath volume mounted at the same path)");
  }
  for (auto v : pod["volumes"]) {
    const std::string host = str(v["hostPath"]["path"]);
    // The MPS control daemon's folder (nodeAgent.mpsDir), read-only: its status.
    const bool mps_status = host == defaults.mps_dir && [&] {
      for (auto m : c["volumeMounts"]) {
        if (str(m["mountPath"]) == host) return m["readOnly"].IsDefined() && m["readOnly"].as<bool>();
      }
      return false;
    }();
    if (!host.empty() && host != flag("device-plugin-dir", defaults.device_plugin_dir) && host != state_file.substr(0, state_file.rfind('/')) &&
        !mps_status) {
      out.push_back("node-agent: hostPath " + host + " is more of the host than it needs");
    }
  }
  YAML::Node sc = c["securityContext"];
  if (sc["privileged"].IsDefined() && sc["privileged"].as<bool>()) out.push_back("node-agent: privileged");
  if (!sc["allowPrivilegeEscalation"].IsDefined() || sc["allowPrivilegeEscalation"].as<bool>()) out.push_back("node-agent: allowPrivilegeEscalation: false");
  if (!sc["readOnlyRootFilesystem"].IsDefined() || !sc["readOnlyRootFilesystem"].as<bool>()) out.push_back("node-agent: readOnlyRootFilesystem: true");
  bool drop_all = false;
  for (auto d : sc["capabilities"]["drop"]) drop_all |= str(d) == "ALL";
  if (!drop_all) out.push_back("node-agent: capabilities.drop: [ALL]");
  if (str(c["resources"]["requests"]["cpu"]).empty() || str(c["resources"]["limits"]["memory"]).empty()) {
    out.push_back("node-agent: resources: a cpu request and a memory limit");
  }
  auto listen = config::parse_listen(flag("listen", defaults.listen));
  for (const auto& [probe, path] : std::vector<std::pair<std::string, std::string>>{{"readinessProbe", "/readyz"}, {"livenessProbe", "/healthz"}}) {
    YAML::Node get = c[probe]["httpGet"];
    if (str(get["path"]) != path) out.push_back("node-agent: " + probe + " must GET " + path);
    int port = -1;
    for (auto p : c["ports"]) {
      if (str(p["name"]) == str(get["port"])) port = p["containerPort"].as<int>();
    }
    if (!listen || port != listen->second) out.push_back("node-agent: " + probe + " port is not the agent's --listen port");
  }
  const std::string sa = str(pod["serviceAccountName"]);
  if (!find(objects, "ServiceAccount", sa)) out.push_back("DaemonSet: serviceAccountName has no ServiceAccount");
  const std::set<std::string> want = {"|nodes|get", "|nodes|patch", "|pods|get", "|pods|list", "|pods|watch"};
  if (cluster_grants(objects, sa, str((*ds)["metadata"]["namespace"]), out) != want) {
    out.push_back("node-agent: cluster-wide grants must be exactly get+patch nodes, get+list+watch pods");
  }
}

// --- Keys and admission (manifests/admission/) ------------------------------

std::string without_trailing_slash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// The volume `c` mounts at `path` (a folder), if any.
std::optional<YAML::Node> volume_at(YAML::Node pod, YAML::Node c, const std::string& path) {
  for (auto vm : c["volumeMounts"]) {
    if (without_trailing_slash(str(vm["mountPath"])) != without_trailing_slash(path)) continue;
    for (auto v : pod["volumes"]) {
      if (str(v["name"]) == str(vm["name"])) return v;
    }
  }
  return std::nullopt;
}

// The Secrets a volume holds (a secret volume, or a projected one's sources).
std::set<std::string> secrets_of(YAML::Node v) {
  std::set<std::string> s;
  if (!str(v["secret"]["secretName"]).empty()) s.insert(str(v["secret"]["secretName"]));
  for (auto src : v["projected"]["sources"]) {
    if (!str(src["secret"]["name"]).empty()) s.insert(str(src["secret"]["name"]));
  }
  return s;
}

// The names of the containers (init containers too) that mount volume `name`.
std::set<std::string> mounted_by(YAML::Node pod, const std::string& name) {
  std::set<std::string> who;
  for (const char* list : {"initContainers", "containers"}) {
    for (auto c : pod[list]) {
      for (auto vm : c["volumeMounts"]) {
        if (str(vm["name"]) == name) who.insert(str(c["name"]));
      }
    }
  }
  return who;
}

// The ConfigMap mounted in `c` at a folder security.verifyKeys names (the
// folder itself, or the folder of a file it names), or "".
std::string record_keys_config_map(YAML::Node pod, YAML::Node c, const config::Config& fc) {
  for (const std::string& k : fc.security.verify_keys) {
    for (const std::string& dir : {k, fs::path(k).parent_path().string()}) {
      auto v = volume_at(pod, c, dir);
      if (v && !str((*v)["configMap"]["name"]).empty()) return str((*v)["configMap"]["name"]);
    }
  }
  return "";
}

// The strings of a CEL list literal such as "['a', 'b']"; nullopt when the
// expression is not one.
std::optional<std::vector<std::string>> cel_strings(std::string e) {
  while (!e.empty() && std::isspace(static_cast<unsigned char>(e.back()))) e.pop_back();
  while (!e.empty() && std::isspace(static_cast<unsigned char>(e.front()))) e.erase(0, 1);
  if (e.size() < 2 || e.front() != '[' || e.back() != ']') return std::nullopt;
  static const std::regex literal(R"re('([^'\\]*)'|"([^"\\]*)")re");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(e.begin(), e.end(), literal); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
  }
  return out;
}

std::string cel_variable(YAML::Node policy, const std::string& name) {
  for (auto v : policy["spec"]["variables"]) {
    if (str(v["name"]) == name) return str(v["expression"]);
  }
  return "";
}

template <class C>
std::set<std::string> as_set(const C& c) {
  return std::set<std::string>(c.begin(), c.end());
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// group|version|operation|resource of admission rules; a wildcard is a
// problem where the rules say what to allow (not where they only refuse).
std::set<std::string> admission_rules(YAML::Node rules, Problems& out, const std::string& who, bool wildcards_refused = true) {
  std::set<std::string> r;
  for (auto rule : rules) {
    for (auto g : rule["apiGroups"]) {
      for (auto v : rule["apiVersions"]) {
        for (auto op : rule["operations"]) {
          for (auto res : rule["resources"]) {
            if (wildcards_refused && (str(g) == "*" || str(v) == "*" || str(op) == "*" || str(res).find('*') != std::string::npos)) {
              out.push_back(who + ": a wildcard rule");
            }
            r.insert(str(g) + "|" + str(v) + "|" + str(op) + "|" + str(res));
          }
        }
      }
    }
  }
  return r;
}

// What the webhook decides (k8s/admission.h): exactly these.
const std::set<std::string>& webhook_rules() {
  static const std::set<std::string> r = {"|v1|CREATE|pods", "|v1|UPDATE|pods", "|v1|CREATE|pods/binding"};
  return r;
}

void check_policy_binding(const Objects& objects, const std::string& policy, Problems& out) {
  for (auto b : objects) {
    if (str(b["kind"]) != "ValidatingAdmissionPolicyBinding" || str(b["spec"]["policyName"]) != policy) continue;
    bool deny = false;
    for (auto a : b["spec"]["validationActions"]) deny |= str(a) == "Deny";
    if (!deny) out.push_back(key_of(b) + ": validationActions must include Deny");
    if (b["spec"]["paramRef"].IsDefined()) out.push_back(key_of(b) + ": the policy takes no parameters");
    return;
  }
  out.push_back("ValidatingAdmissionPolicy " + policy + ": no ValidatingAdmissionPolicyBinding binds it");
}

// Signed records: the private key only in the fracpack container, at
// security.signingKey's folder, readable by its user; the public keys (a
// ConfigMap) at a folder of security.verifyKeys in the extender and the node
// agent; the agent never holds the private key; no Role grants Secrets.
void check_keys(const Objects& objects, const config::Config& fc, YAML::Node pod, YAML::Node fracpack, Problems& out) {
  for (auto role : objects) {
    const std::string kind = str(role["kind"]);
    if (kind != "Role" && kind != "ClusterRole") continue;
    for (auto r : role["rules"]) {
      for (auto res : r["resources"]) {
        if (str(res) == "secrets") out.push_back(key_of(role) + ": grants secrets (kubelet mounts the signing key; nobody needs to read Secrets)");
      }
    }
  }
  YAML::Node* ds = find(objects, "DaemonSet", "fracpack-node-agent");
  std::unique_ptr<const YAML::Node> agent;
  if (ds) agent.reset(container(*ds, [](YAML::Node c) { return str(c["args"][0]) == "node-agent"; }));
  if (fc.security.records != config::RecordSigning::kSigned) return;

  std::string signing_secret;
  if (fc.security.signing_key.empty()) {
    out.push_back("security.signingKey: the extender needs it with security.records: signed");
  } else {
    const std::string dir = fs::path(fc.security.signing_key).parent_path().string();
    auto v = volume_at(pod, fracpack, dir);
    if (!v || str((*v)["secret"]["secretName"]).empty()) {
      out.push_back("fracpack: security.signingKey's directory " + dir + " is not a Secret volume (the signing key Secret)");
    } else {
      signing_secret = str((*v)["secret"]["secretName"]);
      const std::set<std::string> who = mounted_by(pod, str((*v)["name"]));
      if (who != std::set<std::string>{str(fracpack["name"])}) {
        out.push_back("Deployment: the signing key Secret " + signing_secret + " must be mounted only into the fracpack container (mounted by " + joined(who) + ")");
      }
      for (auto other : pod["volumes"]) {
        if (str(other["name"]) != str((*v)["name"]) && secrets_of(other).count(signing_secret)) {
          out.push_back("Deployment: the signing key Secret " + signing_secret + " in a second volume " + str(other["name"]));
        }
      }
      // The file is root's: mode bits for owner (and group, given through
      // fsGroup) only; a non-root user reads it through fsGroup.
      if ((*v)["secret"]["defaultMode"].IsDefined()) {
        const std::string mode = str((*v)["secret"]["defaultMode"]);
        const unsigned m = mode.size() > 1 && mode[0] == '0' ? std::stoul(mode, nullptr, 8) : std::stoul(mode);
        if ((m & 0037) != 0) out.push_back("fracpack: the signing key Secret's defaultMode " + mode + " lets more than its owner and group read it");
      } else {
        out.push_back("fracpack: the signing key Secret needs defaultMode 0400 (the default, 0644, is readable by everyone in the pod)");
      }
      YAML::Node user = fracpack["securityContext"]["runAsUser"].IsDefined() ? fracpack["securityContext"]["runAsUser"] : pod["securityContext"]["runAsUser"];
      const bool root = user.IsDefined() && str(user) == "0";
      if (!root && !pod["securityContext"]["fsGroup"].IsDefined()) {
        out.push_back("fracpack: runs as a non-root user but the pod sets no fsGroup: it cannot read the signing key (a Secret file is root's)");
      }
    }
  }
  if (fc.security.verify_keys.empty()) {
    out.push_back("security.verifyKeys: the node agent needs the extender's public key (the record-keys ConfigMap's folder)");
    return;
  }
  const std::string extender_keys = record_keys_config_map(pod, fracpack, fc);
  if (extender_keys.empty()) out.push_back("fracpack: no ConfigMap mounted at a folder of security.verifyKeys (the record keys)");
  if (!agent) return;
  YAML::Node agent_pod = (*ds)["spec"]["template"]["spec"];
  YAML::Node a = YAML::Clone(*agent);
  const std::string agent_keys = record_keys_config_map(agent_pod, a, fc);
  if (agent_keys.empty()) {
    out.push_back("node-agent: no ConfigMap mounted at a folder of security.verifyKeys (the record keys)");
  } else if (!extender_keys.empty() && agent_keys != extender_keys) {
    out.push_back("node-agent: verifies with ConfigMap " + agent_keys + ", the extender with " + extender_keys);
  }
  for (auto v : agent_pod["volumes"]) {
    const std::set<std::string> s = secrets_of(v);
    if (s.count("fracpack-signing-key") || (!signing_secret.empty() && s.count(signing_secret))) {
      out.push_back("node-agent: mounts the signing key Secret (volume " + str(v["name"]) + "): an agent signs nothing");
    }
  }
}

// The webhook: fracpack serves it on admission.listen (TLS, its Secret
// mounted at certFile's folder); the Service reaches that port; the
// ValidatingWebhookConfiguration calls the Service at /validate for exactly
// what the webhook decides; cert-manager's certificate names the Service.
void check_webhook(const Objects& objects, const config::Config& fc, YAML::Node pod, YAML::Node fracpack, const std::string& ns,
                   const std::string& sa, const std::function<bool(YAML::Node)>& selects, Problems& out) {
  YAML::Node* vwc = find(objects, "ValidatingWebhookConfiguration", "fracpack-records");
  if (fc.admission.listen.empty()) {
    if (vwc) out.push_back("ValidatingWebhookConfiguration fracpack-records: fracpack serves no webhook (admission.listen is empty)");
    return;
  }
  if (!vwc) out.push_back("admission.listen is set but there is no ValidatingWebhookConfiguration fracpack-records");
  const std::string writer = "system:serviceaccount:" + ns + ":" + sa;
  if (std::find(fc.admission.record_writers.begin(), fc.admission.record_writers.end(), writer) == fc.admission.record_writers.end()) {
    out.push_back("admission.recordWriters must name the extender's ServiceAccount " + writer + " (it writes the records at bind)");
  }
  auto listen = config::parse_listen(fc.admission.listen);
  if (!listen) return out.push_back("admission.listen: " + listen.message());
  if (!listen->first.empty() && config::loopback_host(listen->first)) out.push_back("admission.listen: the API server cannot reach loopback");
  auto container_port = [&](YAML::Node port) -> int {
    if (port.Tag() != "!" && std::regex_match(str(port), std::regex("[0-9]+"))) return std::stoi(str(port));
    for (auto p : fracpack["ports"]) {
      if (str(p["name"]) == str(port)) return p["containerPort"].as<int>();
    }
    return -1;
  };
  bool declared = false;
  for (auto p : fracpack["ports"]) declared |= str(p["name"]) == "webhook" && p["containerPort"].as<int>() == listen->second;
  if (!declared) out.push_back("fracpack: the port named webhook is not admission.listen's port " + std::to_string(listen->second));
  for (const std::string& f : {fc.admission.cert_file, fc.admission.key_file}) {
    auto v = volume_at(pod, fracpack, fs::path(f).parent_path().string());
    if (!v || str((*v)["secret"]["secretName"]).empty()) out.push_back("fracpack: admission " + f + " is not in a mounted Secret");
  }
  YAML::Node* svc = find(objects, "Service", "fracpack-webhook");
  if (!svc) return out.push_back("no Service fracpack-webhook");
  if (!selects((*svc)["spec"]["selector"])) out.push_back("fracpack-webhook: selector does not match the pod labels");
  if (!vwc) return;
  for (auto w : (*vwc)["webhooks"]) {
    const std::string who = "webhook " + str(w["name"]);
    YAML::Node s = w["clientConfig"]["service"];
    if (str(s["name"]) != str((*svc)["metadata"]["name"]) || str(s["namespace"]) != str((*svc)["metadata"]["namespace"])) {
      out.push_back(who + ": clientConfig.service is not the Service fracpack-webhook");
    }
    if (str(s["path"]) != "/validate") out.push_back(who + ": clientConfig.service.path must be /validate (what fracpack serves), got " + str(s["path"]));
    const int port = s["port"].IsDefined() ? s["port"].as<int>() : 443;
    bool reaches = false;
    for (auto p : (*svc)["spec"]["ports"]) {
      if (p["port"].as<int>() != port) continue;
      reaches = true;
      const int target = container_port(p["targetPort"].IsDefined() ? p["targetPort"] : p["port"]);
      if (target != listen->second) out.push_back("fracpack-webhook: targetPort is not the fracpack container's webhook port (admission.listen " + fc.admission.listen + ")");
    }
    if (!reaches) out.push_back(who + ": clientConfig.service.port " + std::to_string(port) + " is not a port of the Service");
    if (admission_rules(w["rules"], out, who) != webhook_rules()) {
      out.push_back(who + ": rules must be exactly pods CREATE+UPDATE and pods/binding CREATE (v1): what the webhook decides (it refuses anything else)");
    }
    bool v1 = false;
    for (auto v : w["admissionReviewVersions"]) v1 |= str(v) == "v1";
    if (!v1) out.push_back(who + ": admissionReviewVersions must include v1");
    if (str(w["sideEffects"]) != "None") out.push_back(who + ": sideEffects must be None (it writes nothing)");
    const int timeout = w["timeoutSeconds"].IsDefined() ? w["timeoutSeconds"].as<int>() : 10;
    if (timeout < 1 || timeout > 10) out.push_back(who + ": timeoutSeconds must be 1..10 (every pod creation waits on it)");
    const std::string policy = str(w["failurePolicy"]);
    if (policy != "Ignore" && policy != "Fail") out.push_back(who + ": failurePolicy must be Ignore or Fail (say which)");
    if (fc.contract.profile != k8s::Profile::kFracpack && policy != "Fail") {
      out.push_back(who + ": failurePolicy must be Fail with the " + std::string(k8s::profile_name(fc.contract.profile)) + " profile (its device plugin does not verify signatures)");
    }
  }
  // cert-manager: the Certificate writes the Secret fracpack mounts, names the Service, and its CA is injected.
  YAML::Node* cert = nullptr;
  for (const auto& o : objects) {
    if (str(o["kind"]) == "Certificate") cert = const_cast<YAML::Node*>(&o);
  }
  if (cert) {
    auto v = volume_at(pod, fracpack, fs::path(fc.admission.cert_file).parent_path().string());
    if (v && str((*v)["secret"]["secretName"]) != str((*cert)["spec"]["secretName"])) {
      out.push_back("Certificate " + str((*cert)["metadata"]["name"]) + ": writes Secret " + str((*cert)["spec"]["secretName"]) + ", fracpack mounts " + str((*v)["secret"]["secretName"]));
    }
    std::set<std::string> names;
    for (auto n : (*cert)["spec"]["dnsNames"]) names.insert(str(n));
    const std::string host = str((*svc)["metadata"]["name"]) + "." + str((*svc)["metadata"]["namespace"]) + ".svc";
    if (!names.count(host)) out.push_back("Certificate " + str((*cert)["metadata"]["name"]) + ": dnsNames must include " + host + " (the name the API server calls)");
    const std::string inject = str((*cert)["metadata"]["namespace"]) + "/" + str((*cert)["metadata"]["name"]);
    if (str((*vwc)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]) != inject) {
      out.push_back("ValidatingWebhookConfiguration: cert-manager.io/inject-ca-from must be " + inject + " (the caBundle)");
    }
    const std::string issuer = str((*cert)["spec"]["issuerRef"]["name"]);
    if (str((*cert)["spec"]["issuerRef"]["kind"]) == "Issuer" && !find(objects, "Issuer", issuer)) {
      out.push_back("Certificate: no Issuer " + issuer);
    }
  }
}

// Kubernetes 1.30+: the ValidatingAdmissionPolicy fracpack-records (the
// webhook's checks in the API server) and fracpack-node-agent.
void check_policies(const Objects& objects, const config::Config& fc, const std::string& ns, const std::string& sa, Problems& out) {
  if (YAML::Node* vap = find(objects, "ValidatingAdmissionPolicy", "fracpack-records")) {
    YAML::Node p = *vap;
    const std::string who = "ValidatingAdmissionPolicy fracpack-records";
    check_policy_binding(objects, "fracpack-records", out);
    if (p["spec"]["failurePolicy"].IsDefined() && str(p["spec"]["failurePolicy"]) != "Fail") out.push_back(who + ": failurePolicy must be Fail");
    const std::set<std::string> rules = admission_rules(p["spec"]["matchConstraints"]["resourceRules"], out, who);
    std::set<std::string> allowed = webhook_rules();
    allowed.insert("|v1|UPDATE|pods/status");  // an update through status may change annotations too
    if (!std::includes(rules.begin(), rules.end(), webhook_rules().begin(), webhook_rules().end()) ||
        !std::includes(allowed.begin(), allowed.end(), rules.begin(), rules.end())) {
      out.push_back(who + ": resourceRules must cover pods CREATE+UPDATE and pods/binding CREATE (and pods/status UPDATE), nothing else");
    }
    auto contract = k8s::make_contract(fc.contract);
    auto list = [&](const std::string& var) {
      auto l = cel_strings(cel_variable(p, var));
      if (!l) out.push_back(who + ": variables." + var + " must be a list of strings");
      return l ? as_set(*l) : std::set<std::string>{};
    };
    if (contract) {
      if (list("guarded") != as_set((*contract)->guarded_annotations())) {
        out.push_back(who + ": variables.guarded must be the contract's guarded annotations (" + joined(as_set((*contract)->guarded_annotations())) + ")");
      }
      if (list("resources") != as_set((*contract)->pod_resources())) out.push_back(who + ": variables.resources must be the contract's pod resources");
    }
    const std::set<std::string> writers = list("writers");
    if (writers != as_set(fc.admission.record_writers) || !writers.count("system:serviceaccount:" + ns + ":" + sa)) {
      out.push_back(who + ": variables.writers must be admission.recordWriters, the extender's ServiceAccount system:serviceaccount:" + ns + ":" + sa);
    }
    if (list("schedulerNames") != as_set(fc.scheduler_names)) out.push_back(who + ": variables.schedulerNames must be schedulerNames");
    if (p["spec"]["validations"].size() < 3) out.push_back(who + ": validations: the records, spec.nodeName and spec.schedulerName");
  }
  if (YAML::Node* vap = find(objects, "ValidatingAdmissionPolicy", "fracpack-node-agent")) {
    YAML::Node p = *vap;
    const std::string who = "ValidatingAdmissionPolicy fracpack-node-agent";
    check_policy_binding(objects, "fracpack-node-agent", out);
    YAML::Node* ds = find(objects, "DaemonSet", "fracpack-node-agent");
    if (!ds) return out.push_back(who + ": there is no node agent");
    const std::string agent = "system:serviceaccount:" + str((*ds)["metadata"]["namespace"]) + ":" + str((*ds)["spec"]["template"]["spec"]["serviceAccountName"]);
    bool named = false;
    for (auto mc : p["spec"]["matchConditions"]) {
      const std::string e = str(mc["expression"]);
      named |= e.find("request.userInfo.username ==") != std::string::npos &&
               (e.find("'" + agent + "'") != std::string::npos || e.find("\"" + agent + "\"") != std::string::npos);
    }
    if (!named) out.push_back(who + ": matchConditions must name the node agent's ServiceAccount (" + agent + ")");
    // It refuses all but one kind of write: wildcards only widen the refusal.
    const std::set<std::string> rules = admission_rules(p["spec"]["matchConstraints"]["resourceRules"], out, who, false);
    if (!rules.count("|v1|UPDATE|nodes")) out.push_back(who + ": resourceRules must cover nodes UPDATE (the agent's patch)");
    if (p["spec"]["failurePolicy"].IsDefined() && str(p["spec"]["failurePolicy"]) != "Fail") out.push_back(who + ": failurePolicy must be Fail");
    auto devices = cel_strings("[" + cel_variable(p, "devices") + "]");
    if (!devices || devices->size() != 1 || (*devices)[0] != fc.contract.fracpack.devices) {
      out.push_back(who + ": variables.devices must be the contract's devices annotation " + fc.contract.fracpack.devices);
    }
  }
}

Problems check_installation(const Objects& objects) {
  Problems out;
  static const std::map<std::string, std::string> api_version = {
      {"ServiceAccount", "v1"}, {"ConfigMap", "v1"}, {"Service", "v1"}, {"Pod", "v1"}, {"Deployment", "apps/v1"}, {"DaemonSet", "apps/v1"},
      {"ClusterRole", "rbac.authorization.k8s.io/v1"}, {"ClusterRoleBinding", "rbac.authorization.k8s.io/v1"},
      {"Role", "rbac.authorization.k8s.io/v1"}, {"RoleBinding", "rbac.authorization.k8s.io/v1"},
      {"ServiceMonitor", "monitoring.coreos.com/v1"},
      {"ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1"},
      {"ValidatingAdmissionPolicy", "admissionregistration.k8s.io/v1"},
      {"ValidatingAdmissionPolicyBinding", "admissionregistration.k8s.io/v1"},
      {"Issuer", "cert-manager.io/v1"}, {"Certificate", "cert-manager.io/v1"}};
  static const std::set<std::string> cluster_kinds = {"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
                                                      "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"};
  std::set<std::string> keys;
  for (auto o : objects) {
    const std::string kind = str(o["kind"]);
    if (!api_version.count(kind)) {
      out.push_back(key_of(o) + ": unexpected kind");
      continue;
    }
    if (str(o["apiVersion"]) != api_version.at(kind)) out.push_back(key_of(o) + ": apiVersion must be " + api_version.at(kind));
    if (str(o["metadata"]["name"]).empty()) out.push_back(key_of(o) + ": no metadata.name");
    const bool cluster_scoped = cluster_kinds.count(kind) > 0;
    if (cluster_scoped != str(o["metadata"]["namespace"]).empty()) out.push_back(key_of(o) + ": metadata.namespace");
    if (!keys.insert(key_of(o)).second) out.push_back(key_of(o) + ": twice");
  }

  Configs cfg = configs(objects, out);
  if (!cfg.fracpack) return out;
  const config::Config& fc = *cfg.fracpack;
  if (cfg.scheduler.IsDefined()) check_scheduler_config(fc, cfg.scheduler, out);

  YAML::Node* dep = find(objects, "Deployment", "fracpack");
  if (!dep) {
    out.push_back("no Deployment fracpack");
    return out;
  }
  const std::string ns = str((*dep)["metadata"]["namespace"]);
  YAML::Node pod = (*dep)["spec"]["template"]["spec"];
  YAML::Node labels = (*dep)["spec"]["template"]["metadata"]["labels"];
  auto selects = [&](YAML::Node selector) {
    if (!selector.IsMap() || selector.size() == 0) return false;
    for (auto it = selector.begin(); it != selector.end(); ++it) {
      if (str(labels[it->first.Scalar()]) != str(it->second)) return false;
    }
    return true;
  };
  if (!selects((*dep)["spec"]["selector"]["matchLabels"])) out.push_back("Deployment: selector does not match the pod labels");
  std::unique_ptr<const YAML::Node> scheduler(container(*dep, [](YAML::Node c) { return str(c["command"][0]) == "kube-scheduler"; }));
  std::unique_ptr<const YAML::Node> fracpack(container(*dep, [](YAML::Node c) { return str(c["args"][0]) == "serve"; }));
  if (!scheduler || !fracpack) {
    out.push_back("Deployment: needs a kube-scheduler container and a fracpack serve container");
    return out;
  }
  check_config_mount(pod, *scheduler, "scheduler-config.yaml", out);
  check_config_mount(pod, *fracpack, "fracpack.yaml", out);
  check_node_agent(objects, fc, out);
  YAML::Node* agent_ds = find(objects, "DaemonSet", "fracpack-node-agent");
  const std::string agent_sa = agent_ds ? str((*agent_ds)["spec"]["template"]["spec"]["serviceAccountName"]) : "";
  check_locked_down(pod, out);
  if (!find(objects, "ServiceAccount", str(pod["serviceAccountName"]))) out.push_back("Deployment: serviceAccountName has no ServiceAccount");
  {
    YAML::Node fc_container = YAML::Clone(*fracpack);
    check_keys(objects, fc, pod, fc_container, out);
    check_webhook(objects, fc, pod, fc_container, ns, str(pod["serviceAccountName"]), selects, out);
    check_policies(objects, fc, ns, str(pod["serviceAccountName"]), out);
  }

  // Probes reach /healthz and /readyz on the plain listener the kubelet can reach.
  auto probe_listen = config::parse_listen(fc.metrics_listen.empty() ? fc.listen : fc.metrics_listen);
  if (probe_listen && probe_listen->first == "127.0.0.1") out.push_back("fracpack: the probes need a listener on the pod's address (metricsListen)");
  auto port_number = [&](YAML::Node port) -> int {
    if (port.Tag() != "!" && std::regex_match(str(port), std::regex("[0-9]+"))) return std::stoi(str(port));
    for (auto p : (*fracpack)["ports"]) {
      if (str(p["name"]) == str(port)) return p["containerPort"].as<int>();
    }
    return -1;
  };
  for (const auto& [probe, path] : std::vector<std::pair<std::string, std::string>>{{"readinessProbe", "/readyz"}, {"livenessProbe", "/healthz"}}) {
    YAML::Node get = (*fracpack)[probe]["httpGet"];
    if (str(get["path"]) != path) out.push_back("fracpack: " + probe + " must GET " + path);
    if (!probe_listen || port_number(get["port"]) != probe_listen->second) out.push_back("fracpack: " + probe + " port is not fracpack's metricsListen port");
  }

  // Service and ServiceMonitor reach the metrics port.
  YAML::Node* svc = find(objects, "Service", "fracpack-metrics");
  if (!svc) {
    out.push_back("no Service fracpack-metrics");
  } else {
    if (!selects((*svc)["spec"]["selector"])) out.push_back("Service: selector does not match the pod labels");
    for (auto p : (*svc)["spec"]["ports"]) {
      if (!probe_listen || port_number(p["targetPort"]) != probe_listen->second) out.push_back("Service: targetPort is not the metrics port");
    }
    if (YAML::Node* sm = find(objects, "ServiceMonitor", "fracpack")) {
      for (auto it = (*sm)["spec"]["selector"]["matchLabels"].begin(); it != (*sm)["spec"]["selector"]["matchLabels"].end(); ++it) {
        if (str((*svc)["metadata"]["labels"][it->first.Scalar()]) != str(it->second)) out.push_back("ServiceMonitor: selector misses the Service");
      }
      for (auto ep : (*sm)["spec"]["endpoints"]) {
        bool named = false;
        for (auto p : (*svc)["spec"]["ports"]) named |= str(p["name"]) == str(ep["port"]);
        if (!named) out.push_back("ServiceMonitor: endpoint port " + str(ep["port"]) + " is not a Service port");
        if (str(ep["path"]) != "/metrics") out.push_back("ServiceMonitor: path must be /metrics");
      }
    }
  }

  // RBAC: what the service account holds, through bindings of our roles.
  const std::string sa = str(pod["serviceAccountName"]);
  static const std::set<std::string> system_roles = {"system:kube-scheduler", "system:volume-scheduler", "extension-apiserver-authentication-reader"};
  std::map<std::string, std::set<std::string>> held;  // namespace ("" = cluster) -> grants
  for (auto b : objects) {
    const std::string kind = str(b["kind"]);
    if (kind != "ClusterRoleBinding" && kind != "RoleBinding") continue;
    bool ours = false, agents = false;
    for (auto s : b["subjects"]) {
      ours |= str(s["kind"]) == "ServiceAccount" && str(s["name"]) == sa && str(s["namespace"]) == ns;
      agents |= !agent_sa.empty() && str(s["kind"]) == "ServiceAccount" && str(s["name"]) == agent_sa;
    }
    if (agents && !ours) continue;  // the node agent's (check_node_agent)
    if (!ours) {
      out.push_back(key_of(b) + ": binds no subject of ours");
      continue;
    }
    const std::string ref = str(b["roleRef"]["name"]);
    if (system_roles.count(ref)) continue;
    YAML::Node* role = find(objects, str(b["roleRef"]["kind"]), ref);
    if (!role) {
      out.push_back(key_of(b) + ": roleRef " + ref + " does not exist");
      continue;
    }
    for (const auto& g : grants((*role)["rules"], out, key_of(*role))) held[kind == "RoleBinding" ? str(b["metadata"]["namespace"]) : ""].insert(g);
  }
  // Exactly fracpack's API calls (see RbacMatchesTheCode) cluster-wide; the
  // lease and the workload ConfigMap by name in their namespaces.
  std::set<std::string> cluster_wide = {"|pods|get", "|pods|list", "|pods|watch", "|pods/binding|create",
                                        "|nodes|list", "|nodes|watch", "|events|create",
                                        "|resourcequotas|list", "|resourcequotas|watch"};
  if (fc.contract.profile == k8s::Profile::kHami && fc.contract.hami_node_lock) {
    cluster_wide.insert({"|nodes|get", "|nodes|patch"});  // HAMi's node lock (k8s/contract/hami_node_lock.h)
  }
  if (held[""] != cluster_wide) {
    std::string got;
    for (auto g : held[""]) got += g + " ";
    out.push_back("cluster-wide grants must be exactly fracpack's API calls; got " + got);
  }
  if (fc.contract.profile == k8s::Profile::kGpushare) {
    const std::string& health_ns = fc.contract.gpushare.unhealthy_namespace;
    for (const char* verb : {"list", "watch"}) {
      if (!held[health_ns].count(std::string("|configmaps|") + verb)) {
        out.push_back("no " + std::string(verb) + " on ConfigMaps in " + health_ns + " (gpushare's unhealthy-gpu-<node>)");
      }
    }
  }
  const std::string wl = fc.workload.config_map;
  if (!wl.empty()) {
    const std::string wl_ns = wl.substr(0, wl.find('/')), wl_name = wl.substr(wl.find('/') + 1);
    if (!held[wl_ns].count("|configmaps|get|" + wl_name)) out.push_back("no get on the workload ConfigMap " + wl);
  }
  // The bind fence's marker pod: there, writable by name, never scheduled
  // and never holding a token.
  if (const std::string& mk = fc.cluster.bind_fence_marker; !mk.empty()) {
    const std::string mk_ns = mk.substr(0, mk.find('/')), mk_name = mk.substr(mk.find('/') + 1);
    if (!held[mk_ns].count("|pods|patch|" + mk_name)) out.push_back("no patch on the bind fence's marker pod " + mk);
    YAML::Node* marker = find(objects, "Pod", mk_name);
    if (!marker || str((*marker)["metadata"]["namespace"]) != mk_ns) {
      out.push_back("no Pod " + mk + " (cluster.bindFenceMarker)");
    } else {
      const YAML::Node spec = (*marker)["spec"];
      const std::string marker_scheduler = str(spec["schedulerName"]);
      bool served = marker_scheduler.empty() || marker_scheduler == "default-scheduler";
      if (cfg.scheduler.IsDefined()) {
        for (auto p : cfg.scheduler["profiles"]) served |= str(p["schedulerName"]) == marker_scheduler;
      }
      if (served) out.push_back("Pod " + mk + ": a scheduler would place it (schedulerName \"" + marker_scheduler + "\")");
      if (str(spec["automountServiceAccountToken"]) != "false") out.push_back("Pod " + mk + ": automountServiceAccountToken must be false");
      for (auto c : spec["containers"]) {
        if (c["resources"].IsDefined()) out.push_back("Pod " + mk + ": asks for resources");
      }
    }
  }
  if (cfg.scheduler.IsDefined()) {
    const std::string lease_ns = str(cfg.scheduler["leaderElection"]["resourceNamespace"]);
    const std::string lease = str(cfg.scheduler["leaderElection"]["resourceName"]);
    for (const char* verb : {"get", "update"}) {
      if (!held[lease_ns].count(std::string("coordination.k8s.io|leases|") + verb + "|" + lease)) out.push_back("no " + std::string(verb) + " on the lease " + lease);
    }
  }
  return out;
}

std::string list(const Problems& p) {
  std::string s;
  for (const auto& x : p) s += "\n  " + x;
  return s;
}

TEST(Manifests, PlainInstallationIsCompleteAndConsistent) {
  const Objects objects = plain_installation();
  EXPECT_EQ(objects.size(), 26u);
  const Problems p = check_installation(objects);
  EXPECT_TRUE(p.empty()) << list(p);
  // The policy guards the fracpack contract's record, for the extender.
  YAML::Node* vap = find(objects, "ValidatingAdmissionPolicy", "fracpack-records");
  ASSERT_NE(vap, nullptr);
  auto guarded = cel_strings(cel_variable(*vap, "guarded"));
  ASSERT_TRUE(guarded);
  EXPECT_EQ(as_set(*guarded), as_set(k8s::FracpackContract{}.guarded_annotations()));
  auto writers = cel_strings(cel_variable(*vap, "writers"));
  ASSERT_TRUE(writers);
  EXPECT_EQ(*writers, std::vector<std::string>{"system:serviceaccount:fracpack-system:fracpack"});
  for (const char* kind : {"ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy"}) EXPECT_NE(find(objects, kind, "fracpack-records"), nullptr) << kind;
  EXPECT_NE(find(objects, "ValidatingAdmissionPolicy", "fracpack-node-agent"), nullptr);
  const Objects ns = load_file(kManifests / "namespace.yaml");
  ASSERT_EQ(ns.size(), 1u);
  EXPECT_EQ(str(ns[0]["metadata"]["name"]), "fracpack-system");
}

// The check must be able to fail: each broken variant is named.
TEST(Manifests, TheCheckCatchesEachKindOfMistake) {
  struct Mutation {
    std::string what;
    std::function<void(Objects&)> apply;
    std::string expected;
  };
  auto cm_data = [](Objects& o, const std::string& key, const std::string& from, const std::string& to) {
    for (auto& x : o) {
      if (str(x["kind"]) == "ConfigMap") {
        std::string t = str(x["data"][key]);
        const size_t at = t.find(from);
        ASSERT_NE(at, std::string::npos) << from;
        x["data"][key] = t.replace(at, from.size(), to);
      }
    }
  };
  auto deployment = [](Objects& o) -> YAML::Node {
    for (auto& x : o) {
      if (str(x["kind"]) == "Deployment") return x;
    }
    return YAML::Node();
  };
  auto webhook = [](Objects& o) -> YAML::Node { return (*find(o, "ValidatingWebhookConfiguration", "fracpack-records"))["webhooks"][0]; };
  auto by_name = [](YAML::Node seq, const std::string& name) -> YAML::Node {
    for (auto x : seq) {
      if (str(x["name"]) == name) return x;
    }
    ADD_FAILURE() << "nothing named " << name;
    return YAML::Node();
  };
  auto mount = [&](YAML::Node workload, const std::string& c, const std::string& volume) {
    return by_name(by_name(workload["spec"]["template"]["spec"]["containers"], c)["volumeMounts"], volume);
  };
  auto volume = [&](YAML::Node workload, const std::string& v) { return by_name(workload["spec"]["template"]["spec"]["volumes"], v); };
  auto variable = [&](YAML::Node policy, const std::string& v) { return by_name(policy["spec"]["variables"], v); };
  const std::vector<Mutation> mutations = {
      {"extender port", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "127.0.0.1:8888", "127.0.0.1:8889"); }, "is not fracpack's listen port"},
      {"extender path", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "8888/scheduler", "8888/sched"); }, "is not fracpack's urlPrefix"},
      {"a verb", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "\"prioritize\"", "\"priorities\""); }, "prioritizeVerb must be"},
      {"a managed resource", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "\"fracpack.io/gpu-cores\"", "\"fracpack.io/gpu-core\""); },
       "managedResources must be the profile's"},
      {"ignoredByScheduler", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "ignoredByScheduler: true", "ignoredByScheduler: false"); },
       "needs ignoredByScheduler: true"},
      {"unknown scheduler field", [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "nodeCacheCapable", "nodeCacheCapible"); },
       "unknown extender field nodeCacheCapible"},
      {"a bind timeout past kube-scheduler's", [&](Objects& o) { cm_data(o, "fracpack.yaml", "bindTimeout: \"4s\"", "bindTimeout: \"5s\""); },
       "must end at least 500 ms before kube-scheduler's httpTimeout"},
      {"a lease handover shorter than the bind timeout",
       [&](Objects& o) { cm_data(o, "scheduler-config.yaml", "leaderElect: true", "leaderElect: true\n  leaseDuration: 12s"); },
       "must be shorter than kube-scheduler's leaseDuration - renewDeadline"},
      {"verbs on the network", [&](Objects& o) { cm_data(o, "fracpack.yaml", "listen: \"127.0.0.1:8888\"", "listen: \"0.0.0.0:8888\""); },
       "is reachable from other hosts and its clients are not authenticated"},
      {"verbs on the network, allowed", [&](Objects& o) {
         cm_data(o, "fracpack.yaml", "listen: \"127.0.0.1:8888\"", "listen: \"0.0.0.0:8888\"");
         cm_data(o, "fracpack.yaml", "records: \"signed\"", "records: \"signed\"\n  allowUnauthenticatedListen: true");
       },
       "the verbs belong on 127.0.0.1"},
      {"a broken fracpack config", [&](Objects& o) { cm_data(o, "fracpack.yaml", "policy:", "polcy:"); }, "polcy: unknown key"},
      {"writable root", [&](Objects& o) { deployment(o)["spec"]["template"]["spec"]["containers"][1]["securityContext"]["readOnlyRootFilesystem"] = false; },
       "fracpack: readOnlyRootFilesystem"},
      {"probe port", [&](Objects& o) { deployment(o)["spec"]["template"]["spec"]["containers"][1]["readinessProbe"]["httpGet"]["port"] = 8888; },
       "readinessProbe port is not"},
      {"a wildcard", [&](Objects& o) {
         for (auto& x : o) {
           if (str(x["kind"]) == "ClusterRole") x["rules"][0]["verbs"].push_back("*");
         }
       },
       "a wildcard rule"},
      {"a missing permission", [&](Objects& o) {
         for (auto& x : o) {
           if (str(x["kind"]) == "ClusterRole") x["rules"].remove(1);
         }
       },
       "cluster-wide grants must be exactly"},
      {"service selector", [&](Objects& o) {
         for (auto& x : o) {
           if (str(x["kind"]) == "Service") x["spec"]["selector"]["app.kubernetes.io/name"] = "other";
         }
       },
       "Service: selector does not match"},
      {"node agent without kubelet's directory", [&](Objects& o) {
         YAML::Node ds = *find(o, "DaemonSet", "fracpack-node-agent");
         for (auto v : ds["spec"]["template"]["spec"]["volumes"]) {
           if (str(v["name"]) == "device-plugins") v["hostPath"]["path"] = "/var/lib/kubelet/plugins";
         }
       },
       "/var/lib/kubelet/device-plugins must be the host's"},
      {"node agent privileged", [&](Objects& o) {
         YAML::Node ds = *find(o, "DaemonSet", "fracpack-node-agent");
         ds["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = true;
       },
       "node-agent: privileged"},
      {"node agent patching pods", [&](Objects& o) {
         YAML::Node role = *find(o, "ClusterRole", "fracpack-node-agent");
         role["rules"][1]["verbs"].push_back("patch");
       },
       "node-agent: cluster-wide grants must be exactly"},
      {"webhook Service on another port", [&](Objects& o) { (*find(o, "Service", "fracpack-webhook"))["spec"]["ports"][0]["targetPort"] = "metrics"; },
       "fracpack-webhook: targetPort is not the fracpack container's webhook port"},
      {"webhook port not admission.listen's", [&](Objects& o) { cm_data(o, "fracpack.yaml", "listen: \":9443\"", "listen: \":9444\""); },
       "the port named webhook is not admission.listen's port 9444"},
      {"webhook path", [&](Objects& o) { webhook(o)["clientConfig"]["service"]["path"] = "/validate-pods"; }, "clientConfig.service.path must be /validate"},
      {"webhook rules broader", [&](Objects& o) { webhook(o)["rules"][0]["operations"].push_back("DELETE"); }, "rules must be exactly pods CREATE+UPDATE"},
      {"webhook rules on every subresource", [&](Objects& o) { webhook(o)["rules"][1]["resources"][0] = "pods/*"; }, "webhook records.fracpack.io: a wildcard rule"},
      {"webhook rules without pods/binding", [&](Objects& o) { webhook(o)["rules"].remove(1); }, "rules must be exactly pods CREATE+UPDATE"},
      {"webhook without UPDATE", [&](Objects& o) { webhook(o)["rules"][0]["operations"] = YAML::Load("[CREATE]"); }, "rules must be exactly pods CREATE+UPDATE"},
      {"admissionReviewVersions", [&](Objects& o) { webhook(o)["admissionReviewVersions"] = YAML::Load("[v1beta1]"); },
       "admissionReviewVersions must include v1"},
      {"sideEffects", [&](Objects& o) { webhook(o)["sideEffects"] = "Some"; }, "sideEffects must be None"},
      {"the certificate for another name", [&](Objects& o) { (*find(o, "Certificate", "fracpack-webhook"))["spec"]["dnsNames"] = YAML::Load("[fracpack.example.com]"); },
       "dnsNames must include fracpack-webhook.fracpack-system.svc"},
      {"the extender not a record writer", [&](Objects& o) {
         cm_data(o, "fracpack.yaml", "recordWriters: [\"system:serviceaccount:fracpack-system:fracpack\"]", "recordWriters: [\"system:serviceaccount:default:x\"]");
       },
       "admission.recordWriters must name the extender's ServiceAccount"},
      {"the signing key in kube-scheduler too", [&](Objects& o) {
         deployment(o)["spec"]["template"]["spec"]["containers"][0]["volumeMounts"].push_back(YAML::Load("{name: signing-key, mountPath: /keys, readOnly: true}"));
       },
       "must be mounted only into the fracpack container"},
      {"the signing key elsewhere", [&](Objects& o) { mount(deployment(o), "fracpack", "signing-key")["mountPath"] = "/etc/fracpack-keys/key"; },
       "security.signingKey's directory /etc/fracpack-keys/signing is not a Secret volume"},
      {"the signing key readable by all", [&](Objects& o) { volume(deployment(o), "signing-key")["secret"]["defaultMode"] = "0444"; },
       "lets more than its owner and group read it"},
      {"the signing key unreadable", [&](Objects& o) { deployment(o)["spec"]["template"]["spec"]["securityContext"].remove("fsGroup"); },
       "it cannot read the signing key"},
      {"the extender without the record keys", [&](Objects& o) { mount(deployment(o), "fracpack", "record-keys")["mountPath"] = "/etc/keys"; },
       "fracpack: no ConfigMap mounted at a folder of security.verifyKeys"},
      {"the node agent without the record keys", [&](Objects& o) {
         mount(*find(o, "DaemonSet", "fracpack-node-agent"), "node-agent", "record-keys")["mountPath"] = "/etc/keys";
       },
       "node-agent: no ConfigMap mounted at a folder of security.verifyKeys"},
      {"the node agent holding the signing key", [&](Objects& o) {
         YAML::Node pod = (*find(o, "DaemonSet", "fracpack-node-agent"))["spec"]["template"]["spec"];
         pod["volumes"].push_back(YAML::Load("{name: signing, secret: {secretName: fracpack-signing-key}}"));
         pod["containers"][0]["volumeMounts"].push_back(YAML::Load("{name: signing, mountPath: /etc/signing}"));
       },
       "node-agent: mounts the signing key Secret"},
      {"a Role reading Secrets", [&](Objects& o) {
         (*find(o, "Role", "fracpack"))["rules"].push_back(YAML::Load("{apiGroups: [''], resources: [secrets], verbs: [get]}"));
       },
       "grants secrets"},
      {"the node agent policy for someone else", [&](Objects& o) {
         (*find(o, "ValidatingAdmissionPolicy", "fracpack-node-agent"))["spec"]["matchConditions"][0]["expression"] =
             "request.userInfo.username == 'system:serviceaccount:fracpack-system:other'";
       },
       "matchConditions must name the node agent's ServiceAccount"},
      {"the policy missing a guarded key", [&](Objects& o) {
         variable(*find(o, "ValidatingAdmissionPolicy", "fracpack-records"), "guarded")["expression"] = "['fracpack.io/allocation', 'fracpack.io/gpu-indices']";
       },
       "variables.guarded must be the contract's guarded annotations"},
      {"the policy for another writer", [&](Objects& o) {
         variable(*find(o, "ValidatingAdmissionPolicy", "fracpack-records"), "writers")["expression"] = "['system:serviceaccount:kube-system:default']";
       },
       "variables.writers must be admission.recordWriters"},
      {"the policy only auditing", [&](Objects& o) { (*find(o, "ValidatingAdmissionPolicyBinding", "fracpack-records"))["spec"]["validationActions"] = YAML::Load("[Audit]"); },
       "validationActions must include Deny"},
      {"no bind fence marker", [&](Objects& o) {
         o.erase(std::remove_if(o.begin(), o.end(), [](const YAML::Node& x) { return str(x["kind"]) == "Pod"; }), o.end());
       },
       "no Pod fracpack-system/fracpack-bind-fence"},
      {"the marker not writable", [&](Objects& o) { (*find(o, "Role", "fracpack"))["rules"].remove(3); },
       "no patch on the bind fence's marker pod"},
      {"every pod writable", [&](Objects& o) { (*find(o, "Role", "fracpack"))["rules"][3].remove("resourceNames"); },
       "no patch on the bind fence's marker pod"},
      {"the marker scheduled", [&](Objects& o) { (*find(o, "Pod", "fracpack-bind-fence"))["spec"]["schedulerName"] = "fracpack"; },
       "a scheduler would place it"},
      {"the marker with a token", [&](Objects& o) { (*find(o, "Pod", "fracpack-bind-fence"))["spec"].remove("automountServiceAccountToken"); },
       "automountServiceAccountToken must be false"},
      {"node agent without its node's name", [&](Objects& o) {
         YAML::Node ds = *find(o, "DaemonSet", "fracpack-node-agent");
         ds["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name";
       },
       "NODE_NAME must come from the field spec.nodeName"},
  };
  for (const auto& m : mutations) {
    Objects objects;
    for (const auto& o : plain_installation()) objects.push_back(YAML::Clone(o));
    m.apply(objects);
    const Problems p = check_installation(objects);
    bool named = false;
    for (const auto& x : p) named |= x.find(m.expected) != std::string::npos;
    EXPECT_TRUE(named) << m.what << ": expected \"" << m.expected << "\" among:" << list(p);
  }
}

// Every API path in the code maps to a permission of manifests/rbac.yaml
// (a new call without its permission fails here).
TEST(Manifests, RbacMatchesTheCode) {
  const std::vector<std::pair<std::regex, std::string>> known = {
      {std::regex(R"re(request\("GET", "/api/v1/namespaces/" \+ [\w.]+ \+ "/pods/" \+ [\w.]+[,)])re"), "|pods|get"},
      // The bind fence: the current resourceVersion, then one node's pods.
      {std::regex(R"re(request\("GET", "/api/v1/pods\?limit=1")re"), "|pods|list"},
      {std::regex(R"re("/api/v1/pods\?fieldSelector=" \+ url_encode\(selector\))re"), "|pods|list (one node)"},
      // ... and, for a namespace with a GPU quota, its pods (a cluster-wide list grant covers it).
      {std::regex(R"re("/api/v1/namespaces/" \+ url_encode\(namespace_name\) \+ "/pods\?fieldSelector=" \+ url_encode\(selector\))re"),
       "|pods|list (one namespace)"},
      {std::regex(R"re(request\("PATCH", "/api/v1/namespaces/" \+ url_encode\(marker_.ns\) \+ "/pods/" \+ url_encode\(marker_.name\))re"),
       "|pods|patch (the bind fence's marker, by name)"},
      {std::regex(R"re("/api/v1/namespaces/" \+ [\w.]+ \+ "/pods/" \+ [\w.]+ \+ "/binding")re"), "|pods/binding|create"},
      {std::regex(R"re(request\("POST", "/api/v1/namespaces/" \+ [\w.]+ \+ "/events")re"), "|events|create"},
      {std::regex(R"re(request\("GET", "/api/v1/namespaces/" \+ k8s::url_encode\(key.namespace_name\) \+ "/configmaps/" \+ k8s::url_encode\(key.name\)\))re"),
       "|configmaps|get"},
      {std::regex(R"re(resource = "/api/v1/pods")re"), "|pods|list+watch"},
      {std::regex(R"re(resource = "/api/v1/nodes")re"), "|nodes|list+watch"},
      // The namespace GPU quota (k8s/quota.h).
      {std::regex(R"re(resource = "/api/v1/resourcequotas")re"), "|resourcequotas|list+watch"},
      // The gpushare profile's unhealthy-card ConfigMaps (kube-system).
      {std::regex(R"re(resource = "/api/v1/namespaces/" \+ ns \+ "/configmaps")re"), "|configmaps|list+watch (gpushare profile)"},
      // The hami profile's node lock: read and merge-patch the node; is its holder still there?
      {std::regex(R"re(return "/api/v1/nodes/" \+ url_encode\(node\);)re"), "|nodes|get+patch (hami profile)"},
      {std::regex(R"re(request\("GET", "/api/v1/namespaces/" \+ url_encode\(ns\) \+ "/pods/" \+ url_encode\(name\))re"), "|pods|get (the node lock's holder)"},
      // The node agent (its own ServiceAccount, manifests/node-agent.yaml):
      // its Node's device annotation, and the pods on its node.
      {std::regex(R"re(path = "/api/v1/nodes/" \+ k8s::url_encode\(node_\);)re"), "|nodes|get+patch (node agent)"},
      {std::regex(R"re(path = "/api/v1/namespaces/" \+ k8s::url_encode\(key.namespace_name\) \+ "/pods/" \+ k8s::url_encode\(key.name\);)re"),
       "|pods|get (node agent: the pod an Allocate is for)"},
      {std::regex(R"re(path = "/api/v1/pods\?resourceVersion=0&fieldSelector=" \+ k8s::url_encode\(node::pods_on_node_selector\(options_.node_name\)\);)re"),
       "|pods|list (node agent: the pods waiting on its node, when an Allocate begins a pod)"},
  };
  std::set<std::string> used;
  size_t calls = 0;
  for (const char* dir : {"k8s", "node", "server"}) {
    for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
      if (e.path().extension() != ".cc") continue;
      std::ifstream in(e.path());
      std::string line;
      int n = 0;
      while (std::getline(in, line)) {
        ++n;
        if (line.find("\"/api/") == std::string::npos && line.find("\"/apis/") == std::string::npos) continue;
        ++calls;
        bool matched = false;
        for (const auto& [re, grant] : known) {
          if (std::regex_search(line, re)) {
            used.insert(grant);
            matched = true;
          }
        }
        EXPECT_TRUE(matched) << e.path().string() << ":" << n << ": an API call this test does not know; add its permission to "
                             << "manifests/rbac.yaml (and the chart) and here: " << line;
      }
    }
  }
  EXPECT_EQ(calls, 19u);
  EXPECT_EQ(used.size(), known.size()) << "a permission in this table is no longer used by the code: drop it from the RBAC";
}

// The YAML of an example pod as the API server would hand it to fracpack
// (quantities as strings).
nlohmann::json to_json(YAML::Node n, bool in_resources = false) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      o[k] = to_json(it->second, in_resources || k == "limits" || k == "requests");
    }
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (auto x : n) a.push_back(to_json(x, in_resources));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() != "!" && !in_resources) {
    if (s == "true" || s == "false") return s == "true";
    if (std::regex_match(s, std::regex("-?[0-9]+"))) return std::stoll(s);
  }
  return s;
}

TEST(Manifests, ExamplePodsAreAcceptedByTheContractAndUseTheProfile) {
  Problems problems;
  Configs cfg = configs(plain_installation(), problems);
  ASSERT_TRUE(problems.empty()) << list(problems);
  const std::string profile = str(cfg.scheduler["profiles"][0]["schedulerName"]);
  const Objects pods = load_file(kManifests / "examples/pods.yaml");
  ASSERT_EQ(pods.size(), 4u);
  std::map<std::string, scheduling::PodRequest> requests;
  for (auto p : pods) {
    const std::string name = str(p["metadata"]["name"]);
    EXPECT_EQ(str(p["kind"]), "Pod");
    EXPECT_EQ(str(p["spec"]["schedulerName"]), profile) << name;
    std::string text = to_json(p).dump();
    auto pod = k8s::parse_pod(text, cfg.fracpack->contract.fracpack.selection());
    ASSERT_TRUE(pod) << name << ": " << pod.message();
    const k8s::FracpackContract contract(cfg.fracpack->contract.fracpack);
    EXPECT_TRUE(contract.requests_gpu(*pod)) << name;
    auto req = contract.pod_request(*pod);
    ASSERT_TRUE(req) << name << ": " << req.message();
    requests[name] = *req;
    // kubelet calls the node agent only for containers asking its resource.
    for (const auto& c : pod->containers) {
      EXPECT_NE(k8s::find(c.limits, cfg.fracpack->contract.fracpack.gpu), nullptr) << name << "/" << c.name << " does not name the card count";
    }
  }
  // What each example says it asks for.
  ASSERT_EQ(requests["inference-half-card"].containers.size(), 1u);
  EXPECT_EQ(requests["finetune-2x20g"].containers[0].cards, 2);
  EXPECT_EQ(requests["training-exclusive"].containers[0].cards, 1);
}

TEST(Chart, RendersTheSameObjectsAsThePlainManifests) {
  YAML::Node overrides = YAML::Load("{serviceMonitor: {enabled: true}, admission: {policy: true}}");
  const Objects chart = render_chart(overrides);
  const Objects plain = plain_installation();
  std::map<std::string, YAML::Node> by_key;
  for (const auto& o : plain) by_key[key_of(o)] = o;
  std::set<std::string> rendered;
  for (auto o : chart) {
    const std::string k = key_of(o);
    rendered.insert(k);
    ASSERT_TRUE(by_key.count(k)) << "the chart renders " << k << ", the plain manifests do not have it";
    Problems diff;
    if (str(o["kind"]) == "ConfigMap") {
      // The embedded configurations compare by meaning.
      Problems p;
      Configs a = configs({o}, p), b = configs({by_key[k]}, p);
      ASSERT_TRUE(p.empty()) << list(p);
      EXPECT_TRUE(*a.fracpack == *b.fracpack) << "fracpack.yaml differs";
      compare(a.scheduler, b.scheduler, k + " scheduler-config.yaml", diff);
      YAML::Node oa = YAML::Clone(o), ob = YAML::Clone(by_key[k]);
      oa.remove("data");
      ob.remove("data");
      compare(oa, ob, k, diff);
    } else {
      compare(o, by_key[k], k, diff);
    }
    EXPECT_TRUE(diff.empty()) << list(diff);
  }
  EXPECT_EQ(rendered.size(), by_key.size()) << "the plain manifests have objects the chart does not render";
  EXPECT_TRUE(check_installation(chart).empty()) << list(check_installation(chart));
  // Without the ServiceMonitor (the default: it needs the operator's CRD)
  // and the 1.30+ policies (two, each with its binding).
  const Objects defaults = render_chart();
  EXPECT_EQ(defaults.size(), chart.size() - 5);
  EXPECT_EQ(find(defaults, "ServiceMonitor", "fracpack"), nullptr);
  EXPECT_EQ(find(defaults, "ValidatingAdmissionPolicy", "fracpack-records"), nullptr);
  EXPECT_EQ(find(defaults, "ValidatingAdmissionPolicyBinding", "fracpack-node-agent"), nullptr);
  EXPECT_NE(find(defaults, "ValidatingWebhookConfiguration", "fracpack-records"), nullptr);
  EXPECT_TRUE(check_installation(defaults).empty()) << list(check_installation(defaults));
}

TEST(Chart, AdmissionValuesRenderAConsistentInstallation) {
  // No webhook: no Service, no configuration, no port, no certificate; the keys stay.
  {
    const Objects chart = render_chart(YAML::Load("admission: {enabled: false}"));
    const Problems p = check_installation(chart);
    EXPECT_TRUE(p.empty()) << list(p);
    for (const char* kind : {"ValidatingWebhookConfiguration", "Certificate", "Issuer"}) {
      for (auto o : chart) EXPECT_NE(str(o["kind"]), kind);
    }
    EXPECT_EQ(find(chart, "Service", "fracpack-webhook"), nullptr);
    Problems q;
    Configs cfg = configs(chart, q);
    ASSERT_TRUE(cfg.fracpack) << list(q);
    EXPECT_EQ(cfg.fracpack->admission.listen, "");
    EXPECT_EQ(cfg.fracpack->security.signing_key, "/etc/fracpack-keys/signing/signing.pem");
    YAML::Node spec = (*find(chart, "Deployment", "fracpack"))["spec"]["template"]["spec"];
    for (auto v : spec["volumes"]) EXPECT_NE(str(v["name"]), "webhook-tls");
    for (auto port : spec["containers"][1]["ports"]) EXPECT_NE(str(port["name"]), "webhook");
  }
  // Without cert-manager: the named TLS Secret, no Issuer, no CA injection.
  {
    const Objects chart = render_chart(YAML::Load("admission: {certManager: false, tlsSecret: my-webhook-tls, failurePolicy: Fail}"));
    const Problems p = check_installation(chart);
    EXPECT_TRUE(p.empty()) << list(p);
    EXPECT_EQ(find(chart, "Certificate", "fracpack-webhook"), nullptr);
    EXPECT_EQ(find(chart, "Issuer", "fracpack-selfsigned"), nullptr);
    YAML::Node vwc = *find(chart, "ValidatingWebhookConfiguration", "fracpack-records");
    EXPECT_FALSE(vwc["metadata"]["annotations"].IsDefined());
    EXPECT_EQ(str(vwc["webhooks"][0]["failurePolicy"]), "Fail");
    bool secret = false;
    for (auto v : (*find(chart, "Deployment", "fracpack"))["spec"]["template"]["spec"]["volumes"]) secret |= str(v["secret"]["secretName"]) == "my-webhook-tls";
    EXPECT_TRUE(secret);
  }
  // Other key objects, another namespace, a peer writer: every name follows.
  {
    ChartContext c;
    c.values = merge_values(YAML::LoadFile((kManifests / "chart/values.yaml").string()),
                            YAML::Load("{security: {signingKeySecret: sk, recordKeysConfigMap: rk}, admission: {policy: true, "
                                       "peerRecordWriter: 'system:serviceaccount:kube-system:peer'}}"));
    c.chart_app_version = "0.1.0";
    c.release_namespace = "gpu";
    Objects chart;
    for (const auto& e : fs::directory_iterator(kManifests / "chart/templates")) {
      if (e.path().extension() != ".yaml") continue;
      auto rendered = render_template(*read_file(e.path().string()), c);
      ASSERT_TRUE(rendered) << e.path().filename().string() << ": " << rendered.message();
      for (auto& o : load_documents(*rendered, e.path().string())) chart.push_back(o);
    }
    const Problems p = check_installation(chart);
    EXPECT_TRUE(p.empty()) << list(p);
    Problems q;
    Configs cfg = configs(chart, q);
    ASSERT_TRUE(cfg.fracpack) << list(q);
    EXPECT_EQ(cfg.fracpack->admission.record_writers,
              (std::vector<std::string>{"system:serviceaccount:gpu:fracpack", "system:serviceaccount:kube-system:peer"}));
    auto writers = cel_strings(cel_variable(*find(chart, "ValidatingAdmissionPolicy", "fracpack-records"), "writers"));
    ASSERT_TRUE(writers);
    EXPECT_EQ(*writers, cfg.fracpack->admission.record_writers);
    std::set<std::string> secrets, maps;
    for (auto v : (*find(chart, "Deployment", "fracpack"))["spec"]["template"]["spec"]["volumes"]) {
      secrets.insert(str(v["secret"]["secretName"]));
      maps.insert(str(v["configMap"]["name"]));
    }
    EXPECT_TRUE(secrets.count("sk"));
    EXPECT_TRUE(maps.count("rk"));
    EXPECT_EQ(str((*find(chart, "ValidatingWebhookConfiguration", "fracpack-records"))["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]),
              "gpu/fracpack-webhook");
  }
}

TEST(Chart, ValuesForImagePolicyNamesAndTlsRenderAConsistentInstallation) {
  YAML::Node overrides = YAML::Load(R"(
image: {repository: registry.example.com/fracpack, tag: "9.9.9", pullPolicy: Always}
policy: fgd
port: 7443
urlPrefix: /gpu/
contract: {gpu: example.com/gpu, gpuMemory: example.com/gpu-mem, gpuMemoryPercent: example.com/gpu-mem-pct, gpuCores: example.com/gpu-cores}
tls: {enabled: true, secretName: my-tls, serverName: fracpack.example.com, mutual: true}
)");
  const Objects chart = render_chart(overrides);
  const Problems p = check_installation(chart);
  EXPECT_TRUE(p.empty()) << list(p);
  Problems q;
  Configs cfg = configs(chart, q);
  ASSERT_TRUE(cfg.fracpack);
  EXPECT_EQ(cfg.fracpack->policy.name, "fgd");
  EXPECT_EQ(cfg.fracpack->contract.fracpack.gpu_memory, "example.com/gpu-mem");
  EXPECT_EQ(cfg.fracpack->tls.cert_file, "/etc/fracpack/tls/tls.crt");
  YAML::Node e = cfg.scheduler["extenders"][0];
  EXPECT_EQ(str(e["urlPrefix"]), "https://127.0.0.1:7443/gpu");
  EXPECT_EQ(str(e["tlsConfig"]["serverName"]), "fracpack.example.com");
  EXPECT_EQ(cfg.fracpack->tls.client_ca_file, "/etc/fracpack/tls/ca.crt");
  EXPECT_EQ(str(e["tlsConfig"]["certFile"]), "/etc/fracpack/tls/tls.crt");
  YAML::Node* dep = find(chart, "Deployment", "fracpack");
  ASSERT_NE(dep, nullptr);
  YAML::Node spec = (*dep)["spec"]["template"]["spec"];
  EXPECT_EQ(str(spec["containers"][1]["image"]), "registry.example.com/fracpack:9.9.9");
  EXPECT_EQ(str(spec["containers"][1]["imagePullPolicy"]), "Always");
  bool secret = false;
  for (auto v : spec["volumes"]) secret |= str(v["secret"]["secretName"]) == "my-tls";
  EXPECT_TRUE(secret);
  for (auto c : spec["containers"]) {
    bool mounted = false;
    for (auto m : c["volumeMounts"]) mounted |= str(m["mountPath"]) == "/etc/fracpack/tls";
    EXPECT_TRUE(mounted) << str(c["name"]);
  }
}

TEST(Chart, AProfileSwitchesTheSchedulersResourcesAndFracpacksContract) {
  for (const std::string profile : {"hami", "gpushare"}) {
    const Objects chart = render_chart(YAML::Load("{contract: {profile: " + profile + "}, admission: {policy: true}}"));
    const Problems p = check_installation(chart);
    EXPECT_TRUE(p.empty()) << profile << ": " << list(p);
    // The peer's device plugin does not verify signatures: the webhook fails
    // closed, and the policy guards the profile's record.
    EXPECT_EQ(str((*find(chart, "ValidatingWebhookConfiguration", "fracpack-records"))["webhooks"][0]["failurePolicy"]), "Fail") << profile;
    ASSERT_NE(find(chart, "ValidatingAdmissionPolicy", "fracpack-records"), nullptr) << profile;
    EXPECT_EQ(find(chart, "ValidatingAdmissionPolicy", "fracpack-node-agent"), nullptr) << profile;
    Problems q;
    Configs cfg = configs(chart, q);
    ASSERT_TRUE(cfg.fracpack) << profile;
    EXPECT_EQ(k8s::profile_name(cfg.fracpack->contract.profile), profile);
    std::set<std::string> managed;
    for (auto r : cfg.scheduler["extenders"][0]["managedResources"]) managed.insert(str(r["name"]));
    if (profile == "hami") {
      EXPECT_EQ(managed, (std::set<std::string>{"nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores"}));
    } else {
      EXPECT_EQ(managed, std::set<std::string>{"aliyun.com/gpu-mem"});
      EXPECT_FALSE(cfg.scheduler["extenders"][0]["managedResources"][0]["ignoredByScheduler"].as<bool>());
    }
  }
  // The check notices a profile whose scheduler config was not switched.
  Objects chart = render_chart(YAML::Load("contract: {profile: gpushare}"));
  Objects fracpack_default = render_chart();
  for (auto o : chart) {
    if (str(o["kind"]) != "ConfigMap" || str(o["metadata"]["name"]) != "fracpack-config") continue;
    for (auto d : fracpack_default) {
      if (str(d["kind"]) == "ConfigMap" && str(d["metadata"]["name"]) == "fracpack-config") {
        o["data"]["scheduler-config.yaml"] = str(d["data"]["scheduler-config.yaml"]);
      }
    }
  }
  EXPECT_FALSE(check_installation(chart).empty());
}

TEST(ChartRenderer, RefusesWhatItDoesNotUnderstand) {
  ChartContext c;
  c.values = YAML::Load("a: {b: 1}\nflag: false\nname: x");
  EXPECT_EQ(*render_template("v={{ .Values.a.b }}", c), "v=1");
  EXPECT_EQ(*render_template("x:\n  {{- if .Values.flag }}\n  y: 1\n  {{- else }}\n  y: 2\n  {{- end }}\n", c), "x:\n  y: 2\n");
  EXPECT_EQ(*render_template("{{ .Values.name | quote }} {{ trimSuffix \"/\" \"/a/\" }}", c), "\"x\" /a");
  EXPECT_EQ(*render_template("r:{{- toYaml .Values.a | nindent 2 }}", c), "r:\n  b: 1");
  EXPECT_FALSE(render_template("{{ .Values.missing }}", c));
  EXPECT_FALSE(render_template("{{ include \"x\" . }}", c));
  EXPECT_FALSE(render_template("{{ range .Values.a }}{{ end }}", c));
  EXPECT_FALSE(render_template("{{ upper .Values.name }}", c));
  EXPECT_FALSE(render_template("{{ if .Values.flag }}", c));
}

TEST(Grafana, DashboardIsValidJsonOverFracpackMetrics) {
  auto text = read_file((kManifests / "grafana/fracpack-dashboard.json").string());
  ASSERT_TRUE(text);
  auto d = nlohmann::json::parse(*text);
  EXPECT_EQ(d["uid"], "fracpack");
  size_t exprs = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      if (j.contains("expr")) {
        ++exprs;
        EXPECT_NE(j["expr"].get<std::string>().find("fracpack_"), std::string::npos) << j["expr"];
      }
      for (const auto& [k, v] : j.items()) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(d);
  EXPECT_GT(exprs, 20u);
}

}  // namespace
}  // namespace fracpack::testing::manifests_test
