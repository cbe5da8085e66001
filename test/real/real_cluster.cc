#include "test/real/real_cluster.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "k8s/auth.h"
#include "test/support/fake_apiserver.h"
#include "test/support/record_keys.h"
#include "test/support/testlib.h"

extern char** environ;

namespace fracpack::real {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kShared = FRACPACK_SHARED_DIR "/k8s";
const std::string kSource = FRACPACK_SOURCE_DIR;
const std::string kBinCache = FRACPACK_REAL_BIN_DIR;  // the unpacked binaries, in the build tree
constexpr const char* kApi = "https://127.0.0.1:16443";
constexpr const char* kNodeName = "localhost";
const std::vector<std::string> kSysctls = {"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "vm.panic_on_oom",
                                           "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"};

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A shell command's exit code (its output to `log`, appended).
int sh(const std::string& command, const std::string& log = "/dev/null") {
  const int rc = std::system((command + " >>" + quoted(log) + " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string capture(const std::string& command) {
  std::string out;
  if (FILE* p = popen((command + " 2>/dev/null").c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string slurp(const std::string& path) { return testing::read_file(path).value_or(""); }

// GET `path` of a component on loopback over plain HTTP (health, metrics):
// the body when it answered 200.
std::optional<std::string> local_get(const std::string& host_port, const std::string& path,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  k8s::ClientConfig c;
  c.endpoint = *k8s::Endpoint::parse("http://" + host_port);
  c.request_timeout = timeout;
  k8s::ApiClient client(c);
  auto r = client.request("GET", path);
  if (!r || r->status != 200) return std::nullopt;
  return r->body;
}

void write(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

std::string random_token() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) out += kHex[rd() % 16];
  return out;
}

bool on_path(const std::string& program) { return sh("command -v " + program) == 0; }

// A YAML document as the JSON the API server takes: plain scalars that read
// as integers or booleans become numbers and booleans; quoted ones stay strings.
json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = to_json(it->second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& x : n) a.push_back(to_json(x));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string& s = n.Scalar();
  if (n.Tag() == "?") {
    if (s == "true") return true;
    if (s == "false") return false;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) return v;
  }
  return s;
}

// The collection an object is created in.
std::string collection(const json& o) {
  const std::string kind = o.value("kind", ""), api = o.value("apiVersion", "");
  const std::string ns = o.value("metadata", json::object()).value("namespace", "");
  static const std::map<std::string, std::string> plural = {
      {"Namespace", "namespaces"}, {"Node", "nodes"}, {"ServiceAccount", "serviceaccounts"}, {"ConfigMap", "configmaps"}, {"Secret", "secrets"},
      {"Service", "services"}, {"ClusterRole", "clusterroles"}, {"ClusterRoleBinding", "clusterrolebindings"}, {"Role", "roles"},
      {"RoleBinding", "rolebindings"}, {"ValidatingWebhookConfiguration", "validatingwebhookconfigurations"}, {"Pod", "pods"},
      {"ResourceQuota", "resourcequotas"}};
  const std::string base = api == "v1" ? "/api/v1" : "/apis/" + api;
  const std::string p = plural.count(kind) ? plural.at(kind) : "";
  return ns.empty() || kind == "Namespace" || kind == "Node" ? base + "/" + p : base + "/namespaces/" + ns + "/" + p;
}

std::string base64(const std::string& bytes) {
  static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kTable[v >> 18];
    out += kTable[(v >> 12) & 63];
    out += kTable[(v >> 6) & 63];
    out += kTable[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kTable[v >> 18];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kTable[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The fake NVML's cards: A100 40 GB, two per NUMA node.
std::string nvml_config(int cards) {
  std::string out = "driver;version=550.54.15\n";
  for (int i = 0; i < cards; ++i) {
    out += "card;uuid=GPU-" + std::to_string(i) + "aaaaaaa-0000-0000-0000-000000000000;name=NVIDIA A100-SXM4-40GB;memory_mib=40960;minor=" +
           std::to_string(i) + ";numa=" + std::to_string(i / 2) + "\n";
  }
  return out;
}

// The components' process groups, for a signal's tear-down (async-signal-safe:
// a fixed array, kill, _exit). A harness killed by a signal (ctest's timeout,
// `timeout`, Ctrl-C) takes its components with it; left running they would
// hold the ports, and the next run would talk to them.
constexpr int kMaxProcs = 32;
volatile sig_atomic_t g_groups[kMaxProcs] = {};

void remember_group(pid_t pid) {
  for (auto& g : g_groups) {
    if (g == 0) {
      g = pid;
      return;
    }
  }
}

void forget_group(pid_t pid) {
  for (auto& g : g_groups) {
    if (g == pid) g = 0;
  }
}

extern "C" void kill_groups_and_exit(int sig) {
  for (auto& g : g_groups) {
    if (g > 0) ::kill(-g, SIGKILL);
  }
  ::_exit(128 + sig);
}

// A port something listens on already (an earlier run's component).
bool port_taken(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool taken = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return taken;
}

// A unix socket something answers on. A socket file alone is no kubelet:
// one killed (an earlier run of this tier, a machine's kubelet stopped)
// leaves its kubelet.sock behind, and this tier would skip for good.
bool unix_socket_answers(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    ::close(fd);
    return false;
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const bool answers = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return answers;
}

}  // namespace

RealCluster::RealCluster(RealClusterOptions options) : options_(std::move(options)), k8s_dir_(kShared) {}

RealCluster::~RealCluster() { down(); }

std::string RealCluster::unavailable() {
  if (::geteuid() != 0) return "not root (kubelet, containerd and the cgroups need it)";
  for (const char* b : {"kube-apiserver", "kube-scheduler", "kubelet"}) {
    if (!fs::exists(kShared + "/bin/" + b + ".xz")) return kShared + "/bin/" + b + ".xz is missing";
  }
  for (const char* p : {"etcd", "containerd", "runc", "ctr", "xz", "openssl", "sha256sum", "etcdctl"}) {
    if (!on_path(p)) return std::string(p) + " is not installed (.ci/install-deps installs it)";
  }
  if (!fs::exists("/usr/lib/cni/loopback")) return "the CNI loopback plugin (/usr/lib/cni/loopback, containernetworking-plugins) is missing";
  if (!fs::exists(FRACPACK_FAKE_NVML)) return std::string(FRACPACK_FAKE_NVML) + " is not built";
  // Never beside a kubelet of the machine's own: the tier owns
  // /var/lib/kubelet/device-plugins and port 10250 while it runs.
  if (port_taken(10250) || unix_socket_answers("/var/lib/kubelet/device-plugins/kubelet.sock")) {
    return "a kubelet runs on this machine already (port 10250, or /var/lib/kubelet/device-plugins/kubelet.sock answers)";
  }
  if (::access("/sys/fs/cgroup", W_OK) != 0) return "/sys/fs/cgroup is not writable (kubelet makes the pods' cgroups)";
  return "";
}

bool RealCluster::wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

Status RealCluster::wait_ready(const std::string& what, const std::function<bool()>& pred, std::chrono::seconds timeout) {
  const auto start = Clock::now();
  std::string exited;
  // A component that exited (a port in use, a bad flag) fails the wait at
  // once: its port may be answered by something else.
  auto ready_or_exited = [&] {
    for (auto& [name, proc] : procs_) {
      int status = 0;
      if (proc.pid > 0 && ::waitpid(proc.pid, &status, WNOHANG) == proc.pid) {
        forget_group(proc.pid);
        proc.pid = -1;
        exited = name;
        return true;
      }
    }
    return pred();
  };
  const bool done = wait_for(ready_or_exited, timeout);
  if (!exited.empty()) return Error{exited + " exited while waiting for " + what + " (its log: " + dir_ + "/logs/" + exited + ".log)"};
  if (!done) return Error{what + " not ready after " + std::to_string(timeout.count()) + " s"};
  timings_.emplace_back(what, std::chrono::duration<double>(Clock::now() - start).count());
  return Status::Ok();
}

Status RealCluster::spawn(const std::string& name, std::vector<std::string> argv, std::vector<std::string> env) {
  stop(name);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (const auto& e : env) envs.push_back(e);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string log = dir_ + "/logs/" + name + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error{"cannot start " + name + " (" + argv[0] + "): " + std::strerror(rc)};
  remember_group(pid);  // POSIX_SPAWN_SETSID: its own session and process group
  procs_[name] = Proc{pid, argv, env};
  return Status::Ok();
}

void RealCluster::stop(const std::string& name, bool hard, std::chrono::seconds grace) {
  auto it = procs_.find(name);
  if (it == procs_.end() || it->second.pid <= 0) return;
  const pid_t pid = it->second.pid;
  ::kill(pid, hard ? SIGKILL : SIGTERM);
  const auto deadline = Clock::now() + grace;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  forget_group(pid);
  it->second.pid = -1;
}

std::string RealCluster::component_log(const std::string& name) const { return slurp(dir_ + "/logs/" + name + ".log"); }

std::string RealCluster::kubeconfig(const std::string& name, const std::string& token) {
  const std::string path = dir_ + "/" + name + ".kubeconfig";
  write(path,
        "apiVersion: v1\nkind: Config\nclusters: [{name: ci, cluster: {server: \"" + std::string(kApi) + "\", certificate-authority: \"" +
            dir_ + "/apiserver-certs/apiserver.crt\"}}]\ncontexts: [{name: ci, context: {cluster: ci, user: u}}]\ncurrent-context: ci\n"
            "users: [{name: u, user: {token: \"" + token + "\"}}]\n",
        0600);
  return path;
}

k8s::ApiClient& RealCluster::client(As as) {
  std::unique_ptr<k8s::ApiClient>& c = as == As::kAlice ? alice_ : admin_;
  if (!c) {
    k8s::ClientConfig cc;
    cc.endpoint = *k8s::Endpoint::parse(kApi);
    cc.tls.ca_pem = ca_pem_;
    cc.token = k8s::TokenSource::fixed(tokens_.at(as == As::kAlice ? "alice" : "admin"));
    cc.request_timeout = 20s;
    c = std::make_unique<k8s::ApiClient>(cc);
  }
  return *c;
}

Result<k8s::HttpResponse> RealCluster::request(const std::string& method, const std::string& path, const std::string& body, As as,
                                               const std::string& content_type) {
  auto r = client(as).request(method, path, body, content_type);
  if (!r) client(as).close();
  return r;
}

Result<json> RealCluster::get(const std::string& path) {
  auto r = request("GET", path);
  if (!r) return Error{r.message()};
  if (r->status != 200) return Error{"GET " + path + ": " + k8s::api_error_message(*r)};
  try {
    return json::parse(r->body);
  } catch (const std::exception& e) {
    return Error{std::string("GET ") + path + ": " + e.what()};
  }
}

Result<json> RealCluster::create(const json& object, As as) {
  auto r = request("POST", collection(object), object.dump(), as);
  if (!r) return Error{r.message()};
  if (r->status != 201 && r->status != 200) return Error{k8s::api_error_message(*r)};
  return json::parse(r->body);
}

std::vector<json> RealCluster::items(const std::string& path) {
  auto l = get(path);
  std::vector<json> out;
  if (l) {
    for (const auto& i : (*l)["items"]) out.push_back(i);
  }
  return out;
}

std::vector<json> RealCluster::pods(const std::string& ns) { return items("/api/v1/namespaces/" + ns + "/pods"); }

std::vector<json> RealCluster::events(const std::string& ns) { return items("/api/v1/namespaces/" + ns + "/events"); }

std::optional<json> RealCluster::pod(const std::string& ns, const std::string& name) {
  auto p = get("/api/v1/namespaces/" + ns + "/pods/" + name);
  if (!p) return std::nullopt;
  return *p;
}

void RealCluster::delete_pods(const std::string& ns) {
  (void)request("DELETE", "/api/v1/namespaces/" + ns + "/pods", R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0})");
  // Pods on a node with a kubelet go once it confirms (grace 0 forces it otherwise).
  wait_for([&] { return pods(ns).empty(); }, 60s);
}

std::string RealCluster::log(const std::string& ns, const std::string& pod, const std::string& container) {
  auto r = request("GET", "/api/v1/namespaces/" + ns + "/pods/" + pod + "/log?container=" + container);
  return r && r->status == 200 ? r->body : std::string();
}

std::string RealCluster::fracpack_metrics() {
  return local_get("127.0.0.1:" + std::to_string(fracpack_metrics_port()), "/metrics").value_or("");
}

std::string RealCluster::fracpack_ledger() { return local_get("127.0.0.1:8888", "/debug/ledger").value_or(""); }

std::string RealCluster::agent_metrics() { return local_get("127.0.0.1:18890", "/metrics").value_or(""); }

// --- bring-up ---

Status RealCluster::up() {
  if (std::string why = unavailable(); !why.empty()) return Error{why};
  for (uint16_t port : {12379, 12380, 16443, 8888, 18888, 19090, 19091, 19443, 19444, 10248, 10250, 10251, 10261, 18890}) {
    if (port_taken(port)) {
      return Error{"port " + std::to_string(port) + " is in use: a component of an earlier run left behind? (pgrep -af fp-real)"};
    }
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, kill_groups_and_exit);
  char tmpl[] = "/tmp/fp-real.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return Error{"mkdtemp failed"};
  dir_ = tmpl;
  fs::create_directories(dir_ + "/logs");
  const auto start = Clock::now();
  // The binaries, unpacked once into the build tree.
  fs::create_directories(kBinCache);
  if (sh("cd " + quoted(kBinCache) + " && sha256sum --quiet -c " + quoted(kShared + "/SHA256SUMS")) != 0) {
    for (const char* b : {"kube-apiserver", "kube-scheduler", "kubelet"}) {
      if (sh("xz -dc " + quoted(kShared + "/bin/" + b + ".xz") + " > " + quoted(kBinCache + "/" + b) + " && chmod +x " +
             quoted(kBinCache + "/" + b)) != 0) {
        return Error{std::string("cannot unpack ") + b};
      }
    }
    if (sh("cd " + quoted(kBinCache) + " && sha256sum --quiet -c " + quoted(kShared + "/SHA256SUMS")) != 0) {
      return Error{"the unpacked binaries do not match " + kShared + "/SHA256SUMS"};
    }
  }
  timings_.emplace_back("binaries", std::chrono::duration<double>(Clock::now() - start).count());
  var_lib_kubelet_existed_ = fs::exists("/var/lib/kubelet");
  for (const auto& k : kSysctls) sysctls_[k] = capture("sysctl -n " + k);
  up_ = true;
  if (Status s = start_etcd(); !s.ok()) return s;
  if (Status s = start_apiserver(); !s.ok()) return s;
  if (Status s = apply_manifests(); !s.ok()) return s;
  if (options_.fracpack) {
    if (Status s = start_fracpack(); !s.ok()) return s;
    if (options_.webhook) {
      if (Status s = set_webhook(true); !s.ok()) return s;
    }
  }
  if (Status s = start_scheduler(); !s.ok()) return s;
  if (options_.node) {
    if (Status s = start_containerd(); !s.ok()) return s;
    if (Status s = start_kubelet_process(); !s.ok()) return s;
    if (options_.fracpack) {
      if (Status s = start_mps_daemon(); !s.ok()) return s;
      if (Status s = start_agent(); !s.ok()) return s;
    }
  }
  timings_.emplace_back("total", std::chrono::duration<double>(Clock::now() - start).count());
  return Status::Ok();
}

Status RealCluster::start_etcd() {
  if (Status s = spawn("etcd", {capture("command -v etcd"), "--name", "ci", "--data-dir", dir_ + "/etcd", "--listen-client-urls",
                                "http://127.0.0.1:12379", "--advertise-client-urls", "http://127.0.0.1:12379", "--listen-peer-urls",
                                "http://127.0.0.1:12380", "--initial-advertise-peer-urls", "http://127.0.0.1:12380", "--initial-cluster",
                                "ci=http://127.0.0.1:12380", "--log-level", "warn", "--logger", "zap"});
      !s.ok()) {
    return s;
  }
  return wait_ready("etcd", [] {
    auto health = local_get("127.0.0.1:12379", "/health", 1s);
    return health && health->find("\"true\"") != std::string::npos;
  }, 30s);
}

Status RealCluster::start_apiserver() {
  if (tokens_.empty()) {
    for (const char* who : {"admin", "scheduler", "fracpack", "agent", "node", "alice"}) tokens_[who] = random_token();
    const std::string sa = "system:serviceaccounts,system:serviceaccounts:fracpack-system,system:authenticated";
    write(dir_ + "/tokens.csv",
          tokens_["admin"] + ",ci-admin,uid-admin,\"system:masters\"\n" + tokens_["scheduler"] + ",system:kube-scheduler,uid-kube-scheduler\n" +
              tokens_["fracpack"] + ",system:serviceaccount:fracpack-system:fracpack,uid-fracpack,\"" + sa + "\"\n" + tokens_["agent"] +
              ",system:serviceaccount:fracpack-system:fracpack-node-agent,uid-agent,\"" + sa + "\"\n" + tokens_["node"] + ",system:node:" +
              kNodeName + ",uid-node,\"system:nodes,system:authenticated\"\n" + tokens_["alice"] +
              ",alice,uid-alice,\"team-b-users,system:authenticated\"\n",
          0600);
    if (sh("openssl genrsa -out " + quoted(dir_ + "/sa.key") + " 2048 && openssl rsa -in " + quoted(dir_ + "/sa.key") + " -pubout -out " +
           quoted(dir_ + "/sa.pub")) != 0) {
      return Error{"openssl could not make the service-account keys"};
    }
  }
  // What reached the API server: Bindings as they are received (issue 40:
  // a Binding fracpack counted as "may have been applied" had never
  // arrived). Nothing else is audited.
  write(dir_ + "/audit-policy.yaml",
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
        "- level: Metadata\n  resources: [{group: \"\", resources: [\"pods/binding\"]}]\n"
        "- level: None\n",
        0644);
  if (Status s = spawn("kube-apiserver",
                       {kBinCache + "/kube-apiserver", "--etcd-servers=http://127.0.0.1:12379", "--bind-address=127.0.0.1",
                        "--advertise-address=127.0.0.1", "--secure-port=16443", "--insecure-port=0", "--cert-dir=" + dir_ + "/apiserver-certs",
                        "--token-auth-file=" + dir_ + "/tokens.csv", "--authorization-mode=Node,RBAC",
                        "--service-account-issuer=https://kubernetes.default.svc.cluster.local", "--service-account-key-file=" + dir_ + "/sa.pub",
                        "--service-account-signing-key-file=" + dir_ + "/sa.key", "--api-audiences=https://kubernetes.default.svc.cluster.local",
                        "--service-cluster-ip-range=10.96.0.0/24", "--disable-admission-plugins=ServiceAccount",
                        "--kubelet-preferred-address-types=Hostname", "--profiling=false",
                        "--audit-policy-file=" + dir_ + "/audit-policy.yaml", "--audit-log-path=" + dir_ + "/logs/audit.log",
                        "--audit-log-format=json", "--v=1"});
      !s.ok()) {
    return s;
  }
  Status ready = wait_ready("kube-apiserver", [&] {
    if (ca_pem_.empty()) ca_pem_ = slurp(dir_ + "/apiserver-certs/apiserver.crt");
    if (ca_pem_.empty()) return false;
    k8s::ClientConfig c;
    c.endpoint = *k8s::Endpoint::parse(kApi);
    c.tls.ca_pem = ca_pem_;
    c.request_timeout = 2s;
    k8s::ApiClient client(c);
    auto r = client.request("GET", "/readyz");
    return r && r->status == 200;
  }, 90s);
  admin_.reset();
  alice_.reset();
  if (!ready.ok()) return ready;
  // RBAC's caches warm for a few seconds after a start: wait until the
  // tokens' users are authorized.
  return wait_ready("kube-apiserver RBAC", [&] {
    auto r = request("GET", "/api/v1/namespaces/default/pods");
    return r && r->status == 200;
  }, 60s);
}

Status RealCluster::apply_manifests() {
  // The shipped objects, unchanged: the namespace, fracpack's and the
  // node agent's accounts and RBAC (the DaemonSet is inert here: no
  // controller-manager; the agent runs as a process with its identity).
  std::vector<json> objects;
  for (const char* file : {"namespace.yaml", "rbac.yaml", "node-agent.yaml", "bind-fence.yaml"}) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(kSource + "/manifests/" + file)) {
      if (!doc.IsMap()) continue;
      json o = to_json(doc);
      if (o.value("kind", "") == "DaemonSet") continue;
      objects.push_back(o);
    }
  }
  // The tenant: alice may do with pods in team-b what Kubernetes' edit
  // role allows (that role is aggregated by kube-controller-manager, which
  // does not run here: its rules for pods, written out), nothing else.
  objects.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-b"}}}});
  objects.push_back({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                     {"kind", "Role"},
                     {"metadata", {{"name", "pod-editor"}, {"namespace", "team-b"}}},
                     {"rules", json::array({{{"apiGroups", {""}},
                                             {"resources", {"pods", "pods/attach", "pods/exec"}},
                                             {"verbs", {"create", "get", "list", "watch", "update", "patch", "delete"}}},
                                            {{"apiGroups", {""}}, {"resources", {"pods/log", "pods/status"}}, {"verbs", {"get", "list", "watch"}}}})}});
  objects.push_back({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                     {"kind", "RoleBinding"},
                     {"metadata", {{"name", "alice-pod-editor"}, {"namespace", "team-b"}}},
                     {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "pod-editor"}}},
                     {"subjects", json::array({{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "alice"}}})}});
  for (const json& o : objects) {
    auto r = request("POST", collection(o), o.dump());
    if (!r) return Error{"create " + o.value("kind", "") + ": " + r.message()};
    if (r->status != 201 && r->status != 409) {
      return Error{"create " + o.value("kind", "") + " " + o["metadata"].value("name", "") + ": " + k8s::api_error_message(*r)};
    }
  }
  return Status::Ok();
}

