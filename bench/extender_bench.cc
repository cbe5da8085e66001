// Extender latency and throughput over loopback keep-alive connections, as
// kube-scheduler calls fracpack:
//
//   1. filter and prioritize at 1 000 and 5 000 nodes x 8 cards, names mode
//      (nodeCacheCapable: true; goal p99 <= 1 ms at 5 000) and full Node
//      objects (realistic ~8 KB nodes; goal p99 <= 50 ms at 5 000), from
//      several concurrent clients; the cluster is a third full, with shares
//      of every shape, so verdicts differ node to node;
//   2. end to end against the test API server: pods created there, fracpack
//      synced from it, and a scheduler loop (filter -> prioritize -> bind,
//      the binds asynchronous as kube-scheduler's) placing them (goal >= 1 000
//      pods/s).
//
// Everything runs in this process (fracpack's io threads, the clients, the
// test API server) on the machine's cores; the clients are lean (pre-built
// requests, no JSON DOM) so the figures are mostly fracpack's.
//
//   3. with --slow-api: binds against a test API server that answers 20 % of
//      requests 300 ms late and loses 2 % of binding replies, 3 000 pods on
//      1 213 nodes, one bind at a time and pipelined as kube-scheduler binds
//      (goal: bind p99 <= 1 s, none answered past its 5 s timeout);
//      --bind-workers N sets fracpack's bindWorkers (4 was the fixed pool).
//
//   build/bench/extender_bench [--seconds 3] [--clients 4] [--nodes 1000,5000] [--pods 5000] [--skip-full]
//                              [--slow-api | --only-slow-api] [--bind-workers N] [--records signed|unsigned]
//                              [--quota on|off] [--isolation-field off|none|mps]
//
// --isolation-field (issue 38): "none" and "mps" give each node its cards
// in the node agent's fracpack.io/gpu-devices annotation (8 cards, as the
// labels say), "mps" with "isolation":"mps" on each card and
// placement.unenforcedShares: refuse, so filter checks each share's card
// for enforcement; "off" (the default) keeps the labels alone, as before.
//
// --records unsigned turns record signing off (security.records), for its
// cost: the bound pods' records are signed either way.
//
// --quota on adds a ResourceQuota to namespace ml (every pod's) with all
// three fracpack keys, in the snapshot and in the test API server, so filter
// and bind check the namespace's GPU quota (issue 32) on every pod; its
// limits are far past what any cluster here holds, so no pod is refused and
// on and off differ only in the checking. With limits that far (every
// card's share admitted on the cluster's largest card) filter judges the
// quota once per pod and keeps its kept replies (scheduling/quota_gate.h); the
// binds in namespace ml wait for the pod watch to deliver the fence's marker
// write (the quota's fence) instead of reading the namespace's pods, as
// manifests/bind-fence.yaml's marker pod lets them. Off (the default): no
// quota, nothing checked.
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "k8s/contract/fracpack.h"
#include "common/json/write.h"
#include "k8s/snapshot.h"
#include "server/daemon.h"
#include "server/http_server.h"
#include "server/log.h"
#include "test/support/fake_apiserver.h"
#include "test/support/record_keys.h"
#include "test/support/server_fixture.h"

namespace {

using namespace fracpack;
using Clock = std::chrono::steady_clock;

std::string node_name(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "gpu-node-%05d", i);
  return buf;
}

// A Node as kube-scheduler's cache holds it: labels, annotations, images,
// conditions, addresses (~8 KB).
std::string g_isolation_field = "off";

// The node agent's annotation for the node's 8 cards, JSON-escaped as a value.
std::string devices_annotation() {
  std::vector<scheduling::Card> cards(8);
  for (int k = 0; k < 8; ++k) {
    cards[k].index = k;
    cards[k].uuid = "GPU-" + std::to_string(k) + "0000000-0000-0000-0000-000000000000";
    cards[k].model = "A100-SXM4-80GB";
    cards[k].memory_mib = 81920;
    cards[k].numa = k / 4;
    cards[k].max_sharers = 32;
    if (g_isolation_field == "mps") cards[k].isolation = scheduling::CardIsolation::kMps;
  }
  std::string out;
  append_json_string(out, k8s::format_devices(cards));
  return out;
}

