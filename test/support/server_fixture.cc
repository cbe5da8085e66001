#include "test/support/server_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <regex>
#include <thread>

#include "test/support/record_keys.h"
#include "test/support/testlib.h"

extern char** environ;

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "k8s/snapshot.h"
#include "server/log.h"

namespace fracpack::testing {

std::vector<std::string> small_cluster() {
  nlohmann::json a100 = nlohmann::json::parse(node_object("n-a100", 1, 81920));
  a100["metadata"]["labels"]["nvidia.com/gpu.product"] = "A100-SXM4-80GB";
  return {node_object("n1", 2), node_object("n2", 2), a100.dump()};
}

using json = nlohmann::json;

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "fracpack-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  const std::string p = path_ + "/" + name;
  const std::string tmp = p + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
  }
  std::filesystem::rename(tmp, p);  // atomic, as a mounted Secret is swapped
  return p;
}

std::string gpu_pod(const std::string& name, const std::string& uid, int cores, int64_t memory_mib, int cards,
                    std::map<std::string, std::string> annotations, int priority, const std::string& node) {
  json limits = json::object();
  if (cores == 0 && memory_mib == 0) {
    limits["fracpack.io/gpu"] = std::to_string(cards);
  } else {
    if (cards != 1) limits["fracpack.io/gpu"] = std::to_string(cards);
    if (cores > 0) limits["fracpack.io/gpu-cores"] = std::to_string(cores);
    if (memory_mib > 0) limits["fracpack.io/gpu-memory"] = std::to_string(memory_mib);
  }
  limits["cpu"] = "1";
  json meta = {{"name", name}, {"namespace", "default"}, {"uid", uid}, {"creationTimestamp", "2026-01-01T00:00:00Z"}};
  if (!annotations.empty()) meta["annotations"] = annotations;
  json spec = {{"schedulerName", "fracpack"},
               {"priority", priority},
               {"containers", {{{"name", "main"}, {"image", "busybox"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}};
  if (!node.empty()) spec["nodeName"] = node;
  return json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}}
      .dump();
}

std::string resource_quota(const std::string& ns, const std::string& name, const std::map<std::string, std::string>& hard) {
  return json{{"apiVersion", "v1"},
              {"kind", "ResourceQuota"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-quota-" + ns + "-" + name}}},
              {"spec", {{"hard", hard}}}}
      .dump();
}

std::string in_namespace(const std::string& pod_json, const std::string& ns) {
  json p = json::parse(pod_json);
  p["metadata"]["namespace"] = ns;
  return p.dump();
}

std::string cpu_pod(const std::string& name, const std::string& uid) {
  json limits = {{"cpu", "1"}};
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", uid}}},
              {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"limits", limits}, {"requests", limits}}}}}}}},
              {"status", {{"phase", "Pending"}}}}
      .dump();
}

std::optional<DeletedPod> delete_random_pod(FakeApiServer& api, std::mt19937_64& rng) {
  std::vector<json> bound, pending;
  for (const auto& text : api.list("pods")) {
    json p = json::parse(text);
    if (p["metadata"].value("namespace", "") == "fracpack-system") continue;  // the installation's (the bind fence's marker)
    (p["spec"].contains("nodeName") ? bound : pending).push_back(std::move(p));
  }
  const bool pick_bound = !bound.empty() && (pending.empty() || std::uniform_int_distribution<int>(0, 3)(rng) != 0);
  const std::vector<json>& from = pick_bound ? bound : pending;
  if (from.empty()) return std::nullopt;
  const json& p = from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  const std::string ns = p["metadata"]["namespace"], name = p["metadata"]["name"];
  api.remove("pods", ns, name);
  return DeletedPod{ns + "/" + name, pick_bound};
}

std::string snapshot_pod(const std::string& snapshot_path, const std::string& ns, const std::string& name) {
  auto text = read_file(snapshot_path);
  if (!text) return "";
  for (const auto& item : json::parse(*text).value("items", json::array())) {
    const json meta = item.value("metadata", json::object());
    if (item.value("kind", "") == "Pod" && meta.value("namespace", "") == ns && meta.value("name", "") == name) return item.dump();
  }
  return "";
}

config::Config test_config() {
  server::configure_log(server::LogLevel::kWarn, server::LogFormat::kLogfmt);  // no line per placement in test output
  config::Config c;
  c.listen = "127.0.0.1:0";
  c.io_threads = 2;
  c.limits.header_timeout = std::chrono::milliseconds(1000);
  c.limits.body_timeout = std::chrono::milliseconds(1000);
  c.limits.idle_timeout = std::chrono::milliseconds(5000);
  c.cluster.reconcile_interval = std::chrono::milliseconds(500);
  c.cluster.events = false;
  c.workload.config_map = "";
  c.security.signing_key = test_signing_key_path();
  return c;
}