Status RealCluster::set_webhook(bool on) {
  const std::string name = "fracpack-records";
  if (!on) {
    auto r = request("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + name);
    if (!r) return Error{r.message()};
    return Status::Ok();
  }
  // The shipped registration, pointed at fracpack on loopback (no Service
  // networking here) with the test certificate's CA.
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kSource + "/manifests/admission/webhook.yaml")) {
    if (!doc.IsMap() || doc["kind"].Scalar() != "ValidatingWebhookConfiguration") continue;
    json o = to_json(doc);
    o["metadata"].erase("annotations");
    for (auto& w : o["webhooks"]) {
      const std::string path = w["clientConfig"]["service"].value("path", "/validate");
      w["clientConfig"] = {{"url", "https://127.0.0.1:19443" + path}, {"caBundle", base64(slurp(dir_ + "/webhook.crt"))}};
    }
    webhook_json_ = o.dump();
    auto r = request("POST", collection(o), webhook_json_);
    if (!r) return Error{r.message()};
    if (r->status != 201 && r->status != 409) return Error{"register the webhook: " + k8s::api_error_message(*r)};
    return Status::Ok();
  }
  return Error{"manifests/admission/webhook.yaml has no ValidatingWebhookConfiguration"};
}

Status RealCluster::start_fracpack(int replica) {
  if (!fs::exists(dir_ + "/fracpack.yaml")) {
    // The shipped configuration (manifests/config.yaml), as is; flags give
    // this machine's paths (keys, certificates, the API server) instead of
    // the pod's mounts.
    const YAML::Node cm = YAML::LoadFile(kSource + "/manifests/config.yaml");
    std::string config = cm["data"]["fracpack.yaml"].Scalar();
    if (!options_.fence_read.empty()) {
      // (a bench comparing the fence's reads: that one key changed)
      YAML::Node c = YAML::Load(config);
      c["cluster"]["bindFenceRead"] = options_.fence_read;
      YAML::Emitter out;
      out << c;
      config = out.c_str();
    }
    write(dir_ + "/fracpack.yaml", config);
    write(dir_ + "/signing.pem", slurp(testing::test_signing_key_path()), 0600);
    write(dir_ + "/signing.pub.pem", slurp(testing::test_verify_key_path()));
    const testing::TestCertificate cert = testing::make_test_certificate("127.0.0.1");
    write(dir_ + "/webhook.crt", cert.cert_pem);
    write(dir_ + "/webhook.key", cert.key_pem, 0600);
  }
  // Replica 2 (the HA pair) on ports of its own; the registration names
  // replica 1's webhook (a Service would reach either).
  const bool first = replica == 1;
  const uint16_t metrics = first ? fracpack_metrics_port() : fracpack_metrics_port() + 1;
  std::vector<std::string> argv = {FRACPACK_BINARY, "serve", "--config", dir_ + "/fracpack.yaml", "--kubeconfig",
                                   kubeconfig("fracpack", tokens_.at("fracpack")), "--listen", first ? "127.0.0.1:8888" : "127.0.0.1:18888",
                                   "--metrics-listen", "127.0.0.1:" + std::to_string(metrics), "--signing-key", dir_ + "/signing.pem",
                                   "--verify-keys", dir_ + "/signing.pub.pem", "--admission-listen",
                                   first ? "127.0.0.1:19443" : "127.0.0.1:19444", "--admission-cert", dir_ + "/webhook.crt",
                                   "--admission-key", dir_ + "/webhook.key", "--log-format", "logfmt"};
  const std::string name = first ? "fracpack" : "fracpack-2";
  if (Status s = spawn(name, argv); !s.ok()) return s;
  return wait_ready(name, [&] { return local_get("127.0.0.1:" + std::to_string(metrics), "/readyz", 1s).has_value(); }, 60s);
}