std::string node_json(int i) {
  const std::string name = node_name(i);
  std::string images;
  for (int k = 0; k < 24; ++k) {
    images += std::string(k ? "," : "") + R"({"names":["registry.example.com/ml/team-)" + std::to_string(k) +
              R"(/trainer@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","registry.example.com/ml/team-)" +
              std::to_string(k) + R"(/trainer:v1.)" + std::to_string(k) + R"("],"sizeBytes":)" + std::to_string(1000000000 + k) + "}";
  }
  std::string conditions;
  const char* types[] = {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable"};
  for (int k = 0; k < 5; ++k) {
    conditions += std::string(k ? "," : "") + R"({"type":")" + types[k] + R"(","status":")" + (k == 3 ? "True" : "False") +
                  R"(","lastHeartbeatTime":"2026-11-20T10:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"KubeletHasSufficient","message":"kubelet has sufficient resources available"})";
  }
  return R"({"metadata":{"name":")" + name + R"(","uid":"node-uid-)" + std::to_string(i) +
         R"(","resourceVersion":"12345","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"beta.kubernetes.io/arch":"amd64","beta.kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","kubernetes.io/hostname":")" +
         name + R"(","kubernetes.io/os":"linux","node.kubernetes.io/instance-type":"p4d.24xlarge","topology.kubernetes.io/region":"region-1","topology.kubernetes.io/zone":"zone-a","nvidia.com/cuda.driver.major":"535","nvidia.com/gpu.compute.major":"8","nvidia.com/gpu.count":"8","nvidia.com/gpu.family":"ampere","nvidia.com/gpu.machine":"p4d.24xlarge","nvidia.com/gpu.memory":"81920","nvidia.com/gpu.product":"A100-SXM4-80GB","nvidia.com/gpu.replicas":"1","nvidia.com/mig.capable":"true"},"annotations":{)" + (g_isolation_field == "off" ? std::string() : R"("fracpack.io/gpu-devices":)" + devices_annotation() + ",") + R"("node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true","csi.volume.kubernetes.io/nodeid":"{\"ebs.csi.aws.com\":\"i-0123456789abcdef0\"}"}},"spec":{"podCIDR":"10.)" +
         std::to_string(i / 250) + "." + std::to_string(i % 250) +
         R"(.0/24","providerID":"aws:///zone-a/i-0123456789abcdef0"},"status":{"capacity":{"cpu":"96","ephemeral-storage":"8000000000Ki","hugepages-1Gi":"0","memory":"1176Gi","nvidia.com/gpu":"8","pods":"250"},"allocatable":{"cpu":"95","ephemeral-storage":"7372800000Ki","hugepages-1Gi":"0","memory":"1160Gi","nvidia.com/gpu":"8","pods":"250"},"conditions":[)" +
         conditions + R"(],"addresses":[{"type":"InternalIP","address":"10.1.)" + std::to_string(i / 250) + "." + std::to_string(i % 250) +
         R"("},{"type":"Hostname","address":")" + name +
         R"("}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"machineID":"0123456789abcdef","systemUUID":"ec2-0123","bootID":"b00t","kernelVersion":"5.15.0-1051-aws","osImage":"Ubuntu 22.04.3 LTS","containerRuntimeVersion":"containerd://1.7.2","kubeletVersion":"v1.28.3","kubeProxyVersion":"v1.28.3","operatingSystem":"linux","architecture":"amd64"},"images":[)" +
         images + "]}}";
}

struct Shape {
  int cores;          // percent; 0 with memory 0: whole cards
  int64_t memory_mib;
  int cards;
};
const Shape kShapes[] = {{25, 10240, 1}, {50, 20480, 1}, {0, 0, 1}, {0, 0, 2}, {10, 4096, 1}, {100, 0, 4}};

std::string pod_json(const std::string& name, const std::string& uid, const Shape& s, const std::string& node = "",
                     const std::string& allocation = "") {
  std::string limits = R"("cpu":"2","memory":"8Gi")";
  if (s.cores == 0 && s.memory_mib == 0) {
    limits += R"(,"fracpack.io/gpu":")" + std::to_string(s.cards) + "\"";
  } else {
    if (s.cards != 1) limits += R"(,"fracpack.io/gpu":")" + std::to_string(s.cards) + "\"";
    limits += R"(,"fracpack.io/gpu-cores":")" + std::to_string(s.cores) + "\"";
    if (s.memory_mib > 0) limits += R"(,"fracpack.io/gpu-memory":")" + std::to_string(s.memory_mib) + "\"";
  }
  std::string ann;
  if (!allocation.empty()) {
    // The record as fracpack's extender writes it: signed (the test key).
    std::string esc, sig;
    append_json_string(esc, allocation);
    const k8s::StringMap record = {{"fracpack.io/allocation", allocation}};
    append_json_string(sig, fracpack::testing::test_signer()->sign(
                                k8s::record_message(uid, node, {"fracpack.io/allocation", "fracpack.io/gpu-indices"}, record)));
    ann = R"(,"annotations":{"fracpack.io/allocation":)" + esc + R"(,"fracpack.io/allocation-signature":)" + sig + "}";
  }
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":"ml","uid":")" + uid +
         R"(","creationTimestamp":"2026-11-20T10:00:00Z")" + ann +
         R"(},"spec":{"schedulerName":"fracpack",)" + (node.empty() ? "" : R"("nodeName":")" + node + "\",") +
         R"("containers":[{"name":"main","image":"registry.example.com/ml/trainer:v1","resources":{"limits":{)" + limits +
         R"(},"requests":{)" + limits + R"(}}}]},"status":{"phase":")" + (node.empty() ? "Pending" : "Running") + "\"}}";
}

