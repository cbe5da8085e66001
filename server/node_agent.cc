#include "server/node_agent.h"

#include "common/text.h"

#include <pthread.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "k8s/contract/profiles.h"
#include "node/agent_state.h"
#include "node/devices_publisher.h"
#include "node/mps_status.h"
#include "node/records.h"
#include "server/log.h"

namespace fracpack::server {

namespace {

std::string count(size_t n) { return std::to_string(n); }

}  // namespace

NodeAgent::NodeAgent(NodeAgentOptions options) : options_(std::move(options)) {
  record_rules_.contract = options_.contract ? options_.contract : k8s::default_contract(options_.names);
  record_rules_.scheduler_names = options_.scheduler_names;
  record_rules_.trust = options_.trust;
  // The resource the plugin serves is the one the contract's pods ask devices with.
  options_.plugin.resource = record_rules_.contract->device_resource();
  // A unit that fixes the IDs a card has (tke: percent, 100 a card) wins
  // over --ids-per-card: kubelet asks as many IDs as the pod's value.
  if (const int ids = record_rules_.contract->device_ids_per_card(); ids > 0) options_.plugin.slots = ids;
  // A card serves as many containers as it has device IDs (its maxSharers).
  state_.set_card_slots(options_.plugin.slots);
}

NodeAgent::~NodeAgent() { stop(); }

Status NodeAgent::start() {
  const NodeAgentOptions& o = options_;
  if (o.node_name.empty()) return Error{"no node name: give --node-name or set NODE_NAME (the DaemonSet passes spec.nodeName)"};

  // What was allocated before a restart, before any pod is seen.
  if (!o.state_file.empty()) {
    auto saved = node::load_agent_state(o.state_file);
    if (!saved) return Error{saved.message() + " (the agent wrote it; remove it to start afresh)"};
    if (!saved->served.empty() || !saved->holdings.empty()) {
      log_info("state restored", {{"file", o.state_file}, {"pods", count(saved->served.size())}, {"holding", count(saved->holdings.size())}});
    }
    state_.restore(std::move(*saved));
    state_.set_persist([this](const node::AgentState& state) {
      const Status s = node::save_agent_state(options_.state_file, state);
      if (!s.ok()) {
        state_errors_.fetch_add(1);
        log_error("state file not written", {{"reason", s.message()}});
      }
    });
  }

  // The cards.
  std::string no_devices;
  auto nvml = node::Nvml::open(o.nvml_library, o.sysfs);
  if (!nvml) {
    no_devices = nvml.message();
  } else {
    nvml_ = std::move(*nvml);
    auto found = nvml_->discover();
    if (!found) {
      no_devices = found.message();
    } else if (found->devices.empty()) {
      no_devices = "NVML (driver " + found->driver_version + ") finds no GPU on this node";
    } else {
      driver_version_ = found->driver_version;
      for (node::GpuDevice& d : found->devices) {
        // A MIG instance is held to its slice by the hardware, whatever the mode.
        d.isolation = d.parent_uuid.empty() ? o.plugin.isolation.mode : scheduling::CardIsolation::kMig;
        if (d.isolation == scheduling::CardIsolation::kMps || d.isolation == scheduling::CardIsolation::kHamiCore) {
          d.isolation_problem = "its limiter (" + std::string(scheduling::isolation_name(d.isolation)) + ") is not checked yet";
        }
      }
      for (const node::GpuDevice& d : found->devices) {
        log_info("device", {{"index", std::to_string(d.index)}, {"uuid", d.uuid}, {"model", d.model},
                            {"memory_mib", std::to_string(d.memory_mib)}, {"numa", std::to_string(d.numa)},
                            {"healthy", d.healthy ? "true" : "false"}, {"problem", d.problem}});
      }
      state_.set_devices(std::move(found->devices));
    }
  }
  if (!no_devices.empty()) {
    if (!o.idle_without_devices) return Error{no_devices + " (set nodeAgent.withoutDevices: idle to keep the agent up on such nodes)"};
    idle_reason_ = no_devices;
    nvml_.reset();
    log_warn("no devices: idling", {{"node", o.node_name}, {"reason", no_devices}});
  }

  add_metrics();
  if (idle()) return serve_http();

  // The pods bound here, then the plugin, health and the annotation.
  pods_ = std::make_unique<node::PodWatch>(state_, o.node_name, record_rules_, pod_selection());
  if (o.client.endpoint.host.empty()) {
    log_warn("no API server: Allocate answers from the pod watch alone", {{"node", o.node_name}});
  } else {
    state_.set_pod_check([this](const node::Assignment& a) { return check_pod(a); });
    state_.set_waiting_lister([this] { return list_waiting(); });
  }
  if (o.plugin.isolation.mode == scheduling::CardIsolation::kHamiCore) {
    // The /etc/ld.so.preload each container gets, naming the library.
    std::error_code ec;
    std::filesystem::create_directories(o.plugin.isolation.hami_core_dir, ec);
    // Written aside and renamed: running containers have it mounted.
    const std::string preload = node::hami_core_preload_file(o.plugin.isolation);
    const std::string tmp = preload + ".tmp";
    std::ofstream f(tmp, std::ios::trunc);
    f << node::hami_core_preload_text();
    f.close();
    ::chmod(tmp.c_str(), 0644);
    if (ec || !f || std::rename(tmp.c_str(), preload.c_str()) != 0) {
      return Error{"nodeAgent.hamiCoreDir: cannot write " + preload + (ec ? ": " + ec.message() : std::string())};
    }
  }
  check_limiters();  // before kubelet or the extender sees a card
  limiter_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "limiter");
    limiter_loop(st);
  });
  k8s::InformerOptions io;
  io.resource = "/api/v1/pods";
  io.field_selector = node::pods_on_node_selector(o.node_name);
  if (o.tune_informer) o.tune_informer(io);
  informer_ = std::make_unique<k8s::Informer>(o.client, io, *pods_);
  informer_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "pod-informer");
    informer_->run(st);
  });

  node::DevicePluginOptions po = o.plugin;
  po.report = [](bool problem, const std::string& message) {
    if (problem) {
      log_warn("device plugin", {{"reason", message}});
    } else {
      log_info("device plugin", {{"event", message}});
    }
  };
  plugin_ = std::make_unique<node::DevicePluginServer>(po, state_);
  plugin_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "device-plugin");
    plugin_->run(st, options_.retry);
  });
  health_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "nvml-health");
    health_loop(st);
  });
  publish_thread_ = std::jthread([this](std::stop_token st) {
    pthread_setname_np(pthread_self(), "publisher");
    publish_loop(st);
  });
  log_info("node agent started", {{"node", o.node_name}, {"resource", o.plugin.resource}, {"devices", count(state_.devices().size())},
                                  {"ids_per_card", std::to_string(o.plugin.slots)}, {"plugin_dir", o.plugin.plugin_dir}});
  return serve_http();
}