Status RealCluster::start_scheduler(int replica, bool ha) {
  // v1.20 reads v1beta1 only; the shipped profiles and extenders as they are.
  const YAML::Node cm = YAML::LoadFile(kSource + "/manifests/config.yaml");
  const YAML::Node shipped = YAML::Load(cm["data"]["scheduler-config.yaml"].Scalar());
  const bool first = replica == 1;
  const std::string name = first ? "kube-scheduler" : "kube-scheduler-2";
  const std::string health = first ? "127.0.0.1:10251" : "127.0.0.1:10261";
  YAML::Node c;
  c["apiVersion"] = "kubescheduler.config.k8s.io/v1beta1";
  c["kind"] = "KubeSchedulerConfiguration";
  // The HA pair runs as manifests/deployment.yaml does: as fracpack's
  // ServiceAccount (the shipped RBAC: system:kube-scheduler's rights and
  // the lease in fracpack-system), with the shipped leader election.
  c["clientConnection"]["kubeconfig"] = ha ? kubeconfig(name, tokens_.at("fracpack")) : kubeconfig(name, tokens_.at("scheduler"));
  c["healthzBindAddress"] = health;
  c["metricsBindAddress"] = health;
  if (ha) {
    c["leaderElection"] = shipped["leaderElection"];
    // v1beta1's default lock in 1.20 is endpointsleases (endpoints and a
    // lease); the shipped v1 configuration's is leases, which the shipped
    // Role grants (README "Compatibility").
    c["leaderElection"]["resourceLock"] = "leases";
  } else {
    c["leaderElection"]["leaderElect"] = false;
  }
  if (options_.fracpack) {
    c["profiles"] = shipped["profiles"];
    // kube-scheduler 1.20 before kubernetes#103030 panics in DefaultPreemption
    // on a candidate without victims, which every GPU pod's dry run gives (the
    // contract's resources are ignoredByScheduler): README "Compatibility"
    // tells such clusters to disable it in fracpack's profile, as here.
    for (auto profile : c["profiles"]) profile["plugins"]["postFilter"]["disabled"].push_back(YAML::Load("{name: DefaultPreemption}"));
    c["extenders"] = shipped["extenders"];
    if (!first) {
      for (auto e : c["extenders"]) {
        std::string url = e["urlPrefix"].Scalar();
        const size_t at = url.find(":8888/");
        if (at != std::string::npos) url.replace(at, 6, ":18888/");
        e["urlPrefix"] = url;
      }
    }
  }
  YAML::Emitter out;
  out << c;
  write(dir_ + "/" + name + ".yaml", out.c_str());
  if (Status s = spawn(name, {kBinCache + "/kube-scheduler", "--config=" + dir_ + "/" + name + ".yaml", "--secure-port=0",
                              "--bind-address=127.0.0.1", "--v=2"});
      !s.ok()) {
    return s;
  }
  return wait_ready(name, [health] { return local_get(health, "/healthz", 1s).has_value(); }, 30s);
}