// Fills about a third of the cluster with shares of every shape, each with
// its allocation record.
std::vector<std::string> cluster_objects(int nodes, uint64_t seed) {
  std::vector<std::string> objects;
  std::mt19937_64 rng(seed);
  // Items of a v1 List carry their kind (kube-scheduler's NodeList items do not).
  for (int i = 0; i < nodes; ++i) objects.push_back("{\"kind\":\"Node\"," + node_json(i).substr(1));
  int pod = 0;
  for (int i = 0; i < nodes; ++i) {
    // Per card: used percent so far.
    int used[8] = {};
    const int fill = static_cast<int>(rng() % 6);  // 0..5 pods on this node
    for (int k = 0; k < fill; ++k) {
      const Shape s = kShapes[rng() % 4];
      const int want = s.cores == 0 ? 100 : s.cores;
      scheduling::Allocation a;
      a.node = node_name(i);
      scheduling::ContainerAllocation c{"main", false, {}};
      for (int card = 0; card < 8 && static_cast<int>(c.cards.size()) < s.cards; ++card) {
        if (used[card] + want <= 100) {
          used[card] += want;
          c.cards.push_back(scheduling::CardShare{card, "", s.memory_mib == 0 && s.cores == 0 ? 81920 : s.memory_mib, want * 10});
        }
      }
      if (static_cast<int>(c.cards.size()) < s.cards) continue;
      a.containers.push_back(c);
      objects.push_back(pod_json("bound-" + std::to_string(pod), "bound-uid-" + std::to_string(pod), s, node_name(i),
                                 k8s::format_allocation(a)));
      ++pod;
    }
  }
  return objects;
}

// A blocking keep-alive HTTP/1.1 client over one TCP connection.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : fd_(fracpack::testing::connect_loopback(port)) {
    if (fd_ < 0) {
      std::perror("connect");
      std::exit(1);
    }
  }
  ~RawClient() { ::close(fd_); }
  // Returns the status; the body in `body`.
  int exchange(const std::string& request, std::string& body) {
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return -1;
      sent += static_cast<size_t>(n);
    }
    // Headers, then Content-Length bytes.
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return -1;
    }
    const int status = std::atoi(buf_.c_str() + 9);
    size_t length = 0;
    const char* cl = ::strcasestr(buf_.c_str(), "content-length:");
    if (cl != nullptr && static_cast<size_t>(cl - buf_.c_str()) < head_end) length = std::strtoul(cl + 15, nullptr, 10);
    while (buf_.size() < head_end + 4 + length) {
      if (!fill()) return -1;
    }
    body.assign(buf_, head_end + 4, length);
    buf_.erase(0, head_end + 4 + length);
    return status;
  }

 private:
  bool fill() {
    char tmp[1 << 16];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  std::string buf_;
};

