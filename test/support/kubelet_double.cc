#include "test/support/kubelet_double.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>

#include "node/api/deviceplugin.grpc.pb.h"

namespace fracpack::test {

class KubeletDouble::Registration final : public v1beta1::Registration::Service {
 public:
  explicit Registration(KubeletDouble& k) : k_(k) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req, v1beta1::Empty*) override {
    // kubelet's server.Register: the version, then an extended resource name.
    if (req->version() != "v1beta1") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "requested device plugin version " + req->version() + " is not supported");
    }
    const std::string& r = req->resource_name();
    if (r.find('/') == std::string::npos || r.rfind("kubernetes.io/", 0) == 0 || r.find("requests.") == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "invalid extended resource name: " + r);
    }
    std::lock_guard lock(k_.mu_);
    ++k_.register_calls_;
    if (k_.stopped_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused (kubelet stopped)");
    if (k_.refusals_ > 0) {
      --k_.refusals_;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused (kubelet's socket not yet listening)");
    }
    k_.endpoint_ = req->endpoint();
    k_.resource_ = r;
    k_.preferred_available_ = req->options().get_preferred_allocation_available();
    k_.pending_ = true;
    ++k_.registrations_;
    k_.changed_.notify_all();
    return grpc::Status::OK;
  }

 private:
  KubeletDouble& k_;
};

KubeletDouble::KubeletDouble(std::string dir) : dir_(std::move(dir)) {
  std::filesystem::create_directories(dir_);
  serve();
  worker_ = std::thread([this] { work(); });
}

KubeletDouble::~KubeletDouble() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    changed_.notify_all();
  }
  worker_.join();
  std::lock_guard dial(dial_mu_);
  stop_stream();
  if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
}

void KubeletDouble::serve() {
  registration_ = std::make_unique<Registration>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(registration_.get());
  server_ = builder.BuildAndStart();
}

void KubeletDouble::stop_stream() {
  std::shared_ptr<grpc::ClientContext> ctx;
  {
    std::lock_guard lock(mu_);
    ctx = stream_ctx_;
  }
  if (ctx != nullptr) ctx->TryCancel();
  if (stream_thread_.joinable()) stream_thread_.join();
}

void KubeletDouble::work() {
  for (;;) {
    std::string endpoint;
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return stopping_ || pending_; });
      if (stopping_) return;
      pending_ = false;
      endpoint = endpoint_;
    }
    std::lock_guard dial(dial_mu_);
    stop_stream();
    // kubelet's dial: insecure, authority "localhost", then the options and
    // ListAndWatch, kept open.
    grpc::ChannelArguments args;
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
    auto channel = grpc::CreateCustomChannel("unix:" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials(), args);
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      v1beta1::Empty empty;
      v1beta1::DevicePluginOptions options;
      if (!stub->GetDevicePluginOptions(&ctx, empty, &options).ok()) continue;
    }
    auto stream_ctx = std::make_shared<grpc::ClientContext>();
    {
      std::lock_guard lock(mu_);
      channel_ = channel;
      stream_ctx_ = stream_ctx;
      devices_.clear();
    }
    stream_thread_ = std::thread([this, channel, stream_ctx] {
      auto s = v1beta1::DevicePlugin::NewStub(channel);
      v1beta1::Empty empty;
      auto reader = s->ListAndWatch(stream_ctx.get(), empty);
      v1beta1::ListAndWatchResponse msg;
      while (reader->Read(&msg)) {
        std::lock_guard lock(mu_);
        devices_.clear();
        for (const auto& d : msg.devices()) devices_[d.id()] = d.health();
        ++list_messages_;
        last_list_at_ = std::chrono::steady_clock::now();
        changed_.notify_all();
      }
      reader->Finish();
    });
  }
}

bool KubeletDouble::wait_registered(const std::string& resource, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return resource_ == resource && list_messages_ > 0 && !pending_ && !devices_.empty(); });
}

std::map<std::string, std::string> KubeletDouble::devices() const {
  std::lock_guard lock(mu_);
  return devices_;
}

bool KubeletDouble::wait_devices(const std::function<bool(const std::map<std::string, std::string>&)>& pred,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return pred(devices_); });
}