Status RealCluster::start_containerd() {
  fs::create_directories(dir_ + "/cni/net.d");
  fs::create_directories(dir_ + "/containerd");
  write(dir_ + "/cni/net.d/10-lo.conflist", R"({"cniVersion": "0.4.0", "name": "lo-only", "plugins": [{"type": "loopback"}]})");
  write(dir_ + "/containerd/config.toml", "version = 2\nroot = \"" + dir_ + "/containerd/root\"\nstate = \"" + dir_ +
                                              "/containerd/state\"\n"
                                              "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", \"io.containerd.snapshotter.v1.btrfs\", "
                                              "\"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.snapshotter.v1.zfs\", "
                                              "\"io.containerd.tracing.processor.v1.otlp\", \"io.containerd.internal.v1.tracing\"]\n"
                                              "[grpc]\n  address = \"" + dir_ + "/containerd.sock\"\n[ttrpc]\n  address = \"" + dir_ +
                                              "/containerd.sock.ttrpc\"\n"
                                              "[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"k8s.gcr.io/pause:3.2\"\n"
                                              "  stream_server_address = \"127.0.0.1\"\n  stream_server_port = \"0\"\n  disable_apparmor = true\n"
                                              "  restrict_oom_score_adj = true\n  tolerate_missing_hugetlb_controller = true\n"
                                              "  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n    snapshotter = \"overlayfs\"\n"
                                              "    default_runtime_name = \"runc\"\n"
                                              "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
                                              "      runtime_type = \"io.containerd.runc.v2\"\n"
                                              "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
                                              "        SystemdCgroup = false\n"
                                              "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n    bin_dir = \"/usr/lib/cni\"\n    conf_dir = \"" +
                                              dir_ + "/cni/net.d\"\n    max_conf_num = 1\n");
  if (Status s = spawn("containerd", {capture("command -v containerd"), "--config", dir_ + "/containerd/config.toml"}); !s.ok()) return s;
  const std::string ctr = "ctr -a " + quoted(dir_ + "/containerd.sock");
  if (Status s = wait_ready("containerd", [&] { return sh(ctr + " version") == 0; }, 30s); !s.ok()) return s;
  for (const char* image : {"pause-3.2", "busybox-1"}) {
    if (sh(ctr + " -n k8s.io images import " + quoted(kShared + "/images/" + image + ".tar"), dir_ + "/logs/ctr.log") != 0) {
      return Error{std::string("cannot import ") + image + ": " + slurp(dir_ + "/logs/ctr.log")};
    }
  }
  return Status::Ok();
}

