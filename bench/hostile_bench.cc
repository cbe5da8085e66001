// What a hostile or broken client can take from `fracpack serve`: the
// server's memory (RSS read from /proc), the reply bytes one request makes,
// the time an ordinary client waits meanwhile, and the status codes of
// malformed input. It starts the given fracpack binary on the example
// snapshot and attacks it over loopback (plain sockets, no HTTP library), so
// the same program measures any build, before and after a change:
//
//   build/bench/hostile_bench [--fracpack build/fracpack] [--snapshot config/examples/cluster-snapshot.json]
//                             [--port 18891] [--only amplify,remember,connections,bodies,malformed,bind]
//
// The attacks (issue 17's six findings):
//   amplify      a 0.7 MB filter: one node name repeated, a pod whose model
//                list is 8 KB; alone, then two at once beside an ordinary filter
//   remember     60 filters, each a pod (own UID) with a 5 MB container name;
//                then 2 000 pods within Kubernetes' limits (200 KiB annotations)
//   connections  1 100 connections that each send one request, then idle;
//                then a fresh client's filter
//   bodies       50 connections that announce 60 MiB bodies, send 1 MiB, stall;
//                then 50 that send 8 MiB each (400 MiB in all)
//   malformed    invalid JSON in skipped fields, bad framing, a folded header
//   bind         a bind with another pod's name under a UID; a second bind
//                of a bound pod elsewhere
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

uint16_t g_port = 18891;
pid_t g_server = -1;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int connect_once() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(g_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

struct Answer {
  int status = 0;  // 0: no answer (refused, reset or timed out)
  size_t bytes = 0;  // the whole reply, headers included
  std::string head;  // the start of the reply
  double ms = 0;
};

// Reads one reply (Content-Length framed, as fracpack answers) or until the
// server closes or `timeout` passes. Only the first KiB is kept.
Answer read_answer(int fd, std::chrono::milliseconds timeout) {
  Answer a;
  const auto deadline = Clock::now() + timeout;
  std::string head;
  size_t total = 0, expected = SIZE_MAX;
  std::vector<char> buf(1 << 20);
  while (total < expected) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    total += static_cast<size_t>(n);
    if (head.size() < 4096) head.append(buf.data(), std::min<size_t>(static_cast<size_t>(n), 4096 - head.size()));
    if (expected == SIZE_MAX) {
      const size_t end = head.find("\r\n\r\n");
      const size_t cl = head.find("Content-Length: ");
      if (end != std::string::npos && cl != std::string::npos && cl < end) {
        expected = end + 4 + std::strtoull(head.c_str() + cl + 16, nullptr, 10);
      }
    }
  }
  a.bytes = total;
  a.head = head.substr(0, 1024);
  if (head.rfind("HTTP/1.", 0) == 0 && head.size() > 12) a.status = std::atoi(head.c_str() + 9);
  return a;
}

Answer exchange(const std::string& request, std::chrono::milliseconds timeout = 60s) {
  const auto t0 = Clock::now();
  const int fd = connect_once();
  Answer a;
  if (fd >= 0) {
    if (send_all(fd, request)) a = read_answer(fd, timeout);
    ::close(fd);
  }
  a.ms = ms_since(t0);
  return a;
}

std::string post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string error_of(const Answer& a) {
  const size_t e = a.head.find("\"Error\":\"");
  if (e == std::string::npos) return "";
  return a.head.substr(e + 9, std::min<size_t>(100, a.head.find('"', e + 9) - e - 9));
}

long kib_of(const char* field) {
  std::ifstream in("/proc/" + std::to_string(g_server) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}
double rss_mib() { return static_cast<double>(kib_of("VmRSS:")) / 1024.0; }

// The peak RSS while `work` runs, sampled every 5 ms.
template <class F>
double peak_rss_during(F work) {
  std::atomic<bool> done{false};
  double peak = rss_mib();
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak, rss_mib());
      std::this_thread::sleep_for(5ms);
    }
  });
  work();
  done = true;
  sampler.join();
  return std::max(peak, rss_mib());
}