Status NodeAgent::serve_http() {
  // Last: its handlers read what start() built.
  if (!options_.serve_http) return Status::Ok();
  HttpOptions ho;
  ho.address = options_.listen_address;
  ho.port = options_.listen_port;
  ho.threads = 1;
  ho.max_body_bytes = 1 << 16;
  http_ = std::make_unique<HttpServer>(ho, [this](HttpRequest&& r, Reply reply) { handle(std::move(r), std::move(reply)); });
  if (Status s = http_->start(); !s.ok()) return s;
  log_info("listening", {{"address", ho.address + ":" + std::to_string(http_->port())}});
  return Status::Ok();
}

void NodeAgent::stop() {
  for (std::jthread* t : {&informer_thread_, &plugin_thread_, &health_thread_, &publish_thread_, &limiter_thread_}) t->request_stop();
  state_.stop();  // wakes the publisher and any Allocate waiting for its pod
  for (std::jthread* t : {&informer_thread_, &plugin_thread_, &health_thread_, &publish_thread_, &limiter_thread_}) {
    if (t->joinable()) t->join();
  }
  if (http_) http_->stop();
}

void NodeAgent::health_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    for (const node::HealthEvent& e : nvml_->wait_health(options_.health_wait)) {
      health_events_.fetch_add(1);
      if (state_.mark_unhealthy(e.uuid, e.problem)) log_warn("device unhealthy", {{"uuid", e.uuid}, {"problem", e.problem}});
    }
  }
}

void NodeAgent::limiter_loop(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, options_.limiter_check, [] { return false; });
    }
    if (!stop.stop_requested()) check_limiters();
  }
}