Status RealCluster::start_kubelet_process() {
  if (!fs::exists(dir_ + "/kubelet.yaml")) {
    write(dir_ + "/kubelet.yaml",
          "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\naddress: 127.0.0.1\nport: 10250\nreadOnlyPort: 0\n"
          "healthzBindAddress: 127.0.0.1\nhealthzPort: 10248\nauthentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\n"
          "authorization: {mode: AlwaysAllow}\ncgroupDriver: cgroupfs\ncgroupsPerQOS: true\nenforceNodeAllocatable: [\"pods\"]\n"
          "failSwapOn: false\nmakeIPTablesUtilChains: false\n"
          "evictionHard: {memory.available: \"1Mi\", nodefs.available: \"1%\", nodefs.inodesFree: \"1%\", imagefs.available: \"1%\"}\n"
          "imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\nsyncFrequency: 10s\nnodeStatusUpdateFrequency: 5s\n");
  }
  if (Status s = spawn("kubelet", {kBinCache + "/kubelet", "--config=" + dir_ + "/kubelet.yaml", "--kubeconfig=" + kubeconfig("kubelet", tokens_.at("node")),
                                   "--container-runtime=remote", "--container-runtime-endpoint=unix://" + dir_ + "/containerd.sock",
                                   std::string("--hostname-override=") + kNodeName, "--root-dir=" + dir_ + "/kubelet",
                                   "--cert-dir=" + dir_ + "/kubelet/pki", "--volume-plugin-dir=" + dir_ + "/kubelet/volume-plugins",
                                   "--node-labels=nvidia.com/gpu.present=true", "--v=2"});
      !s.ok()) {
    return s;
  }
  auto ready = [&] {
    auto n = get(std::string("/api/v1/nodes/") + kNodeName);
    if (!n) return false;
    for (const auto& c : (*n)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return true;
    }
    return false;
  };
  if (Status s = wait_ready("kubelet: Node Ready", ready, 120s); !s.ok()) return s;
  // The not-ready taint only the (absent) node-lifecycle controller lifts.
  auto r = request("PATCH", std::string("/api/v1/nodes/") + kNodeName, R"({"spec":{"taints":null}})", As::kAdmin,
                   "application/merge-patch+json");
  if (!r || r->status != 200) return Error{"cannot untaint the node: " + (r ? k8s::api_error_message(*r) : r.message())};
  return Status::Ok();
}