// A pending pod of the example snapshot's kind, asking half an A100.
std::string gpu_pod(const std::string& name, const std::string& uid, const std::string& container = "server",
                    const std::string& annotations = "") {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":"bench","uid":")" + uid +
         R"(","resourceVersion":"1","annotations":{)" + annotations + R"(}},"spec":{"schedulerName":"fracpack","containers":[{"name":")" +
         container +
         R"(","resources":{"limits":{"fracpack.io/gpu":"1","fracpack.io/gpu-cores":"50","fracpack.io/gpu-memory":"4096"}}}]},"status":{"phase":"Pending"}})";
}

std::string filter_args(const std::string& pod, const std::vector<std::string>& names) {
  std::string body = "{\"Pod\":" + pod + ",\"Nodes\":null,\"NodeNames\":[";
  for (size_t i = 0; i < names.size(); ++i) body += (i ? ",\"" : "\"") + names[i] + "\"";
  return body + "]}";
}

const std::vector<std::string> kNodes = {"gpu-a100-0", "gpu-a100-1", "gpu-l4-0", "gpu-t4-0", "cpu-0"};

Answer ordinary_filter(int i) {
  return exchange(post("/filter", filter_args(gpu_pod("ordinary-" + std::to_string(i), "u-ordinary-" + std::to_string(i)), kNodes)));
}

void amplify() {
  std::string models;
  while (models.size() < 8000) models += (models.empty() ? "" : "|") + std::string("NVIDIA-H999-") + std::to_string(models.size());
  const std::string pod = gpu_pod("amplify", "u-amplify", "server", "\"fracpack.io/gpu-model\":\"" + models + "\"");
  std::vector<std::string> names;
  std::string body;
  while ((body = filter_args(pod, names)).size() < 700 * 1000) names.resize(names.size() + 1000, "gpu-a100-0");
  const std::string request = post("/filter", body);
  const double base = rss_mib();
  Answer one;
  const double peak1 = peak_rss_during([&] { one = exchange(request); });
  std::printf("amplify      one %.2f MB request (%zu names): status %d, reply %zu bytes in %.0f ms, peak RSS %.0f MiB (+%.0f)\n",
              static_cast<double>(request.size()) / 1e6, names.size(), one.status, one.bytes, one.ms, peak1, peak1 - base);
  if (one.status != 200) std::printf("             error: %s\n", error_of(one).c_str());
  Answer two[2], plain;
  const double peak2 = peak_rss_during([&] {
    std::thread a([&] { two[0] = exchange(request); });
    std::thread b([&] { two[1] = exchange(request); });
    std::this_thread::sleep_for(50ms);
    plain = ordinary_filter(0);
    a.join();
    b.join();
  });
  std::printf("amplify      two at once: status %d/%d, peak RSS %.0f MiB (+%.0f); an ordinary filter meanwhile: status %d in %.1f ms\n",
              two[0].status, two[1].status, peak2, peak2 - base, plain.status, plain.ms);
}

void remember() {
  const double base = rss_mib();
  int ok = 0, refused = 0;
  std::string first_error;
  const std::string long_name(5 << 20, 'c');
  for (int i = 0; i < 60; ++i) {
    const Answer a = exchange(post("/filter", filter_args(gpu_pod("remember-" + std::to_string(i), "u-remember-" + std::to_string(i), long_name), kNodes)));
    (a.status == 200 ? ok : refused) += 1;
    if (a.status != 200 && first_error.empty()) first_error = error_of(a);
  }
  std::this_thread::sleep_for(300ms);
  const double after = rss_mib();
  std::printf("remember     60 filters of pods with 5 MB container names: %d answered 200, %d refused; RSS after %.0f MiB (+%.0f, kept)\n", ok,
              refused, after, after - base);
  if (!first_error.empty()) std::printf("             error: %s\n", first_error.c_str());
  // Within Kubernetes' limits: 2 000 pods, each with a 200 KiB model list
  // (an annotation fracpack keeps; the limit is 256 KiB of them per pod).
  std::string models;
  while (models.size() < (200 << 10)) models += (models.empty() ? "" : "|") + std::string("NVIDIA-A100-SXM4-80GB");
  const std::string annotation = "\"fracpack.io/gpu-model\":\"" + models + "\"";
  ok = 0;
  for (int i = 0; i < 2000; ++i) {
    const Answer a = exchange(post("/filter", filter_args(gpu_pod("big-" + std::to_string(i), "u-big-" + std::to_string(i), "server", annotation), kNodes)));
    ok += a.status == 200;
  }
  std::this_thread::sleep_for(300ms);
  const double later = rss_mib();
  std::printf("remember     then 2000 filters of pods with a 200 KiB model list each: %d answered 200; RSS after %.0f MiB (+%.0f, kept)\n", ok,
              later, later - base);
}