std::string post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: fracpack\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Figures {
  double p50_ms = 0, p99_ms = 0, per_second = 0;
  size_t requests = 0, errors = 0;
  size_t reply_bytes = 0;  // of the last reply
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// `clients` threads send the requests round-robin for `seconds`.
Figures load(uint16_t port, const std::vector<std::string>& requests, int clients, double seconds) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<size_t> errors{0};
  std::atomic<size_t> reply_bytes{0};
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      RawClient client(port);
      std::string body;
      size_t k = static_cast<size_t>(c);
      while (Clock::now() < end) {
        const auto s = Clock::now();
        const int status = client.exchange(requests[k++ % requests.size()], body);
        lat[static_cast<size_t>(c)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
        if (status != 200) ++errors;
      }
      reply_bytes = body.size();
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  Figures f;
  f.requests = all.size();
  f.errors = errors;
  f.reply_bytes = reply_bytes;
  f.per_second = static_cast<double>(all.size()) / wall;
  f.p50_ms = percentile(all, 0.50);
  f.p99_ms = percentile(all, 0.99);
  return f;
}

// fracpack's own time in the handler (mean since start, from /metrics).
double handler_ms(uint16_t port, const char* verb) {
  RawClient c(port);
  std::string body;
  c.exchange("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", body);
  auto value = [&](const std::string& series) {
    const size_t p = body.find(series);
    return p == std::string::npos ? 0.0 : std::atof(body.c_str() + p + series.size() + 1);
  };
  const std::string label = std::string("{verb=\"") + verb + "\"}";
  const double n = value("fracpack_http_request_duration_seconds_count" + label);
  return n > 0 ? 1000.0 * value("fracpack_http_request_duration_seconds_sum" + label) / n : 0;
}

void print(const char* what, int nodes, const char* mode, int clients, size_t body_bytes, const Figures& f, const Figures& floor) {
  std::printf("%-10s %6d %-6s %7d %9.1f %9.1f %8.3f %8.3f %8.3f %8.3f %6.2f %6.2f %8.0f %7zu\n", what, nodes, mode, clients,
              static_cast<double>(body_bytes) / 1024.0, static_cast<double>(f.reply_bytes) / 1024.0, f.p50_ms, f.p99_ms,
              floor.p50_ms, floor.p99_ms, floor.p50_ms > 0 ? f.p50_ms / floor.p50_ms : 0, floor.p99_ms > 0 ? f.p99_ms / floor.p99_ms : 0,
              f.per_second, f.errors + floor.errors);
  std::fflush(stdout);
}

// The load generator runs in its own process (this binary with
// --client-mode), so its allocator and threads are not fracpack's: the
// requests go through a file, the figures come back on a pipe.
Figures load_from_process(uint16_t port, const std::vector<std::string>& requests, int clients, double seconds) {
  char path[] = "/tmp/extender_bench_requests_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    std::perror("mkstemp");
    std::exit(1);
  }
  {
    std::string framed;
    for (const auto& r : requests) framed += std::to_string(r.size()) + "\n" + r;
    size_t off = 0;
    while (off < framed.size()) {
      const ssize_t n = ::write(fd, framed.data() + off, framed.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const std::string cmd = "/proc/" + std::to_string(::getpid()) + "/exe --client-mode " + std::to_string(port) + " " + path + " " +
                          std::to_string(clients) + " " + std::to_string(seconds);
  FILE* child = ::popen(cmd.c_str(), "r");
  Figures f;
  if (child == nullptr || std::fscanf(child, "%lf %lf %lf %zu %zu %zu", &f.p50_ms, &f.p99_ms, &f.per_second, &f.requests, &f.errors,
                                      &f.reply_bytes) != 6) {
    std::fprintf(stderr, "the load generator process failed\n");
    std::exit(1);
  }
  ::pclose(child);
  ::unlink(path);
  return f;
}

int client_mode(int argc, char** argv) {
  if (argc < 6) return 2;
  const auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  std::FILE* in = std::fopen(argv[3], "rb");
  if (in == nullptr) return 1;
  std::vector<std::string> requests;
  size_t size = 0;
  while (std::fscanf(in, "%zu\n", &size) == 1) {
    std::string r(size, '\0');
    if (std::fread(r.data(), 1, size, in) != size) return 1;
    requests.push_back(std::move(r));
  }
  std::fclose(in);
  const Figures f = load(port, requests, std::atoi(argv[4]), std::atof(argv[5]));
  std::printf("%f %f %f %zu %zu %zu\n", f.p50_ms, f.p99_ms, f.per_second, f.requests, f.errors, f.reply_bytes);
  return 0;
}

// The floor: the same server code path (HttpServer, its limits and io
// threads) answering every request with a pre-built reply of the same size,
// without parsing or evaluating anything: what moving the bytes costs.
struct Floor {
  explicit Floor(std::string reply) : reply_(std::make_shared<const std::string>(std::move(reply))) {
    server::HttpOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.threads = 2;
    o.max_body_bytes = size_t{256} << 20;
    server_ = std::make_unique<server::HttpServer>(o, [this](server::HttpRequest&&, server::Reply r) {
      server::HttpResponse res;
      res.shared_body = reply_;  // not copied: the cheapest answer these bytes have
      r(std::move(res));
    });
    if (!server_->start().ok()) {
      std::fprintf(stderr, "floor server did not start\n");
      std::exit(1);
    }
  }
  uint16_t port() const { return server_->port(); }

 private:
  std::shared_ptr<const std::string> reply_;
  std::unique_ptr<server::HttpServer> server_;
};

// fracpack's reply to a request, for the floor to answer with.
std::string reply_to(uint16_t port, const std::string& request) {
  RawClient c(port);
  std::string body;
  c.exchange(request, body);
  return body;
}

// One row: fracpack, then the floor with fracpack's reply.
void row(const char* what, int nodes, const char* mode, int clients, double seconds, uint16_t port,
         const std::vector<std::string>& requests) {
  const Figures f = load_from_process(port, requests, clients, seconds);
  Floor floor(reply_to(port, requests[0]));
  const Figures fl = load_from_process(floor.port(), requests, clients, seconds);
  print(what, nodes, mode, clients, requests[0].size(), f, fl);
}

// --quota: "on" adds quota_object() to the cluster (see the top comment);
// "off" (the default) no quota.
std::string g_quota = "off";

// Namespace ml's quota. Hard limits beyond any cluster here (5 000 nodes x
// 8 cards are 40 000 cards, 3.3e9 MiB, 4e6 percent), so checking it never
// refuses: a refusal would measure a different schedule, not the check.
const std::map<std::string, std::string> kQuotaHard = {{"limits.fracpack.io/gpu", "1000000000"},
                                                        {"limits.fracpack.io/gpu-memory", "1000000000000"},
                                                        {"limits.fracpack.io/gpu-cores", "100000000000"}};
std::string quota_object() { return fracpack::testing::resource_quota("ml", "gpu", kQuotaHard); }

// Exits unless the daemon's ledger (what filter and bind consult) holds
// exactly what --quota asked for: with quota on, namespace ml's three limits
// as written; off, no quota at all. A run that silently checked nothing
// would report the cost of nothing.
void require_quota(server::Daemon& daemon) {
  const std::string problem = daemon.state().read([](const scheduling::Ledger& l) -> std::string {
    if (g_quota == "off") return l.quotas().empty() ? "" : "the ledger holds a quota";
    const std::vector<scheduling::QuotaLimit>* limits = l.quota("ml");
    if (limits == nullptr) return "namespace ml has no quota in the ledger";
    if (limits->size() != kQuotaHard.size()) return "namespace ml has " + std::to_string(limits->size()) + " quota limits, not 3";
    for (const scheduling::QuotaLimit& q : *limits) {
      const auto it = kQuotaHard.find(q.key);
      if (it == kQuotaHard.end() || !q.malformed.empty() || std::to_string(q.hard) != it->second) {
        return "namespace ml's quota " + q.key + " is " + (q.malformed.empty() ? std::to_string(q.hard) : q.malformed);
      }
    }
    return "";
  });
  if (!problem.empty()) {
    std::fprintf(stderr, "--quota %s: %s\n", g_quota.c_str(), problem.c_str());
    std::exit(1);
  }
}

// --records: "signed" (the default: the extender signs and verifies every
// record) or "unsigned" (security.records: unsigned), to measure the cost.
std::string g_records = "signed";

config::Config bench_config() {
  config::Config c;
  c.listen = "127.0.0.1:0";
  c.io_threads = 2;
  c.limits.max_request_bytes = int64_t{256} << 20;
  c.cluster.events = false;
  c.workload.config_map = "";
  auto records = config::parse_record_signing(g_records);
  if (!records) {
    std::fprintf(stderr, "extender_bench: --records: %s\n", records.message().c_str());
    std::exit(2);
  }
  c.security.records = *records;
  c.security.signing_key = fracpack::testing::test_signing_key_path();
  if (g_isolation_field == "mps") c.contract.fracpack_options.unenforced_shares = k8s::UnenforcedShares::kRefuse;
  return c;
}

void latency(int nodes, int clients, double seconds, bool names_rows, bool full) {
  std::vector<std::string> objects = cluster_objects(nodes, 42);
  if (g_quota == "on") objects.push_back(quota_object());
  fracpack::testing::Standalone s(objects, bench_config());
  require_quota(s.daemon());
  std::string names = "[";
  std::string items;
  for (int i = 0; i < nodes; ++i) {
    names += std::string(i ? "," : "") + "\"" + node_name(i) + "\"";
    if (full) items += std::string(i ? "," : "") + node_json(i);
  }
  names += "]";
  // Six pod shapes, each a fresh pod (its own UID) as kube-scheduler sends them.
  std::vector<std::string> filter_names, prio_names, filter_full, prio_full;
  for (int k = 0; k < 6; ++k) {
    const std::string pod = pod_json("p-" + std::to_string(k), "uid-" + std::to_string(k), kShapes[k]);
    const std::string by_name = "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":" + names + "}";
    filter_names.push_back(post("/filter", by_name));
    prio_names.push_back(post("/prioritize", by_name));
    if (full) {
      const std::string by_object = "{\"Pod\":" + pod + ",\"Nodes\":{\"metadata\":{},\"items\":[" + items + "]},\"NodeNames\":null}";
      filter_full.push_back(post("/filter", by_object));
      prio_full.push_back(post("/prioritize", by_object));
    }
  }
  const uint16_t port = s.daemon().port();
  if (names_rows) {
    row("filter", nodes, "names", 1, seconds, port, filter_names);
    row("filter", nodes, "names", clients, seconds, port, filter_names);
    row("prioritize", nodes, "names", clients, seconds, port, prio_names);
    std::printf("  (names mode, quota %s, mean time inside fracpack's handler: filter %.3f ms, prioritize %.3f ms)\n",
                g_quota.c_str(), handler_ms(port, "filter"), handler_ms(port, "prioritize"));
  }
  if (full) {
    const int c = std::min(clients, 2);
    row("filter", nodes, "full", c, seconds, port, filter_full);
    row("prioritize", nodes, "full", c, seconds, port, prio_full);
  }
}

// ["gpu-node-00000",...]: the NodeNames kube-scheduler sends.
std::string names_json(int nodes) {
  std::string names = "[";
  for (int i = 0; i < nodes; ++i) names += std::string(i ? "," : "") + "\"" + node_name(i) + "\"";
  return names + "]";
}

// The test API server with a third-full cluster and `pods` pending pods,
// and fracpack synced from it.
struct SyncedCluster {
  fracpack::testing::FakeApiServer api;
  std::vector<std::string> pending;
  std::unique_ptr<server::Daemon> daemon;

  SyncedCluster(int nodes, int pods, const config::Config& c) {
    for (const auto& o : cluster_objects(nodes, 7)) api.create(o.find("\"nodeName\"") != std::string::npos ? "pods" : "nodes", o);
    api.create("pods", fracpack::testing::bind_fence_marker_pod());  // as manifests/bind-fence.yaml installs it
    if (g_quota == "on") api.create("resourcequotas", quota_object());
    std::mt19937_64 rng(11);
    for (int i = 0; i < pods; ++i) {
      pending.push_back(api.create("pods", pod_json("job-" + std::to_string(i), "job-uid-" + std::to_string(i), kShapes[rng() % 5])));
    }
    server::DaemonOptions o;
    o.config = c;
    o.client = fracpack::testing::client_for(api);
    daemon = std::make_unique<server::Daemon>(o);
    if (!daemon->start().ok() || !daemon->wait_serving(std::chrono::seconds(60))) {
      std::fprintf(stderr, "daemon did not start\n");
      std::exit(1);
    }
    require_quota(*daemon);
  }
};

// One scheduling cycle as kube-scheduler runs it: filter, prioritize when
// two or more nodes pass, the best host (the one with score 10). "" when no
// node passes.
std::string schedule_cycle(RawClient& client, const std::string& pod, const std::string& names) {
  std::string reply;
  if (client.exchange(post("/filter", "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":" + names + "}"), reply) != 200) {
    std::fprintf(stderr, "filter failed: %s\n", reply.c_str());
    std::exit(1);
  }
  // The passing names: the NodeNames array of the reply.
  const size_t a = reply.find("\"NodeNames\":[");
  const std::string passing = reply.substr(a + 12, reply.find(']', a) - a - 11);
  if (passing == "[]") return "";
  if (passing.find(',') == std::string::npos) return passing.substr(2, passing.size() - 4);
  client.exchange(post("/prioritize", "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":" + passing + "}"), reply);
  const size_t ten = reply.find("\"Score\":10}");
  const size_t host = reply.rfind("{\"Host\":\"", ten);
  return reply.substr(host + 9, reply.find('"', host + 9) - host - 9);
}

std::string bind_request(int i, const std::string& node) {
  return post("/bind", "{\"PodName\":\"job-" + std::to_string(i) + "\",\"PodNamespace\":\"ml\",\"PodUID\":\"job-uid-" +
                           std::to_string(i) + "\",\"Node\":\"" + node + "\"}");
}

// A scheduling loop as kube-scheduler runs it: cycles one pod at a time
// (filter, prioritize when >= 2 nodes pass, pick the best), binds handed to
// a few binder threads so the next cycle starts at once. `schedulers`
// loops run at once, each with its share of the pods (two kube-scheduler
// profiles, or an HA pair during failover), on their own connections. They
// run in this process, beside fracpack and the test API server.
void end_to_end(int nodes, int pods, int schedulers) {
  SyncedCluster cluster(nodes, pods, bench_config());
  fracpack::testing::FakeApiServer& api = cluster.api;
  server::Daemon& daemon = *cluster.daemon;
  const std::vector<std::string>& pending = cluster.pending;
  const uint16_t port = daemon.port();
  const std::string names = names_json(nodes);

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> binds;
  bool done = false;
  std::atomic<size_t> bound{0}, bind_errors{0};
  std::vector<std::thread> binders;
  std::vector<std::vector<double>> bind_ms(4);
  for (int b = 0; b < 4; ++b) {
    binders.emplace_back([&, b] {
      RawClient client(port);
      std::string body;
      while (true) {
        std::string req;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return done || !binds.empty(); });
          if (binds.empty()) return;
          req = std::move(binds.front());
          binds.pop_front();
        }
        const auto sent = Clock::now();
        const int status = client.exchange(req, body);
        bind_ms[static_cast<size_t>(b)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
        if (status == 200 && body == "{\"Error\":\"\"}") {
          ++bound;
        } else {
          ++bind_errors;
        }
      }
    });
  }
  std::atomic<size_t> unschedulable{0};
  std::vector<std::vector<double>> cycle_ms(static_cast<size_t>(schedulers));
  const auto t0 = Clock::now();
  std::vector<std::thread> loops;
  for (int sc = 0; sc < schedulers; ++sc) {
    loops.emplace_back([&, sc] {
      RawClient client(port);
      for (int i = sc; i < pods; i += schedulers) {
        const auto s = Clock::now();
        const std::string node = schedule_cycle(client, pending[static_cast<size_t>(i)], names);
        if (node.empty()) ++unschedulable;
        if (!node.empty()) {
          std::lock_guard lock(mu);
          binds.push_back(bind_request(i, node));
          cv.notify_one();
        }
        cycle_ms[static_cast<size_t>(sc)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
      }
    });
  }
  for (auto& t : loops) t.join();
  std::vector<double> all_ms;
  for (const auto& v : cycle_ms) all_ms.insert(all_ms.end(), v.begin(), v.end());
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : binders) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all_bind_ms;
  for (const auto& v : bind_ms) all_bind_ms.insert(all_bind_ms.end(), v.begin(), v.end());
  std::printf("end-to-end %d nodes x 8 cards, %d pending pods, %d scheduler(s), records %s, quota %s: %.2f s, %.0f pods/s, "
              "%.0f bound/s (bound %zu, bind refusals %zu, unschedulable %zu), cycle p50 %.3f ms p99 %.3f ms, bind p50 %.3f ms "
              "p99 %.3f ms\n",
              nodes, pods, schedulers, g_records.c_str(), g_quota.c_str(), wall, static_cast<double>(pods) / wall,
              static_cast<double>(bound.load()) / wall,
              bound.load(), bind_errors.load(), unschedulable.load(), percentile(all_ms, 0.5), percentile(all_ms, 0.99),
              percentile(all_bind_ms, 0.5), percentile(all_bind_ms, 0.99));
  const std::string diff = fracpack::testing::Cluster::wait_for(
                               [&] { return fracpack::testing::compare_ledger(api, daemon.state()).empty(); }, std::chrono::seconds(30))
                               ? ""
                               : fracpack::testing::compare_ledger(api, daemon.state());
  std::printf("ledger vs annotations after the run: %s\n", diff.empty() ? "equal" : diff.c_str());
  daemon.drain(std::chrono::seconds(1));
}

// Binds when the API server is slow: kube-scheduler's asynchronous binds
// (each its own goroutine, its extender call timing out at httpTimeout 5 s)
// against a test API server that answers `slow_permille` of requests
// `slow_ms` late and loses `lose_permille` of binding replies (written, then
// 500). `pipelined`: the next cycle starts while binds are in flight;
// otherwise each bind is answered before the next filter. Prints the bind
// latency the scheduler sees, the binds answered past 5 s, pods/s.
void slow_api(int nodes, int pods, bool pipelined, int slow_permille, int slow_ms, int lose_permille, int bind_workers) {
  config::Config c = bench_config();
  c.bind_workers = bind_workers;
  SyncedCluster cluster(nodes, pods, c);
  fracpack::testing::FakeApiServer& api = cluster.api;
  server::Daemon& daemon = *cluster.daemon;
  api.faults().slow_ms = slow_ms;
  api.faults().slow_permille = slow_permille;
  api.faults().lose_binding_permille = lose_permille;
  const uint16_t port = daemon.port();
  const std::string names = names_json(nodes);

  // Bind senders: as many as binds in flight (kube-scheduler's goroutines).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> binds;
  bool done = false;
  std::vector<double> bind_ms;
  size_t bound = 0, refused = 0, refused_late = 0, refused_stale = 0;
  auto send_bind = [&](RawClient& client, const std::string& req) {
    std::string body;
    const auto s = Clock::now();
    const int status = client.exchange(req, body);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
    std::lock_guard lock(mu);
    bind_ms.push_back(ms);
    if (status == 200 && body == "{\"Error\":\"\"}") {
      ++bound;
    } else {
      ++refused;
      // Why: the bind timeout ran out (queued or fenced too long), or a
      // pipelined cycle chose cards a bind not yet arrived had taken.
      if (body.find("cluster.bindTimeout") != std::string::npos) ++refused_late;
      if (body.find("no longer fits") != std::string::npos) ++refused_stale;
    }
  };
  std::vector<std::thread> senders;
  if (pipelined) {
    for (int b = 0; b < 128; ++b) {
      senders.emplace_back([&] {
        RawClient client(port);
        while (true) {
          std::string req;
          {
            std::unique_lock lock(mu);
            cv.wait(lock, [&] { return done || !binds.empty(); });
            if (binds.empty()) return;
            req = std::move(binds.front());
            binds.pop_front();
          }
          send_bind(client, req);
        }
      });
    }
  }
  RawClient client(port), binder(port);
  const auto t0 = Clock::now();
  for (int i = 0; i < pods; ++i) {
    const std::string node = schedule_cycle(client, cluster.pending[static_cast<size_t>(i)], names);
    if (node.empty()) continue;
    const std::string req = bind_request(i, node);
    if (pipelined) {
      std::lock_guard lock(mu);
      binds.push_back(req);
      cv.notify_one();
    } else {
      send_bind(binder, req);
    }
  }
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : senders) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const size_t late = static_cast<size_t>(std::count_if(bind_ms.begin(), bind_ms.end(), [](double ms) { return ms > 5000; }));
  std::printf("slow API server (%d %%o of answers %d ms late, %d %%o of binding replies lost), %d nodes, %d pods, %s binds, "
              "bindWorkers %d, quota %s: bind p50 %.1f ms p99 %.1f ms max %.1f ms, answered past 5 s %zu, bound %zu, refused %zu "
              "(bind timeout %zu, no longer fits %zu), %.0f pods/s\n",
              slow_permille, slow_ms, lose_permille, nodes, pods, pipelined ? "pipelined" : "one-at-a-time", bind_workers,
              g_quota.c_str(), percentile(bind_ms, 0.5), percentile(bind_ms, 0.99),
              bind_ms.empty() ? 0.0 : *std::max_element(bind_ms.begin(), bind_ms.end()),
              late, bound, refused, refused_late, refused_stale, static_cast<double>(pods) / wall);
  std::fflush(stdout);
  api.faults().clear();
  daemon.drain(std::chrono::seconds(1));
}

}  // namespace