Status RealCluster::start_mps_daemon() {
  write(dir_ + "/nvml.conf", nvml_config(options_.cards));
  if (!fs::exists(dir_ + "/nvml.events")) write(dir_ + "/nvml.events", "");
  const std::string status_file = mps_dir() + "/status";
  const std::string before = fs::exists(status_file) ? slurp(status_file) : "";
  if (Status s = spawn("mps-control-daemon",
                       {FRACPACK_BINARY, "mps-control-daemon", "--config", dir_ + "/fracpack.yaml", "--mps-control", FRACPACK_FAKE_MPS_CONTROL,
                        "--mps-dir", mps_dir(), "--nvml-library", FRACPACK_FAKE_NVML, "--log-format", "logfmt"},
                       {"FAKE_NVML_CONFIG=" + dir_ + "/nvml.conf", "FAKE_NVML_EVENTS=" + dir_ + "/nvml.events",
                        "FAKE_NVML_COMPUTE_MODES=" + dir_ + "/compute-modes", "FAKE_MPS_LOG=" + dir_ + "/logs/fake-mps.log"});
      !s.ok()) {
    return s;
  }
  return wait_ready("mps control daemon: ready", [&] {
    if (!fs::exists(status_file)) return false;
    const std::string now = slurp(status_file);
    return now != before && now.find("\"state\":\"ready\"") != std::string::npos;
  }, 30s);
}