void connections() {
  const int n = 1100;
  std::vector<int> fds;
  int answered = 0;
  for (int i = 0; i < n; ++i) {
    const int fd = connect_once();
    if (fd < 0) continue;
    if (send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") && read_answer(fd, 2s).status == 200) ++answered;
    fds.push_back(fd);  // kept open, idle
  }
  std::this_thread::sleep_for(200ms);
  const Answer fresh = ordinary_filter(1);
  std::printf("connections  %d connections sent one request (%d answered) and idle: a fresh client's filter: status %d after %.0f ms\n",
              n, answered, fresh.status, fresh.ms);
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(500ms);
}

// 50 connections announce 60 MiB bodies and send `mib_sent` MiB of each.
void bodies_sending(int mib_sent) {
  const double base = rss_mib();
  std::vector<int> fds;
  int early = 0;
  std::vector<int> statuses;
  const std::string mib(1 << 20, ' ');
  for (int i = 0; i < 50; ++i) {
    const int fd = connect_once();
    if (fd < 0) continue;
    send_all(fd, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(60 << 20) + "\r\n\r\n");
    // (a refused one is closed: its sends fail, and the loop goes on)
    for (int k = 0; k < mib_sent && send_all(fd, mib); ++k) {
    }
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(1s);
  const double after = rss_mib();
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      const Answer a = read_answer(fd, 100ms);
      if (a.status != 0) {
        ++early;
        statuses.push_back(a.status);
      }
    }
  }
  const Answer plain = ordinary_filter(2);
  std::string codes;
  if (!statuses.empty()) codes = " (status " + std::to_string(statuses.front()) + ")";
  std::printf("bodies       50 connections announcing 60 MiB, %d MiB sent: RSS %.0f MiB (+%.0f), %d answered at once%s; an ordinary filter: status %d in %.1f ms\n",
              mib_sent, after, after - base, early, codes.c_str(), plain.status, plain.ms);
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(500ms);
}

void bodies() {
  bodies_sending(1);
  bodies_sending(8);
}

void malformed() {
  const std::string args = filter_args(gpu_pod("malformed", "u-malformed"), kNodes);
  const std::string nan_body = args.substr(0, args.size() - 1) + ",\"Junk\":NaN}";
  const std::string tru_body = args.substr(0, args.size() - 1) + ",\"Junk\":[tru]}";
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"\"Junk\":NaN", post("/filter", nan_body)},
      {"\"Junk\":[tru]", post("/filter", tru_body)},
      {"Transfer-Encoding: bogus", "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n\r\nGET /version HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"Transfer-Encoding: gzip, chunked", "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
      {"HTTP/1.1 without Host", "GET /healthz HTTP/1.1\r\n\r\n"},
      {"folded header line", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n"},
      {"non-UTF-8 path", "GET /no\xff\xfewhere HTTP/1.1\r\nHost: x\r\n\r\n"},
  };
  for (const auto& c : cases) {
    const Answer a = exchange(c.bytes, 3s);
    const size_t body = a.head.find("\r\n\r\n");
    bool utf8 = true;
    for (size_t i = body == std::string::npos ? 0 : body; i < a.head.size(); ++i) utf8 = utf8 && static_cast<unsigned char>(a.head[i]) < 0x80;
    std::printf("malformed    %-34s status %d%s\n", c.what, a.status, utf8 ? "" : " (reply body has non-ASCII bytes)");
  }
}