std::unique_ptr<SchedulerDriver> driver_for(const std::string& url) {
  ExtenderConfig e;
  e.url_prefix = url + "/";
  auto d = SchedulerDriver::create({e});
  if (!d) throw std::runtime_error(d.message());
  return std::move(*d);
}

Standalone::Standalone(const std::vector<std::string>& objects, config::Config c) {
  c.cluster.snapshot = dir.write("snapshot.json", k8s::list_json(objects));
  server::DaemonOptions o;
  o.config = c;
  daemon_ = std::make_unique<server::Daemon>(o);
  auto s = daemon_->start();
  if (!s.ok()) throw std::runtime_error("daemon: " + s.message());
  driver_ = driver_for(url());
}

Standalone::~Standalone() { daemon_->drain(std::chrono::milliseconds(1000)); }

std::string Standalone::url() const {
  return std::string(daemon_->options().config.tls.cert_file.empty() ? "http" : "https") + "://127.0.0.1:" +
         std::to_string(daemon_->port());
}

std::map<std::string, std::vector<LedgerCard>> ledger_cards(server::Daemon& d) {
  return d.state().read([](const scheduling::Ledger& l) {
    std::map<std::string, std::vector<LedgerCard>> out;
    for (const auto& [name, n] : l.nodes()) {
      for (size_t i = 0; i < n.cards().size(); ++i) {
        out[name].push_back({n.cards()[i].uuid, n.cards()[i].index, n.use()[i].sharers, n.use()[i].memory_mib, n.use()[i].cores});
      }
    }
    return out;
  });
}

std::vector<std::vector<std::string>> ledger_uuids(server::Daemon& d, const std::string& uid) {
  return d.state().read([&](const scheduling::Ledger& l) {
    std::vector<std::vector<std::string>> out;
    const scheduling::PodRecord* p = l.pod(uid);
    if (p == nullptr) return out;
    for (const auto& c : p->allocation.containers) {
      std::vector<std::string> u;
      for (const auto& s : c.cards) u.push_back(s.uuid.empty() ? std::to_string(s.index) : s.uuid);
      out.push_back(u);
    }
    return out;
  });
}

Connected::Connected(config::Config c) : api(std::make_unique<FakeApiServer>()), config(std::move(c)) {
  api->create("pods", bind_fence_marker_pod());
}

Connected::~Connected() {
  if (daemon_) daemon_->drain(std::chrono::milliseconds(1000));
}

void Connected::start() {
  server::DaemonOptions o;
  o.config = config;
  o.client = client_for(*api);
  o.tune_informer = [](k8s::InformerOptions& io) {
    io.backoff_initial = std::chrono::milliseconds(20);
    io.backoff_max = std::chrono::milliseconds(200);
  };
  daemon_ = std::make_unique<server::Daemon>(o);
  auto s = daemon_->start();
  if (!s.ok()) throw std::runtime_error("daemon: " + s.message());
  if (!daemon_->wait_serving(std::chrono::seconds(20))) throw std::runtime_error("daemon did not start serving");
  driver_ = driver_for(url());
}

std::string Connected::url() const { return "http://127.0.0.1:" + std::to_string(daemon_->port()); }

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

RawExchange raw_exchange(uint16_t port, const std::vector<std::string>& pieces, std::chrono::milliseconds pause,
                         std::chrono::milliseconds timeout, bool until_close) {
  RawExchange out;
  const auto started = std::chrono::steady_clock::now();
  const int fd = connect_loopback(port);
  if (fd < 0) return out;
  auto read_some = [&](int wait_ms) {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, wait_ms) > 0) {
      char buf[65536];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        out.closed_by_server = true;
        return;
      }
      out.response.append(buf, static_cast<size_t>(n));
      wait_ms = 0;
    }
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0 && pause.count() > 0) {
      read_some(static_cast<int>(pause.count()));
      if (out.closed_by_server) break;
    }
    const std::string& piece = pieces[i];
    size_t sent = 0;
    while (sent < piece.size()) {
      const ssize_t n = ::send(fd, piece.data() + sent, piece.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    if (sent < piece.size()) break;
  }
  const auto end = started + timeout;
  while (!out.closed_by_server && std::chrono::steady_clock::now() < end) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      out.closed_by_server = true;
      break;
    }
    out.response.append(buf, static_cast<size_t>(n));
    // A complete response with Content-Length is enough.
    const size_t head_end = out.response.find("\r\n\r\n");
    if (!until_close && head_end != std::string::npos) {
      const size_t cl = out.response.find("Content-Length: ");
      if (cl != std::string::npos && cl < head_end) {
        const size_t len = std::stoul(out.response.substr(cl + 16));
        if (out.response.size() >= head_end + 4 + len) break;
      }
    }
  }
  ::close(fd);
  out.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  return out;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