void RealCluster::stop_mps_daemon(bool hard) { stop("mps-control-daemon", hard); }

Status RealCluster::start_agent(bool offered) {
  const size_t since = component_log("node-agent").size();  // (the logs are appended to)
  const size_t kubelet_since = component_log("kubelet").size();
  write(dir_ + "/nvml.conf", nvml_config(options_.cards));
  if (!fs::exists(dir_ + "/nvml.events")) write(dir_ + "/nvml.events", "");
  std::vector<std::string> argv = {FRACPACK_BINARY, "node-agent", "--config", dir_ + "/fracpack.yaml", "--kubeconfig",
                                   kubeconfig("node-agent", tokens_.at("agent")), "--node-name", kNodeName, "--device-plugin-dir",
                                   "/var/lib/kubelet/device-plugins", "--nvml-library", FRACPACK_FAKE_NVML, "--state-file", dir_ + "/agent.state",
                                   "--mps-dir", mps_dir(), "--listen", "127.0.0.1:18890", "--verify-keys", dir_ + "/signing.pub.pem",
                                   "--log-format", "logfmt"};
  if (!agent_isolation_.empty()) argv.insert(argv.end(), {"--isolation", agent_isolation_});
  if (Status s = spawn("node-agent", argv,
                       {"FAKE_NVML_CONFIG=" + dir_ + "/nvml.conf", "FAKE_NVML_EVENTS=" + dir_ + "/nvml.events",
                        "FAKE_NVML_COMPUTE_MODES=" + dir_ + "/compute-modes"});
      !s.ok()) {
    return s;
  }
  // Ready: registered with kubelet, its pods listed, its cards published
  // and offered (kubelet counts the resource). Without kubelet: its cards
  // published, as not registered.
  if (!offered) {
    return wait_ready("node agent: cards published unregistered", [&] {
      const std::string log = component_log("node-agent");
      return log.size() > since && log.find("devices published", since) != std::string::npos;
    }, 60s);
  }
  // A restart finds the node's annotation and allocatable as the last agent
  // left them: wait for kubelet's own word that this one is registered. (A
  // pod that kubelet 1.20 began to admit while the plugin's endpoint was
  // being replaced hung in kubelet, never calling Allocate: see README
  // "Compatibility". An operator's rollout has the same window.)
  return wait_ready("node agent: cards offered", [&] {
    const std::string kubelet = component_log("kubelet");
    if (kubelet.size() <= kubelet_since || kubelet.find("State pushed for device plugin", kubelet_since) == std::string::npos) return false;
    auto n = get(std::string("/api/v1/nodes/") + kNodeName);
    if (!n) return false;
    const std::string devices = (*n)["metadata"].value("annotations", json::object()).value("fracpack.io/gpu-devices", "");
    const std::string allocatable = (*n)["status"].value("allocatable", json::object()).value("fracpack.io/gpu", "0");
    return !devices.empty() && devices.find("\"registered\":false") == std::string::npos && allocatable != "0";
  }, 60s);
}

Status RealCluster::restart_fracpack(bool kill_hard) {
  stop("fracpack", kill_hard);
  return start_fracpack();
}

