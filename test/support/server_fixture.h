// Fixtures of the server tests: a fracpack daemon on a loopback port (from a
// snapshot, or against the fake API server), object builders, and a raw
// TCP client for requests no well-behaved client would send.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "server/daemon.h"
#include "test/support/cluster_harness.h"
#include "test/support/scheduler_driver.h"

namespace fracpack::testing {

// Two T4 nodes (2 cards each, 16 GiB) and one A100-looking node (80 GiB,
// labelled A100-SXM4-80GB): the extender tests' small cluster.
std::vector<std::string> small_cluster();

// A folder removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

// A pod asking for `cores` percent and `memory_mib` of `cards` cards (0
// cores and memory: a bare whole-card request).
std::string gpu_pod(const std::string& name, const std::string& uid, int cores, int64_t memory_mib = 0, int cards = 1,
                    std::map<std::string, std::string> annotations = {}, int priority = 0, const std::string& node = "");
// Deletes a pod at random: a bound one three times in four (jobs end), else
// a pending one (jobs cancelled); never fracpack-system's. Its
// namespace/name and whether it was bound; nothing when there is no pod.
struct DeletedPod {
  std::string key;
  bool was_bound = false;
};
std::optional<DeletedPod> delete_random_pod(FakeApiServer& api, std::mt19937_64& rng);

// The pod `ns/name` of a snapshot file (a v1 List) as JSON text ("" if absent).
std::string snapshot_pod(const std::string& snapshot_path, const std::string& ns, const std::string& name);

// A ResourceQuota `ns/name` with these spec.hard entries.
std::string resource_quota(const std::string& ns, const std::string& name, const std::map<std::string, std::string>& hard);
// `pod_json` moved to namespace `ns`.
std::string in_namespace(const std::string& pod_json, const std::string& ns);

// A pod with CPU only.
std::string cpu_pod(const std::string& name, const std::string& uid);

// A config for tests: 127.0.0.1, any port, short timeouts.
config::Config test_config();

// A scheduler driver with one extender at `url` ("http://127.0.0.1:PORT").
std::unique_ptr<SchedulerDriver> driver_for(const std::string& url);

// A daemon serving a snapshot (a v1 List of `objects`).
struct Standalone {
  explicit Standalone(const std::vector<std::string>& objects, config::Config c = test_config());
  ~Standalone();
  std::string url() const;  // "http://127.0.0.1:PORT"
  SchedulerDriver& driver() { return *driver_; }
  server::Daemon& daemon() { return *daemon_; }
  k8s::ClusterState& state() { return daemon_->state(); }

  TempDir dir;
  std::unique_ptr<server::Daemon> daemon_;
  std::unique_ptr<SchedulerDriver> driver_;
};

// A daemon against a fake API server (kubernetes mode).
struct Connected {
  explicit Connected(config::Config c = test_config());
  ~Connected();
  void start();  // starts the daemon and waits until it serves
  std::string url() const;
  SchedulerDriver& driver() { return *driver_; }
  server::Daemon& daemon() { return *daemon_; }

  std::unique_ptr<FakeApiServer> api;
  config::Config config;
  std::unique_ptr<server::Daemon> daemon_;
  std::unique_ptr<SchedulerDriver> driver_;
};

// What the (running or restarted) daemon's ledger holds per card, by node.
struct LedgerCard {
  std::string uuid;
  int index = 0;
  int sharers = 0;
  int64_t memory_mib = 0;
  int cores = 0;  // milli
};
std::map<std::string, std::vector<LedgerCard>> ledger_cards(server::Daemon& d);
// The cards the daemon's ledger holds for a pod, per container, as UUIDs
// (the index where a card has none).
std::vector<std::vector<std::string>> ledger_uuids(server::Daemon& d, const std::string& uid);

// The fracpack binary as a child process, its stderr (the log) in a file.
// Stopped with SIGTERM at destruction if still running.
class FracpackProcess {
 public:
  explicit FracpackProcess(std::vector<std::string> args);
  ~FracpackProcess();
  FracpackProcess(const FracpackProcess&) = delete;
  FracpackProcess& operator=(const FracpackProcess&) = delete;

  bool started() const { return pid_ > 0 || exit_code_ >= 0; }
  std::string log() const;
  // Waits for a log line matching `pattern` (ECMAScript regex); returns its
  // first group (or the match), "" on timeout or if the process ended.
  std::string wait_for(const std::string& pattern, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
  // Still running? If it ended by itself, `exit_code` (or 128 + signal).
  bool running();
  int exit_code() const { return exit_code_; }
  // Sends `sig` and waits for the end; the exit code (or 128 + signal).
  int stop(int sig = 15);

 private:
  std::string log_path_;
  int pid_ = -1;
  int exit_code_ = -1;
};

// A TCP connection to 127.0.0.1:port with TCP_NODELAY: the socket, or -1.
int connect_loopback(uint16_t port);

// One request over a fresh TCP connection: sends `bytes` (optionally in
// pieces with pauses), returns what the server answered until it closed or
// `timeout` passed.
struct RawExchange {
  std::string response;
  bool closed_by_server = false;
  std::chrono::milliseconds elapsed{0};
};
// Without `until_close`, returns after the first complete response.
RawExchange raw_exchange(uint16_t port, const std::vector<std::string>& pieces,
                         std::chrono::milliseconds pause = std::chrono::milliseconds(0),
                         std::chrono::milliseconds timeout = std::chrono::seconds(5), bool until_close = false);
int status_of(const std::string& response);
std::string body_of(const std::string& response);

// GET over the driver's first extender connection settings.
k8s::HttpResponse http_get(const std::string& url, const std::string& path, k8s::TlsOptions tls = {});
// A POST of `body` (JSON); status 0 and the error as the body when it failed.
k8s::HttpResponse http_post(const std::string& url, const std::string& path, const std::string& body, k8s::TlsOptions tls = {});

// A loopback TCP port free at the time of the call.
uint16_t free_loopback_port();
// The sum of the samples of `/metrics` at `url` whose line starts with
// `prefix` (a family name, optionally with the opening "{"); 0 when none or unreachable.
double metric_sum(const std::string& url, const std::string& prefix);
// fracpack serve's YAML configuration for a process against the test API
// server at `api_url` (a kubeconfig written beside it in `dir`), with
// `cluster_keys` added to its cluster section ("bindTimeout: 1s\n") and
// `top_keys` at the top level ("contract:\n  profile: hami\n").
std::string process_config(const TempDir& dir, const std::string& api_url, uint16_t port, std::chrono::milliseconds assume_ttl,
                           std::chrono::milliseconds reconcile_interval, const std::string& cluster_keys = "",
                           const std::string& top_keys = "");

}  // namespace fracpack::testing
