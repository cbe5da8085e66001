#include "node/device_plugin.h"

#include <grpcpp/grpcpp.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "k8s/contract/fracpack.h"
#include "common/text.h"
#include "node/api/deviceplugin.grpc.pb.h"

namespace fracpack::node {

namespace {

constexpr size_t kMaxIdLength = 63;  // api.proto: Device.ID

}  // namespace

namespace {

// What a device's IDs begin with: "<uuid>-", or "gpu<index>-" when that
// would make an ID longer than kubelet allows.
std::string id_prefix(const GpuDevice& device, int slots) {
  std::string prefix = device.uuid + "-";
  if (device.uuid.empty() || prefix.size() + std::to_string(slots).size() > kMaxIdLength) {
    prefix = "gpu" + std::to_string(device.index) + "-";
  }
  return prefix;
}

}  // namespace

std::vector<std::string> device_ids(const GpuDevice& device, int slots) {
  const std::string prefix = id_prefix(device, slots);
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(slots));
  for (int s = 0; s < slots; ++s) ids.push_back(prefix + std::to_string(s));
  return ids;
}

const GpuDevice* device_of_id(const std::vector<GpuDevice>& devices, const std::string& id, int slots) {
  for (const GpuDevice& d : devices) {
    const std::string prefix = id_prefix(d, slots);
    int slot = -1;
    if (id.compare(0, prefix.size(), prefix) == 0 && parse_decimal(std::string_view(id).substr(prefix.size()), slot) &&
        slot >= 0 && slot < slots) {
      return &d;
    }
  }
  return nullptr;
}

void fill_list(const std::vector<GpuDevice>& devices, int slots, v1beta1::ListAndWatchResponse& out) {
  for (const GpuDevice& d : devices) {
    for (const std::string& id : device_ids(d, slots)) {
      v1beta1::Device* dev = out.add_devices();
      dev->set_id(id);
      dev->set_health(d.usable() ? "Healthy" : "Unhealthy");
      dev->mutable_topology()->add_nodes()->set_id(d.numa);
    }
  }
}

Status fill_container(const Assignment& a, const std::vector<GpuDevice>& devices, const DevicePluginOptions& options,
                      v1beta1::ContainerAllocateResponse& out) {
  const std::string who = "pod " + a.pod_key + " container " + a.container;
  std::vector<std::string> uuids, memory, cores;
  std::vector<const GpuDevice*> chosen;
  for (const scheduling::CardShare& share : a.cards) {
    auto it = std::find_if(devices.begin(), devices.end(), [&](const GpuDevice& d) { return d.index == share.index; });
    if (it == devices.end()) {
      return Error{who + ": its allocation record names card " + std::to_string(share.index) + ", which this node does not have"};
    }
    if (!share.uuid.empty() && share.uuid != it->uuid) {
      return Error{who + ": its allocation record names card " + std::to_string(share.index) + " as " + share.uuid +
                   ", but that card is " + it->uuid};
    }
    if (!it->usable()) {
      return Error{who + ": card " + std::to_string(share.index) + " (" + it->uuid + ") is unhealthy: " + it->why_unusable()};
    }
    chosen.push_back(&*it);
    uuids.push_back(it->uuid);
    memory.push_back(std::to_string(share_memory_mib(share, *it)));
    cores.push_back(k8s::cores_text(share.cores > 0 ? share.cores : 1000));
  }
  // The limiter of the cards' isolation (node/isolation.h): its variables
  // and mounts, or a refusal (cards of two kinds; a container that would
  // lift its own limit).
  auto isolated = isolate(a, chosen, k8s::ContainerSettings{a.spec.env, a.spec.env_from, a.spec.mount_paths}, options.isolation);
  if (!isolated) return Error{isolated.message()};
  for (const std::string& dir : isolated->host_dirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::filesystem::permissions(dir, std::filesystem::perms::all, ec);  // the container's user is not the agent's
    if (!std::filesystem::is_directory(dir)) return Error{who + ": cannot make " + dir + " for its limiter: " + ec.message()};
  }
  auto& env = *out.mutable_envs();
  if (options.visible_devices_env) env["NVIDIA_VISIBLE_DEVICES"] = join(uuids, ",");
  env["FRACPACK_POD"] = a.pod_key;
  env["FRACPACK_CONTAINER"] = a.container;
  env["FRACPACK_GPU_UUIDS"] = join(uuids, ",");
  env["FRACPACK_GPU_MEMORY_MIB"] = join(memory, ",");
  env["FRACPACK_GPU_CORES_PERCENT"] = join(cores, ",");
  env["FRACPACK_GPU_ISOLATION"] = scheduling::isolation_name(isolated->isolation);
  for (const auto& [name, value] : isolated->env) env[name] = value;
  for (const Mount& m : isolated->mounts) {
    v1beta1::Mount* mount = out.add_mounts();
    mount->set_container_path(m.container_path);
    mount->set_host_path(m.host_path);
    mount->set_read_only(m.read_only);
  }
  if (options.cdi) {
    for (const std::string& u : uuids) out.add_cdi_devices()->set_name(options.cdi_kind + "=" + u);
  }
  return Status::Ok();
}