Result<std::vector<KubeletDouble::Admitted>> KubeletDouble::admit(const std::string& pod_uid, const std::vector<Container>& containers) {
  std::vector<Admitted> out;
  std::shared_ptr<grpc::Channel> channel;
  bool preferred_available = false;
  {
    std::lock_guard lock(mu_);
    channel = channel_;
    preferred_available = preferred_available_;
  }
  if (channel == nullptr) return Error{"no device plugin registered"};
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  auto fail = [&](const std::string& why) -> Result<std::vector<Admitted>> {
    remove_pod(pod_uid);
    return Error{why};
  };
  for (const Container& c : containers) {
    if (c.devices <= 0) continue;
    Admitted a;
    a.container = c.name;
    std::vector<std::string> available;
    {
      std::lock_guard lock(mu_);
      std::set<std::string> held;
      for (const auto& [uid, ids] : held_) held.insert(ids.begin(), ids.end());
      for (const auto& [id, health] : devices_) {
        if (health == "Healthy" && held.count(id) == 0) available.push_back(id);
      }
    }
    if (static_cast<int>(available.size()) < c.devices) {
      return fail("requested number of devices unavailable for " + resource() + ". Requested: " + std::to_string(c.devices) +
                  ", Available: " + std::to_string(available.size()));
    }
    std::vector<std::string> chosen;
    if (preferred_available) {
      v1beta1::PreferredAllocationRequest req;
      auto* cr = req.add_container_requests();
      for (const std::string& id : available) cr->add_available_deviceids(id);
      cr->set_allocation_size(c.devices);
      v1beta1::PreferredAllocationResponse resp;
      grpc::ClientContext ctx;
      if (stub->GetPreferredAllocation(&ctx, req, &resp).ok() && resp.container_responses_size() == 1) {
        for (const std::string& id : resp.container_responses(0).deviceids()) {
          a.preferred.push_back(id);
          if (std::find(available.begin(), available.end(), id) != available.end() &&
              std::find(chosen.begin(), chosen.end(), id) == chosen.end() && static_cast<int>(chosen.size()) < c.devices) {
            chosen.push_back(id);
          }
        }
      }
    }
    for (const std::string& id : available) {  // kubelet fills the rest itself
      if (static_cast<int>(chosen.size()) >= c.devices) break;
      if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) chosen.push_back(id);
    }
    v1beta1::AllocateRequest req;
    auto* cr = req.add_container_requests();
    for (const std::string& id : chosen) cr->add_devices_ids(id);
    v1beta1::AllocateResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub->Allocate(&ctx, req, &resp);
    if (!s.ok()) return fail("UnexpectedAdmissionError: Allocate failed due to " + s.error_message());
    if (resp.container_responses_size() != 1) return fail("Allocate answered " + std::to_string(resp.container_responses_size()) + " containers for 1");
    const auto& r = resp.container_responses(0);
    for (const auto& [k, v] : r.envs()) a.envs[k] = v;
    for (const auto& d : r.cdi_devices()) a.cdi_devices.push_back(d.name());
    for (const auto& m : r.mounts()) a.mounts.push_back({m.container_path(), m.host_path(), m.read_only()});
    a.device_ids = chosen;
    {
      std::lock_guard lock(mu_);
      held_[pod_uid].insert(chosen.begin(), chosen.end());
    }
    out.push_back(std::move(a));
  }
  return out;
}

void KubeletDouble::remove_pod(const std::string& pod_uid) {
  std::lock_guard lock(mu_);
  held_.erase(pod_uid);
}

void KubeletDouble::restart() {
  std::lock_guard dial(dial_mu_);
  stop_stream();
  {
    std::lock_guard lock(mu_);
    stopped_ = false;
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  {
    std::lock_guard lock(mu_);
    channel_.reset();
    devices_.clear();
    resource_.clear();
  }
  // CleanupPluginDirectory: everything but the checkpoint goes.
  // The plugin may remove or recreate its socket meanwhile: no step throws.
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) files.push_back(entry.path());
  for (const auto& f : files) {
    if (f.filename() != "kubelet_internal_checkpoint") std::filesystem::remove(f, ec);
  }
  serve();
}

void KubeletDouble::stop() {
  std::lock_guard dial(dial_mu_);
  {
    std::lock_guard lock(mu_);
    stopped_ = true;  // registrations refused from now on
    channel_.reset();
    devices_.clear();
    resource_.clear();
  }
  stop_stream();
}

void KubeletDouble::refuse_registrations(int n) {
  std::lock_guard lock(mu_);
  refusals_ = n;
}

int KubeletDouble::register_calls() const {
  std::lock_guard lock(mu_);
  return register_calls_;
}

int KubeletDouble::registrations() const {
  std::lock_guard lock(mu_);
  return registrations_;
}

int KubeletDouble::list_messages() const {
  std::lock_guard lock(mu_);
  return list_messages_;
}

std::string KubeletDouble::resource() const {
  std::lock_guard lock(mu_);
  return resource_;
}

std::chrono::steady_clock::time_point KubeletDouble::last_list_at() const {
  std::lock_guard lock(mu_);
  return last_list_at_;
}

}  // namespace fracpack::test