// MPS: the control daemon's status file (node/mps_status.h), which
// `fracpack mps-control-daemon` rewrites at each heartbeat. HAMi-core: its
// library on the node. A card whose limiter cannot serve takes nothing new
// (its pods keep running: MPS clients lose their server, HAMi-core's are
// already loaded).
void NodeAgent::check_limiters() {
  const node::IsolationOptions& iso = options_.plugin.isolation;
  std::optional<Result<std::string>> mps_file;
  for (const node::GpuDevice& d : state_.devices()) {
    std::string problem;
    if (d.isolation == scheduling::CardIsolation::kMps) {
      if (!mps_file) {
        std::ifstream f(iso.mps_status_file());
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        mps_file = f ? Result<std::string>(std::move(text)) : Result<std::string>(Error{"cannot read " + iso.mps_status_file()});
      }
      const Status serves = node::mps_serves(*mps_file, d.uuid, std::chrono::system_clock::now(), options_.mps_stale_after);
      if (!serves.ok()) problem = serves.message();
    } else if (d.isolation == scheduling::CardIsolation::kHamiCore) {
      struct stat st {};
      if (::stat(iso.hami_core_library.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        problem = "HAMi-core's library " + iso.hami_core_library + " is not on the node (nodeAgent.hamiCoreLibrary): a share here would not be enforced";
      }
    }
    // A card left in EXCLUSIVE_PROCESS (an MPS daemon runs, or one was
    // killed) takes one process at a time: under any other isolation its
    // second container would find it busy. (Under mps the daemon's status
    // says whether it serves the card.)
    if (problem.empty() && nvml_ && d.parent_uuid.empty() && d.isolation != scheduling::CardIsolation::kMps) {
      if (auto mode = nvml_->compute_mode(d.uuid); mode && *mode == node::Nvml::kComputeExclusiveProcess) {
        problem = "the card is in EXCLUSIVE_PROCESS compute mode (an MPS daemon runs on this node, or left it so), but this agent's isolation is " +
                  std::string(scheduling::isolation_name(d.isolation)) + ": stop fracpack mps-control-daemon here, or run the agent with isolation mps";
      }
    }
    if (state_.set_limiter_problem(d.uuid, problem)) {
      limiter_changes_.fetch_add(1);
      if (problem.empty()) {
        log_info("card limiter ready", {{"uuid", d.uuid}, {"isolation", scheduling::isolation_name(d.isolation)}});
      } else {
        log_warn("card limiter not ready", {{"uuid", d.uuid}, {"isolation", scheduling::isolation_name(d.isolation)}, {"reason", problem}});
      }
    }
  }
}

k8s::Selection NodeAgent::pod_selection() const {
  k8s::Selection sel = record_rules_.contract->selection();
  sel.container_env = true;  // what a container sets itself may lift its limit (k8s/limiter_guard.h)
  return sel;
}

void NodeAgent::publish_loop(std::stop_token stop) {
  node::DevicesPublisher publisher(options_.client, options_.node_name, options_.names.devices);
  std::string written;  // the value last seen on the server
  auto recheck = std::chrono::steady_clock::now();
  uint64_t seen = state_.devices_version();
  while (!stop.stop_requested()) {
    const std::string value = node::devices_annotation(state_.devices(), options_.plugin.slots, state_.registered());
    const auto now = std::chrono::steady_clock::now();
    auto next = now + options_.publish_recheck;
    if (value != written || now >= recheck) {
      auto r = publisher.publish(value);
      if (r) {
        written = value;
        recheck = now + options_.publish_recheck;
        published_.store(true);
        if (*r) {
          annotation_writes_.fetch_add(1);
          log_info("devices published", {{"node", options_.node_name}, {"annotation", options_.names.devices}});
        }
        std::lock_guard lock(error_mu_);
        publish_error_.clear();
      } else {
        annotation_errors_.fetch_add(1);
        next = now + options_.retry;
        recheck = next;  // try again after `retry`, not at once
        std::lock_guard lock(error_mu_);
        if (publish_error_ != r.message()) log_warn("devices not published", {{"reason", r.message()}});
        publish_error_ = r.message();
      }
    }
    seen = state_.wait_devices(seen, std::min(next, recheck));
  }
}

Status NodeAgent::ready() const {
  if (idle()) return Status::Ok();
  std::string why;
  auto add = [&why](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
  if (!plugin_ || !plugin_->stats().registered.load()) add("not registered with kubelet");
  if (!pods_ || !pods_->synced()) add("the pods on the node are not listed yet");

  if (!published_.load()) {
    std::lock_guard lock(error_mu_);
    add("devices not published" + (publish_error_.empty() ? std::string() : ": " + publish_error_));
  }
  if (!why.empty()) return Error{why};
  return Status::Ok();
}

uint16_t NodeAgent::port() const { return http_ ? http_->port() : 0; }

node::DevicesAndPods::PodCheck NodeAgent::check_pod(const node::Assignment& a) {
  const ObjectKey key = split_object_key(a.pod_key);
  const std::string path = "/api/v1/namespaces/" + k8s::url_encode(key.namespace_name) + "/pods/" + k8s::url_encode(key.name);
  Result<k8s::HttpResponse> r = Error{"no request"};
  {
    std::lock_guard lock(check_mu_);
    if (!check_client_) check_client_ = std::make_unique<k8s::ApiClient>(options_.client);
    r = check_client_->request("GET", path);
  }
  auto gone = [&](const std::string& why) { return node::DevicesAndPods::PodCheck{Error{"pod " + a.pod_key + " " + why}, true}; };
  if (!r) return node::DevicesAndPods::PodCheck{Error{r.message()}, false};
  if (r->status == 404) return gone("no longer exists");
  if (r->status != 200) return node::DevicesAndPods::PodCheck{Error{"GET " + path + ": HTTP " + std::to_string(r->status)}, false};
  auto pod = k8s::parse_pod(r->body, pod_selection());
  if (!pod) return node::DevicesAndPods::PodCheck{Error{"GET " + path + ": " + pod.message()}, false};
  if (pod->meta.uid != a.pod_uid) return gone("was re-created (another UID)");
  if (pod->node_name != options_.node_name) return gone("is not bound to this node");
  if (pod->terminal()) {
    auto finished = gone("has finished (phase " + pod->phase + (pod->reason.empty() ? "" : ", reason " + pod->reason) +
                         "): kubelet rejected or ended it");
    finished.failed = node::failed_at_allocate(*pod);
    return finished;
  }
  if (pod->meta.deleting) return gone("is being deleted");
  if (a.container.empty()) return node::DevicesAndPods::PodCheck{Status::Ok(), true};  // only: does it still wait here
  const node::WaitingPod fresh = node::waiting_pod(*pod, record_rules_, options_.node_name);
  if (!fresh.cards) return gone("cannot be served any more: " + fresh.cards.message());
  for (size_t i = 0; i < fresh.containers.size(); ++i) {
    if (fresh.containers[i].name == a.container) {
      const auto& cards = (*fresh.cards)[i];
      const bool same = cards.size() == a.cards.size() &&
                        std::equal(cards.begin(), cards.end(), a.cards.begin(), [](const scheduling::CardShare& x, const scheduling::CardShare& y) {
                          return x.index == y.index && x.uuid == y.uuid && x.memory_mib == y.memory_mib && x.cores == y.cores;
                        });
      if (same) return node::DevicesAndPods::PodCheck{Status::Ok(), true};
      return gone("has another record now than the pod watch showed");
    }
  }
  return gone("has no container " + a.container + " asking for cards");
}

Result<std::vector<node::WaitingPod>> NodeAgent::list_waiting() {
  // From the API server's watch cache (resourceVersion=0), as kubelet's
  // own relist reads it, indexed by node there: a read from etcd would
  // read every pod of the cluster for each pod admitted here (before
  // Kubernetes 1.31). With one API server this holds every pod kubelet
  // has seen; behind a load balancer another's cache may lag
  // (allocation_matcher.h, "What this cannot see").
  const std::string path = "/api/v1/pods?resourceVersion=0&fieldSelector=" + k8s::url_encode(node::pods_on_node_selector(options_.node_name));
  Result<k8s::HttpResponse> r = Error{"no request"};
  {
    std::lock_guard lock(check_mu_);
    if (!check_client_) check_client_ = std::make_unique<k8s::ApiClient>(options_.client);
    r = check_client_->request("GET", path);
  }
  if (!r) return Error{r.message()};
  if (r->status != 200) return Error{"GET " + path + ": HTTP " + std::to_string(r->status)};
  return node::waiting_in_list(r->body, record_rules_, options_.node_name, pod_selection());
}

void NodeAgent::handle(HttpRequest&& request, Reply reply) {
  const std::string_view path = request.path();
  if (request.method != "GET" && request.method != "HEAD") {
    reply(HttpResponse(405, "{\"error\":\"method not allowed\"}"));
  } else if (path == "/healthz") {
    reply(HttpResponse(200, "ok\n", "text/plain"));
  } else if (path == "/readyz") {
    const Status s = ready();
    if (s.ok()) {
      reply(HttpResponse(200, idle() ? "idle: " + idle_reason_ + "\n" : "ok\n", "text/plain"));
    } else {
      reply(HttpResponse(503, s.message() + "\n", "text/plain"));
    }
  } else if (path == "/metrics") {
    reply(HttpResponse(200, metrics_.serialize(), "text/plain; version=0.0.4"));
  } else if (path == "/version") {
    reply(HttpResponse(200, options_.version + "\n", "text/plain"));
  } else {
    reply(HttpResponse(404, "{\"error\":\"not found\"}"));
  }
}

void NodeAgent::add_metrics() {
  using Type = SampledFamily::Type;
  metrics_.add_collector([this](std::vector<SampledFamily>& out) {
    auto one = [&out](const char* name, const char* help, Type type, double value) {
      out.push_back(SampledFamily::single(name, help, type, value));
    };
    out.push_back(SampledFamily{"fracpack_node_agent_info", "The agent's node, NVML driver and version.", Type::kGauge,
                                {{{{"node", options_.node_name}, {"driver", driver_version_}, {"version", options_.version}}, 1}}});
    one("fracpack_node_agent_idle", "1 when the agent idles: no NVML or no cards on this node.", Type::kGauge, idle() ? 1 : 0);
    SampledFamily devices{"fracpack_node_agent_device_healthy",
                          "Each card (or MIG instance) the agent advertises: 1 healthy, 0 unhealthy.", Type::kGauge, {}};
    SampledFamily limiters{"fracpack_node_agent_device_limiter_ready",
                           "Each card's share limiter (label isolation): 1 ready, 0 not (the card takes nothing new).", Type::kGauge, {}};
    for (const node::GpuDevice& d : state_.devices()) {
      devices.samples.push_back({{{"index", std::to_string(d.index)}, {"uuid", d.uuid}, {"model", d.model}}, d.healthy ? 1.0 : 0.0});
      limiters.samples.push_back({{{"index", std::to_string(d.index)}, {"uuid", d.uuid}, {"isolation", scheduling::isolation_name(d.isolation)}},
                                  d.isolation_problem.empty() ? 1.0 : 0.0});
    }
    out.push_back(std::move(devices));
    out.push_back(std::move(limiters));
    one("fracpack_node_agent_limiter_changes_total", "Cards whose limiter turned ready or not ready.", Type::kCounter,
        static_cast<double>(limiter_changes_.load()));
    one("fracpack_node_agent_health_events_total", "NVML critical events seen (Xid, ECC, a card that stopped answering).",
        Type::kCounter, static_cast<double>(health_events_.load()));
    one("fracpack_node_agent_waiting_pods", "Pods bound to this node that ask for cards and wait for kubelet's Allocate.",
        Type::kGauge, static_cast<double>(state_.waiting_pods()));
    one("fracpack_node_agent_unusable_records", "Waiting pods whose allocation record cannot serve them (their Allocate is refused).",
        Type::kGauge, pods_ ? static_cast<double>(pods_->unusable().size()) : 0);
    one("fracpack_node_agent_annotation_writes_total", "Writes of the node's device annotation (only when it changed).",
        Type::kCounter, static_cast<double>(annotation_writes_.load()));
    one("fracpack_node_agent_annotation_errors_total", "Failed reads or writes of the node's device annotation.", Type::kCounter,
        static_cast<double>(annotation_errors_.load()));
    one("fracpack_node_agent_state_file_errors_total", "Failed writes of the state file.", Type::kCounter,
        static_cast<double>(state_errors_.load()));
    if (informer_) {
      const k8s::InformerStats st = informer_->stats();
      one("fracpack_node_agent_pod_watch_synced", "1 once the pods on the node are listed.", Type::kGauge, st.synced ? 1 : 0);
      one("fracpack_node_agent_pod_watch_errors_total", "Failed pod list or watch requests.", Type::kCounter, static_cast<double>(st.errors));
    }
    if (plugin_) {
      const node::DevicePluginStats& ps = plugin_->stats();
      one("fracpack_node_agent_registered", "1 while kubelet has the device plugin registered.", Type::kGauge,
          ps.registered.load() ? 1 : 0);
      one("fracpack_node_agent_registrations_total", "Registrations with kubelet (one more after each kubelet restart).",
          Type::kCounter, static_cast<double>(ps.registrations.load()));
      one("fracpack_node_agent_allocations_total", "Containers given their recorded cards (kubelet's Allocate).", Type::kCounter,
          static_cast<double>(ps.allocations.load()));
      one("fracpack_node_agent_allocation_failures_total",
          "Containers refused: no record, an ambiguous match, a missing or unhealthy card.", Type::kCounter,
          static_cast<double>(ps.allocation_failures.load()));
      one("fracpack_node_agent_list_updates_total", "Device lists sent to kubelet (ListAndWatch).", Type::kCounter,
          static_cast<double>(ps.list_updates.load()));
    }
  });
}

}  // namespace fracpack::server