// The gRPC service: kubelet's calls, answered from the node state.
namespace {

void report(const DevicePluginOptions& options, bool problem, const std::string& message) {
  if (options.report) {
    options.report(problem, message);
  } else {
    std::fprintf(stderr, "fracpack node-agent: %s\n", message.c_str());
  }
}

}  // namespace

class DevicePluginServer::Service final : public v1beta1::DevicePlugin::Service {
 public:
  Service(const DevicePluginOptions& options, DevicesAndPods& state, DevicePluginStats& stats)
      : options_(options), state_(state), stats_(stats) {}

  void stop() { stopping_ = true; }
  // ListAndWatch streams open now, opened ever, and when the last one ended.
  int open_streams() const { return streams_.load(); }
  uint64_t streams_opened() const { return streams_opened_.load(); }
  std::chrono::steady_clock::time_point last_stream_end() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_stream_end_ns_.load()));
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*, v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    // kubelet holds this stream open for as long as it has the plugin: its
    // end, with no other one open, is kubelet gone (DevicePluginServer::run).
    struct Open {
      Service& s;
      explicit Open(Service& service) : s(service) {
        s.streams_.fetch_add(1);
        s.streams_opened_.fetch_add(1);
      }
      ~Open() {
        s.last_stream_end_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
        s.streams_.fetch_sub(1);
      }
    } open(*this);
    uint64_t sent = ~uint64_t{0};
    while (!stopping_ && !ctx->IsCancelled() && !state_.stopped()) {
      const uint64_t version = state_.devices_version();
      if (version != sent) {
        v1beta1::ListAndWatchResponse msg;
        fill_list(state_.devices(), options_.slots, msg);
        if (!writer->Write(msg)) break;  // kubelet went away
        stats_.list_updates.fetch_add(1, std::memory_order_relaxed);
        sent = version;
      }
      state_.wait_devices(sent, std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override {
    const std::vector<GpuDevice> devices = state_.devices();
    for (const auto& cr : req->container_requests()) {
      v1beta1::ContainerPreferredAllocationResponse* resp = out->add_container_responses();
      std::vector<std::string> picked(cr.must_include_deviceids().begin(), cr.must_include_deviceids().end());
      std::map<const GpuDevice*, int> taken;
      for (const std::string& id : picked) ++taken[device_of_id(devices, id, options_.slots)];
      // The IDs asked spread evenly over the cards the record names (one a
      // card for fracpack.io/gpu; the share's percent of its card for
      // tke's vcuda-core), so kubelet's topology and its view of which card
      // is busy match the placement.
      // kubelet asks right after the bind reached it: the pod watch may
      // still be a moment behind.
      if (auto a = state_.peek(cr.allocation_size(), std::chrono::steady_clock::now() + std::min(options_.preferred_wait, options_.record_wait));
          a && !a->cards.empty()) {
        const int per_card = std::max(1, cr.allocation_size() / static_cast<int>(a->cards.size()));
        for (const scheduling::CardShare& share : a->cards) {
          for (const std::string& id : cr.available_deviceids()) {
            if (static_cast<int>(picked.size()) >= cr.allocation_size()) break;
            const GpuDevice* d = device_of_id(devices, id, options_.slots);
            if (d != nullptr && d->index == share.index && taken[d] < per_card &&
                std::find(picked.begin(), picked.end(), id) == picked.end()) {
              picked.push_back(id);
              ++taken[d];
            }
          }
        }
      }
      for (const std::string& id : picked) {
        if (resp->deviceids_size() < cr.allocation_size()) resp->add_deviceids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req, v1beta1::AllocateResponse* out) override {
    for (const auto& cr : req->container_requests()) {
      const int n = cr.devices_ids_size();
      auto a = state_.allocate(n, std::chrono::steady_clock::now() + options_.record_wait);
      Status filled = a ? fill_container(*a, state_.devices(), options_, *out->add_container_responses()) : Status(a.error());
      if (a && !filled.ok()) state_.refuse_served(a->pod_uid, filled.message());
      if (!filled.ok()) {
        stats_.allocation_failures.fetch_add(1, std::memory_order_relaxed);
        report(options_, true, "Allocate of " + std::to_string(n) + " device(s) refused: " + filled.message());
        // kubelet shows this message on the pod (UnexpectedAdmissionError).
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "fracpack: " + filled.message());
      }
      stats_.allocations.fetch_add(1, std::memory_order_relaxed);
      std::string cards;
      for (const scheduling::CardShare& c : a->cards) {
        cards += (cards.empty() ? "" : ", ") + std::to_string(c.index) + " " + c.uuid + " (" + k8s::cores_text(c.cores) + "%, " +
                 std::to_string(c.memory_mib) + " MiB)";
      }
      report(options_, false, "allocated " + a->pod_key + " container " + a->container + ": " + cards);
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  const DevicePluginOptions& options_;
  DevicesAndPods& state_;
  DevicePluginStats& stats_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};
  std::atomic<uint64_t> streams_opened_{0};
  std::atomic<std::chrono::steady_clock::rep> last_stream_end_ns_{0};
};

DevicePluginServer::DevicePluginServer(DevicePluginOptions options, DevicesAndPods& state)
    : options_(std::move(options)), state_(state) {}

DevicePluginServer::~DevicePluginServer() { shutdown(); }

std::string DevicePluginServer::socket_path() const { return options_.plugin_dir + "/" + options_.socket; }
std::string DevicePluginServer::kubelet_socket() const { return options_.plugin_dir + "/kubelet.sock"; }

void DevicePluginServer::shutdown() {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<Service> service;
  {
    std::lock_guard lock(mu_);
    server = std::move(server_);
    service = std::move(service_);
  }
  if (service != nullptr) service->stop();
  if (server != nullptr) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server->Wait();
  }
}

Status DevicePluginServer::serve() {
  shutdown();
  std::error_code ec;
  std::filesystem::remove(socket_path(), ec);  // a stale socket from an earlier run
  auto service = std::make_unique<Service>(options_, state_, stats_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path(), grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return Error{"cannot serve the device plugin on " + socket_path()};
  std::lock_guard lock(mu_);
  server_ = std::move(server);
  service_ = std::move(service);
  return Status::Ok();
}

Status DevicePluginServer::register_with_kubelet() {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket(), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(options_.socket);
  req.set_resource_name(options_.resource);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (!s.ok()) return Error{"registering " + options_.resource + " with kubelet at " + kubelet_socket() + ": " + s.error_message()};
  stats_.registrations.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

uint64_t DevicePluginServer::streams_opened() {
  std::lock_guard lock(mu_);
  return service_ == nullptr ? 0 : service_->streams_opened();
}

bool DevicePluginServer::kubelet_holds_no_stream(std::chrono::steady_clock::time_point registered_at, uint64_t opened_before) {
  std::lock_guard lock(mu_);
  if (service_ == nullptr) return true;
  if (service_->open_streams() > 0) return false;
  const auto now = std::chrono::steady_clock::now();
  // A stream opened since the registration and ended: kubelet replaces it
  // within milliseconds when it keeps the plugin. None opened yet: a busy
  // kubelet may take a while to dial back.
  if (service_->streams_opened() > opened_before) return now - std::max(registered_at, service_->last_stream_end()) >= kStreamGrace;
  return now - registered_at >= kFirstStreamGrace;
}

Status DevicePluginServer::start() {
  if (Status s = serve(); !s.ok()) return s;
  return register_with_kubelet();
}

namespace {

// The identity of a file ({} when absent). A socket recreated may get the
// inode number just freed, so the change time is part of it.
struct FileId {
  ino_t inode = 0;
  int64_t changed_ns = 0;
  bool operator==(const FileId&) const = default;
};

FileId file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

}  // namespace

void DevicePluginServer::run(std::stop_token stop, std::chrono::milliseconds retry) {
  // inotify on the directory wakes us at once; the poll timeout re-checks
  // anyway (a directory recreated, events lost).
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd >= 0) inotify_add_watch(fd, options_.plugin_dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM);
  bool registered = false;
  bool waiting_reported = false;
  int registrations = 0;
  FileId kubelet;  // kubelet's socket as it was at the last attempt
  auto next_try = std::chrono::steady_clock::now();
  auto registered_at = next_try;
  uint64_t opened_before = 0;  // streams opened before the last registration
  bool ever_registered = false;
  std::string last_error;
  // kubelet binds its socket (the file appears, inotify wakes us) a moment
  // before it listens on it: a registration in that window is refused. So
  // after kubelet's socket appears, or its stream ended, refusals are
  // retried soon, doubling up to `retry`.
  constexpr std::chrono::milliseconds kFirstBackoff{10};
  std::chrono::milliseconds backoff = retry;
  auto set_registered = [&](bool on) {
    registered = on;
    stats_.registered.store(on, std::memory_order_relaxed);
    state_.set_registered(on);  // the published cards say whether kubelet can hand them out
  };
  while (!stop.stop_requested()) {
    const FileId now_kubelet = file_id(kubelet_socket());
    const bool kubelet_there = now_kubelet.inode != 0;
    const bool kubelet_new = !(now_kubelet == kubelet);
    const bool ours = file_id(socket_path()).inode != 0;
    // kubelet (re)started: it sees every bound pod at once. (Also when the
    // plugin had already seen it stop and published itself unregistered.)
    if (ever_registered && kubelet_new && kubelet_there) state_.kubelet_restarted();
    if (kubelet_new && kubelet_there) backoff = kFirstBackoff;
    if (registered && !kubelet_there) {
      // kubelet is restarting: it wipes this directory before it serves
      // again. Serving afresh now would have that socket wiped too (and a
      // second registration): wait for its socket instead.
      set_registered(false);
      kubelet = now_kubelet;
      report(options_, true, "kubelet's registration socket " + kubelet_socket() + " is gone (kubelet restarting): waiting for it");
      waiting_reported = true;
    } else if (registered && kubelet_holds_no_stream(registered_at, opened_before)) {
      // kubelet stopped (its socket stays behind) or dropped the plugin.
      // Until it has the plugin again, the cards are published as not
      // registered, so no pod is bound here meanwhile: kubelet 1.20 admits
      // the pods bound to it before a plugin can register again after its
      // restart, and fails them ("Available: 0"). Retry at once: a kubelet
      // that is there takes the registration.
      set_registered(false);
      next_try = std::chrono::steady_clock::now();
      backoff = kFirstBackoff;
      report(options_, true, "kubelet holds no ListAndWatch stream of " + options_.resource +
                                 " (kubelet stopped?): its cards are published as not registered until kubelet registers the plugin again");
    } else if (!registered && !kubelet_there) {
      if (!waiting_reported) report(options_, true, "waiting for kubelet's registration socket " + kubelet_socket());
      waiting_reported = true;
      kubelet = now_kubelet;
    } else if ((!registered && (std::chrono::steady_clock::now() >= next_try || kubelet_new)) ||
               (registered && (!ours || kubelet_new))) {
      // kubelet (re)created its socket: register at once (it admits the
      // pods bound to it within milliseconds). kubelet restarted but our
      // socket survived: registering again is enough; otherwise serve
      // afresh first.
      opened_before = ours && registered ? streams_opened() : 0;  // start() serves afresh: a new count
      Status s = ours && registered ? register_with_kubelet() : start();
      set_registered(s.ok());
      ever_registered = ever_registered || s.ok();
      registered_at = std::chrono::steady_clock::now();
      kubelet = now_kubelet;
      waiting_reported = false;
      if (!s.ok()) {
        next_try = std::chrono::steady_clock::now() + std::min(backoff, retry);
        backoff = std::min(backoff * 2, retry);
        if (s.message() != last_error) report(options_, true, s.message() + " (retrying)");
        last_error = s.message();
      } else {
        last_error.clear();
        ++registrations;
        report(options_, false, std::string(registrations == 1 ? "registered " : "registered again (kubelet restarted) ") +
                                    options_.resource + " with kubelet at " + kubelet_socket());
      }
    }
    // Wake for the next try if it is due before the periodic re-check (only
    // while kubelet's socket is there: without it, inotify wakes us when it
    // appears, and there is no try to make).
    stats_.wakeups.fetch_add(1, std::memory_order_relaxed);
    auto wait = std::chrono::milliseconds(200);
    if (!registered && file_id(kubelet_socket()).inode != 0) {
      const auto until_try = std::chrono::duration_cast<std::chrono::milliseconds>(next_try - std::chrono::steady_clock::now());
      wait = std::clamp(until_try, std::chrono::milliseconds(1), wait);
    }
    pollfd p{fd, POLLIN, 0};
    if (fd >= 0 && ::poll(&p, 1, static_cast<int>(wait.count())) > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    } else if (fd < 0) {
      std::this_thread::sleep_for(wait);
    }
  }
  if (fd >= 0) ::close(fd);
  set_registered(false);
  shutdown();
}

}  // namespace fracpack::node