std::string body_of(const std::string& response) {
  const size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

k8s::HttpResponse http_get(const std::string& url, const std::string& path, k8s::TlsOptions tls) {
  k8s::ClientConfig c;
  c.endpoint = *k8s::Endpoint::parse(url);
  c.tls = std::move(tls);
  c.request_timeout = std::chrono::seconds(5);
  k8s::ApiClient client(c);
  auto r = client.request("GET", path);
  if (!r) return k8s::HttpResponse{0, r.message(), "", ""};
  return *r;
}

k8s::HttpResponse http_post(const std::string& url, const std::string& path, const std::string& body, k8s::TlsOptions tls) {
  k8s::ClientConfig c;
  c.endpoint = *k8s::Endpoint::parse(url);
  c.tls = std::move(tls);
  c.request_timeout = std::chrono::seconds(10);
  k8s::ApiClient client(c);
  auto r = client.request("POST", path, body);
  if (!r) return k8s::HttpResponse{0, r.message(), "", ""};
  return *r;
}

uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

double metric_sum(const std::string& url, const std::string& prefix) {
  const auto r = http_get(url, "/metrics");
  if (r.status != 200) return 0;
  double sum = 0;
  size_t start = 0;
  while (start < r.body.size()) {
    size_t end = r.body.find('\n', start);
    if (end == std::string::npos) end = r.body.size();
    const std::string_view line(r.body.data() + start, end - start);
    if (line.rfind(prefix, 0) == 0 && (line.size() == prefix.size() || prefix.back() == '{' || line[prefix.size()] == ' ' ||
                                       line[prefix.size()] == '{')) {
      const size_t space = line.rfind(' ');
      if (space != std::string_view::npos) sum += std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
    }
    start = end + 1;
  }
  return sum;
}

static std::string millis(std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; }

// Each line indented by two spaces.
static std::string indented(const std::string& lines) {
  std::string out;
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = lines.find('\n', start);
    out += "  " + lines.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

namespace {

// The test signing key, unless another build runs under FRACPACK_TEST_BINARY
// (a before/after comparison with a fracpack older than record signing).
std::string security_keys() {
  const char* other = std::getenv("FRACPACK_TEST_BINARY");
  if (other != nullptr && *other != '\0') return "";
  return "security:\n  signingKey: \"" + test_signing_key_path() + "\"\n";
}

}  // namespace

std::string process_config(const TempDir& dir, const std::string& api_url, uint16_t port, std::chrono::milliseconds assume_ttl,
                           std::chrono::milliseconds reconcile_interval, const std::string& cluster_keys,
                           const std::string& top_keys) {
  dir.write("kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + api_url +
                              "\"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                              "current-context: x\n");
  return dir.write("fracpack-" + std::to_string(port) + ".yaml",
                   "listen: \"127.0.0.1:" + std::to_string(port) + "\"\n" + "cluster:\n  kubeconfig: \"" + dir.path() +
                       "/kubeconfig\"\n  assumeTtl: \"" + millis(assume_ttl) + "\"\n  reconcileInterval: \"" +
                       millis(reconcile_interval) + "\"\n  requestTimeout: \"2s\"\n" + indented(cluster_keys) +
                       "workload:\n  configMap: \"\"\nlog:\n  level: info\n" + security_keys() + top_keys);
}

FracpackProcess::FracpackProcess(std::vector<std::string> args) {
  static std::atomic<int> serial{0};
  log_path_ = "/tmp/fracpack-process-" + std::to_string(getpid()) + "-" + std::to_string(serial++) + ".log";
  // FRACPACK_TEST_BINARY runs another build of fracpack under the same
  // harness (a before/after comparison of a bench).
  const char* other = std::getenv("FRACPACK_TEST_BINARY");
  args.insert(args.begin(), other != nullptr && *other != '\0' ? other : FRACPACK_BINARY);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0) pid_ = pid;
  posix_spawn_file_actions_destroy(&fa);
}

FracpackProcess::~FracpackProcess() {
  stop();
  unlink(log_path_.c_str());
}

std::string FracpackProcess::log() const { return read_file(log_path_).value_or(""); }

std::string FracpackProcess::wait_for(const std::string& pattern, std::chrono::milliseconds timeout) const {
  const std::regex re(pattern);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
    if (pid_ > 0) {  // ended already? (WNOWAIT: running() still reaps it)
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

bool FracpackProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == 0) return true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  return false;
}

int FracpackProcess::stop(int sig) {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

}  // namespace fracpack::testing