// "1000,5000" -> {1000, 5000}
std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(std::atoi(text.substr(start, comma - start).c_str()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--client-mode") return client_mode(argc, argv);
  double seconds = 3;
  int clients = 4, pods = 5000;
  std::vector<int> sizes = {1000, 5000}, e2e_sizes = {1000, 5000};
  bool full = true, names_rows = true, e2e = true, lat = true, slow = false;
  int slow_nodes = 1213, slow_pods = 3000, bind_workers = 64;
  std::string slow_mode = "both";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--seconds") seconds = std::atof(v), ++i;
    else if (a == "--clients") clients = std::atoi(v), ++i;
    else if (a == "--pods") pods = std::atoi(v), ++i;
    else if (a == "--nodes") sizes = int_list(v), ++i;
    else if (a == "--e2e-nodes") e2e_sizes = int_list(v), ++i;
    else if (a == "--skip-full") full = false;
    else if (a == "--skip-names") names_rows = false;
    else if (a == "--only-e2e") lat = false;
    else if (a == "--skip-e2e") e2e = false;
    else if (a == "--slow-api") slow = true;
    else if (a == "--only-slow-api") slow = true, lat = false, e2e = false;
    else if (a == "--bind-workers") bind_workers = std::atoi(v), ++i;
    else if (a == "--slow-pods") slow_pods = std::atoi(v), ++i;
    else if (a == "--slow-binds") slow_mode = v, ++i;
    else if (a == "--records") g_records = v, ++i;
    else if (a == "--quota" && (std::string(v) == "on" || std::string(v) == "off")) g_quota = v, ++i;
    else if (a == "--isolation-field" && (std::string(v) == "off" || std::string(v) == "none" || std::string(v) == "mps")) g_isolation_field = v, ++i;
    else {
      std::fprintf(stderr, "usage: extender_bench [--seconds S] [--clients N] [--nodes 1000,5000] [--pods N] [--skip-full] [--skip-names] [--skip-e2e] [--only-e2e] [--e2e-nodes 1000,5000]\n"
                           "                      [--slow-api | --only-slow-api] [--slow-pods N] [--slow-binds one|pipelined|both] [--bind-workers N]\n"
                           "                      [--records signed|unsigned] [--quota on|off] [--isolation-field off|none|mps]\n");
      return 2;
    }
  }
  server::configure_log(server::LogLevel::kWarn, server::LogFormat::kLogfmt);
  server::tune_allocator_for_large_bodies();  // as fracpack serve does
  if (lat) {
    std::printf("(the load generator is a second process on the same cores; floor: the same HTTP server answering a pre-built reply; "
                "quota %s)\n", g_quota.c_str());
    std::printf("%-10s %6s %-6s %7s %9s %9s %8s %8s %8s %8s %6s %6s %8s %7s\n", "verb", "nodes", "mode", "clients", "body KiB",
                "reply KiB", "p50 ms", "p99 ms", "floor50", "floor99", "x p50", "x p99", "req/s", "errors");
    for (int n : sizes) latency(n, clients, seconds, names_rows, full);
  }
  if (e2e) {
    for (int n : e2e_sizes) {
      for (int schedulers : {1, 4}) end_to_end(n, pods, schedulers);
    }
  }
  if (slow) {
    if (slow_mode != "pipelined") slow_api(slow_nodes, slow_pods, /*pipelined=*/false, 200, 300, 20, bind_workers);
    if (slow_mode != "one") slow_api(slow_nodes, slow_pods, /*pipelined=*/true, 200, 300, 20, bind_workers);
  }
  return 0;
}
