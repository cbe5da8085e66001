// A kubelet double for the device plugin API v1beta1, over the real gRPC
// API on Unix sockets, following ../shared/reference/node-side.md §B1.3: it serves
// Registration on <dir>/kubelet.sock, checks the request (version v1beta1,
// an extended resource name), dials the plugin back on <dir>/<endpoint>,
// asks its options and keeps ListAndWatch open (every message is the full
// list). Admitting a pod, it allocates each container that asks the
// resource in kubelet's order (init containers, then app containers), one
// Allocate per container with exactly one entry, after
// GetPreferredAllocation when the plugin offers it, from the healthy IDs no
// live container holds. restart() does what a kubelet restart does to the
// directory: every socket but its own checkpoint removed, kubelet.sock
// recreated; the plugin must register again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

namespace grpc {
class Server;
class ClientContext;
class Channel;
}  // namespace grpc

namespace fracpack::test {

class KubeletDouble {
 public:
  struct Container {
    std::string name;
    int devices = 0;  // resources.limits[resource]
  };
  struct Admitted {
    std::string container;
    std::vector<std::string> device_ids;
    std::vector<std::string> preferred;  // GetPreferredAllocation's answer
    std::map<std::string, std::string> envs;
    std::vector<std::string> cdi_devices;
    struct Mount {
      std::string container_path, host_path;
      bool read_only = false;
      bool operator==(const Mount&) const = default;
    };
    std::vector<Mount> mounts;
  };

  explicit KubeletDouble(std::string dir);
  ~KubeletDouble();

  // Waits until a plugin has registered `resource` and its first device
  // list arrived.
  bool wait_registered(const std::string& resource, std::chrono::milliseconds timeout);
  // The plugin's latest list: device ID -> "Healthy"/"Unhealthy".
  std::map<std::string, std::string> devices() const;
  // Waits until `pred(devices())` holds.
  bool wait_devices(const std::function<bool(const std::map<std::string, std::string>&)>& pred, std::chrono::milliseconds timeout);
  // Admits a pod's containers (in order); the first refusal fails the pod
  // (kubelet's UnexpectedAdmissionError) with the plugin's message, and the
  // IDs given to its earlier containers are freed.
  Result<std::vector<Admitted>> admit(const std::string& pod_uid, const std::vector<Container>& containers);
  // The pod is gone: its IDs are free again.
  void remove_pod(const std::string& pod_uid);
  // kubelet restarting: its directory wiped, its socket served afresh.
  void restart();
  // kubelet stopped: the plugin's stream ends and registrations are refused
  // (kubelet's socket stays behind; connecting to it is refused); restart()
  // brings it back.
  void stop();
  // The next `n` registrations are refused as a socket that kubelet has
  // bound but not yet listens on refuses them (connection refused): the
  // window a plugin that dials the moment kubelet's socket appears can hit.
  void refuse_registrations(int n);

  int registrations() const;
  int register_calls() const;  // refused ones too
  int list_messages() const;
  std::string resource() const;
  std::chrono::steady_clock::time_point last_list_at() const;

  class Registration;

 private:
  void serve();
  void work();  // dials back each registration, as kubelet does after Register returns
  void stop_stream();

  std::string dir_;
  std::unique_ptr<Registration> registration_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string endpoint_, resource_;
  bool preferred_available_ = false;
  int registrations_ = 0;
  int list_messages_ = 0;
  std::chrono::steady_clock::time_point last_list_at_{};
  std::map<std::string, std::string> devices_;
  std::map<std::string, std::set<std::string>> held_;  // pod uid -> IDs
  std::mutex dial_mu_;    // the worker's dial-back and restart() take turns with the stream
  bool pending_ = false;  // a registration to dial back
  bool stopping_ = false;
  bool stopped_ = false;  // stop(): registrations refused
  int refusals_ = 0;      // refuse_registrations()
  int register_calls_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::shared_ptr<grpc::ClientContext> stream_ctx_;
  std::thread stream_thread_;
  std::thread worker_;
};

}  // namespace fracpack::test