Status RealCluster::start_ha_pair() {
  stop("kube-scheduler");
  if (Status s = start_scheduler(1, /*ha=*/true); !s.ok()) return s;
  if (!wait_for([&] { return leader() == 1; }, 30s)) return Error{"replica 1 did not take kube-scheduler's lease"};
  if (Status s = start_fracpack(2); !s.ok()) return s;
  return start_scheduler(2, /*ha=*/true);
}

int RealCluster::leader() {
  // Each kube-scheduler says when it has taken the lease; the Lease object
  // names a holder that is hostname_uuid, the same host for both.
  for (int i : {1, 2}) {
    const std::string name = i == 1 ? "kube-scheduler" : "kube-scheduler-2";
    if (procs_.count(name) && procs_[name].pid > 0 && component_log(name).find("successfully acquired lease") != std::string::npos) return i;
  }
  return 0;
}

void RealCluster::kill_replica(int i) {
  stop(i == 1 ? "kube-scheduler" : "kube-scheduler-2", /*hard=*/true);
  stop(i == 1 ? "fracpack" : "fracpack-2", /*hard=*/true);
}

Status RealCluster::restart_apiserver() {
  stop("kube-apiserver");
  return start_apiserver();
}

Status RealCluster::stop_apiserver() {
  stop("kube-apiserver");
  return Status::Ok();
}

Status RealCluster::start_apiserver_again() { return start_apiserver(); }

k8s::ClientConfig RealCluster::admin_client_config() const {
  k8s::ClientConfig cc;
  cc.endpoint = *k8s::Endpoint::parse(kApi);
  cc.tls.ca_pem = ca_pem_;
  cc.token = k8s::TokenSource::fixed(tokens_.at("admin"));
  cc.request_timeout = 20s;
  cc.connect_timeout = 2s;
  return cc;
}

std::string RealCluster::audit_log() const { return slurp(dir_ + "/logs/audit.log"); }

Status RealCluster::stop_kubelet() {
  stop("kubelet");
  return Status::Ok();
}

Status RealCluster::start_kubelet() { return start_kubelet_process(); }

Status RealCluster::restart_kubelet() {
  stop("kubelet");
  return start_kubelet_process();
}

Status RealCluster::restart_agent(bool offered) {
  stop("node-agent");
  return start_agent(offered);
}

Status RealCluster::compact_etcd() {
  const std::string rev = capture("ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:12379 endpoint status -w json");
  try {
    const json j = json::parse(rev);
    const long long revision = j.at(0).at("Status").at("header").at("revision").get<long long>();
    if (sh("ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:12379 compact " + std::to_string(revision), dir_ + "/logs/etcdctl.log") != 0) {
      return Error{"etcdctl compact failed: " + slurp(dir_ + "/logs/etcdctl.log")};
    }
  } catch (const std::exception& e) {
    return Error{std::string("cannot read etcd's revision: ") + e.what() + " (" + rev + ")"};
  }
  return Status::Ok();
}

// --- tear-down ---

void RealCluster::clean_node_side() {
  if (procs_.count("containerd") && procs_["containerd"].pid > 0) {
    const std::string ctr = "ctr -a " + quoted(dir_ + "/containerd.sock") + " -n k8s.io";
    sh("for t in $(" + ctr + " tasks ls -q); do " + ctr + " tasks kill -s SIGKILL $t; " + ctr + " tasks delete -f $t; done");
    sh(ctr + " containers delete $(" + ctr + " containers ls -q)");
  }
  stop("containerd");
  sh("for p in $(pgrep -f containerd-shim-runc-v2); do tr '\\0' ' ' </proc/$p/cmdline | grep -qF " + quoted(dir_ + "/containerd.sock") +
     " && kill -KILL $p; done");
  sh("grep ' " + dir_ + "/' /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l");
}

void RealCluster::down() {
  if (!up_) return;
  up_ = false;
  // Pods go through kubelet while it runs.
  if (procs_.count("kubelet") && procs_["kubelet"].pid > 0 && procs_["kube-apiserver"].pid > 0) {
    for (const char* ns : {"default", "team-b"}) delete_pods(ns);
  }
  for (const char* name : {"node-agent", "mps-control-daemon", "kube-scheduler", "kube-scheduler-2", "fracpack", "fracpack-2", "kubelet"}) stop(name);
  if (!options_.node) {
    stop("kube-apiserver", false, 15s);
    stop("etcd");
    if (std::getenv("FRACPACK_REAL_KEEP") == nullptr) fs::remove_all(dir_);
    return;
  }
  clean_node_side();
  stop("kube-apiserver", false, 15s);
  stop("etcd");
  for (const auto& [k, v] : sysctls_) {
    if (!v.empty()) sh("sysctl -q -w " + k + "=" + v);
  }
  sh("find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} \\;");
  if (var_lib_kubelet_existed_) {
    sh("rm -rf /var/lib/kubelet/device-plugins/*");
  } else {
    sh("rm -rf /var/lib/kubelet");
  }
  sh("rm -rf /var/log/pods/default_* /var/log/pods/team-b_* /var/log/containers/*_default_* /var/log/containers/*_team-b_*");
  sh("find /run/containerd -depth -type d -empty -delete");
  if (std::getenv("FRACPACK_REAL_KEEP") == nullptr && capture("grep -c ' " + dir_ + "' /proc/mounts") == "0") {
    // The logs are kept beside the build for reading after a failure.
    sh("rm -rf " + quoted(kBinCache + "/last-logs") + " && cp -r " + quoted(dir_ + "/logs") + " " + quoted(kBinCache + "/last-logs"));
    fs::remove_all(dir_);
  }
}

}  // namespace fracpack::real