void bind() {
  // The snapshot's pending pod inference/llm-serve-1, under another name;
  // then bound for real, then bound again elsewhere.
  auto bind_body = [](const std::string& ns, const std::string& name, const std::string& node) {
    return "{\"PodName\":\"" + name + "\",\"PodNamespace\":\"" + ns + "\",\"PodUID\":\"uid-inference-llm-serve-1\",\"Node\":\"" + node + "\"}";
  };
  auto outcome = [](const Answer& a) {
    const std::string e = error_of(a);
    return std::to_string(a.status) + (e.empty() ? " bound" : " refused: " + e);
  };
  const Answer spoofed = exchange(post("/bind", bind_body("kube-system", "spoofed", "gpu-a100-0")));
  std::printf("bind         right UID, another namespace/name: %s\n", outcome(spoofed).c_str());
  const Answer real = exchange(post("/bind", bind_body("inference", "llm-serve-1", "gpu-a100-0")));
  std::printf("bind         the pod itself: %s\n", outcome(real).c_str());
  const Answer again = exchange(post("/bind", bind_body("inference", "llm-serve-1", "gpu-a100-1")));
  std::printf("bind         the same pod again, to another node: %s\n", outcome(again).c_str());
}

bool wanted(const std::string& only, const char* name) {
  if (only.empty()) return true;
  return ("," + only + ",").find("," + std::string(name) + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  std::string binary = "build/fracpack", snapshot = "config/examples/cluster-snapshot.json", only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--fracpack") binary = v, ++i;
    else if (a == "--snapshot") snapshot = v, ++i;
    else if (a == "--port") g_port = static_cast<uint16_t>(std::atoi(v)), ++i;
    else if (a == "--only") only = v, ++i;
    else {
      std::fprintf(stderr, "usage: hostile_bench [--fracpack PATH] [--snapshot FILE] [--port N] [--only amplify,remember,connections,bodies,malformed,bind]\n");
      return 2;
    }
  }
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);  // 1 100 connections here and there (the child inherits it)
  ::signal(SIGPIPE, SIG_IGN);

  // Each attack on a fresh server: one's leftovers never count in another's figures.
  struct Attack {
    const char* name;
    void (*run)();
  } attacks[] = {{"amplify", amplify},       {"remember", remember},   {"connections", connections},
                 {"bodies", bodies},         {"malformed", malformed}, {"bind", bind}};
  std::printf("hostile_bench: %s on %s, port %u\n", binary.c_str(), snapshot.c_str(), g_port);
  for (const auto& attack : attacks) {
    if (!wanted(only, attack.name)) continue;
    g_server = ::fork();
    if (g_server == 0) {
      const std::string listen = "127.0.0.1:" + std::to_string(g_port);
      ::execl(binary.c_str(), binary.c_str(), "serve", "--snapshot", snapshot.c_str(), "--listen", listen.c_str(), "--log-level",
              "error", static_cast<char*>(nullptr));
      std::perror("exec");
      std::_Exit(127);
    }
    const auto t0 = Clock::now();
    bool up = false;
    while (!up && Clock::now() - t0 < 20s) {
      std::this_thread::sleep_for(50ms);
      up = exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1s).status == 200;
    }
    if (!up) {
      std::fprintf(stderr, "%s did not answer /healthz on port %u\n", binary.c_str(), g_port);
      ::kill(g_server, SIGKILL);
      return 1;
    }
    std::printf("%-12s server RSS at start %.0f MiB\n", attack.name, rss_mib());
    attack.run();
    int wstatus = 0;
    const bool alive = ::waitpid(g_server, &wstatus, WNOHANG) == 0;
    std::printf("%-12s server %s, peak RSS (VmHWM) %.0f MiB\n", attack.name, alive ? "still serving" : "DIED",
                static_cast<double>(kib_of("VmHWM:")) / 1024.0);
    ::kill(g_server, SIGKILL);
    ::waitpid(g_server, &wstatus, 0);
  }
  return 0;
}
