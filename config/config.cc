// parse_config: the file's sections, read key by key with the strict
// reader (config/strict_yaml.h), then validate() (config/validate.cc).
// An enum that the flags set too is read through its one parser
// (enum_field): config/values.cc, or k8s/ for the contract's profile and the
// bind fence's read.
#include "config/config.h"

#include "common/file_io.h"
#include "config/strict_yaml.h"

namespace fracpack::config {
namespace {

using namespace yaml;

Result<Config> parse_config_keys(std::string_view yaml, const std::string& source, std::vector<std::string>* keys) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Error{source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg};
  }
  Config c;
  Errors err;
  Section top(root, "", source, keys);
  err += top.check_is_map();
  err += top.field("listen", string_field(c.listen));
  err += top.field("urlPrefix", string_field(c.url_prefix));
  err += top.field("metricsListen", string_field(c.metrics_listen));
  err += top.field("ioThreads", int_field(c.io_threads, 1, 64));
  err += top.field("bindWorkers", int_field(c.bind_workers, 1, 256));
  err += top.field("schedulerNames", string_list_field(c.scheduler_names));

  Section security = top.sub("security");
  err += security.check_is_map();
  err += security.field("records", enum_field(c.security.records, &parse_record_signing));
  err += security.field("signingKey", string_field(c.security.signing_key));
  err += security.field("verifyKeys", string_list_field(c.security.verify_keys));
  err += security.field("unsignedBefore", string_field(c.security.unsigned_before));
  err += security.field("allowUnauthenticatedListen", bool_field(c.security.allow_unauthenticated_listen));
  err += security.finish();

  Section admission = top.sub("admission");
  err += admission.check_is_map();
  err += admission.field("listen", string_field(c.admission.listen));
  err += admission.field("certFile", string_field(c.admission.cert_file));
  err += admission.field("keyFile", string_field(c.admission.key_file));
  err += admission.field("recordWriters", string_list_field(c.admission.record_writers));
  err += admission.finish();

  Section tls = top.sub("tls");
  err += tls.check_is_map();
  err += tls.field("certFile", string_field(c.tls.cert_file));
  err += tls.field("keyFile", string_field(c.tls.key_file));
  err += tls.field("clientCaFile", string_field(c.tls.client_ca_file));
  err += tls.field("reloadInterval", duration_field(c.tls.reload_interval, milliseconds(0), std::chrono::hours(24)));
  err += tls.finish();

  Section limits = top.sub("limits");
  err += limits.check_is_map();
  err += limits.field("maxRequestBytes", bytes_field(c.limits.max_request_bytes, 1024, int64_t{1} << 32));
  err += limits.field("maxConnections", int_field(c.limits.max_connections, 1, 1'000'000));
  err += limits.field("maxBodyBytesInFlight", bytes_field(c.limits.max_body_bytes_in_flight, 1024, int64_t{1} << 40));
  err += limits.field("headerTimeout", duration_field(c.limits.header_timeout, milliseconds(100), std::chrono::hours(1)));
  err += limits.field("bodyTimeout", duration_field(c.limits.body_timeout, milliseconds(100), std::chrono::hours(1)));
  err += limits.field("idleTimeout", duration_field(c.limits.idle_timeout, milliseconds(100), std::chrono::hours(24)));
  err += limits.field("writeTimeout", duration_field(c.limits.write_timeout, milliseconds(100), std::chrono::hours(1)));
  err += limits.finish();

  Section cluster = top.sub("cluster");
  err += cluster.check_is_map();
  err += cluster.field("kubeconfig", string_field(c.cluster.kubeconfig));
  err += cluster.field("snapshot", string_field(c.cluster.snapshot));
  err += cluster.field("requestTimeout", duration_field(c.cluster.request_timeout, milliseconds(100), std::chrono::minutes(10)));
  err += cluster.field("assumeTtl", duration_field(c.cluster.assume_ttl, milliseconds(100), std::chrono::hours(24)));
  err += cluster.field("reconcileInterval", duration_field(c.cluster.reconcile_interval, milliseconds(100), std::chrono::hours(1)));
  err += cluster.field("bindTimeout", duration_field(c.cluster.bind_timeout, milliseconds(100), std::chrono::minutes(10)));
  err += cluster.field("bindFenceRead", enum_field(c.cluster.bind_fence_read, &k8s::parse_bind_fence_read));
  err += cluster.field("bindFenceMarker", string_field(c.cluster.bind_fence_marker));
  err += cluster.field("events", bool_field(c.cluster.events));
  err += cluster.finish();

  Section policy = top.sub("policy");
  err += policy.check_is_map();
  err += policy.field("name", string_field(c.policy.name));
  err += policy.field("seed", int_field(c.policy.seed, 0, INT64_MAX));
  err += policy.field("learn", bool_field(c.policy.learn));
  err += policy.field("learnHalfLife", double_field(c.policy.learn_half_life, 1, 1e9));
  err += policy.field("priorWeight", double_field(c.policy.prior_weight, 0, 1e9));
  err += policy.field("checkNodeResources", bool_field(c.policy.check_node_resources));
  err += policy.finish();

  Section placement = top.sub("placement");
  err += placement.check_is_map();
  err += placement.field("unenforcedShares", [&c](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "allow or refuse");
    if (!s) return Error{s.message()};
    if (*s == "allow") {
      c.contract.fracpack_options.unenforced_shares = k8s::UnenforcedShares::kAllow;
    } else if (*s == "refuse") {
      c.contract.fracpack_options.unenforced_shares = k8s::UnenforcedShares::kRefuse;
    } else {
      return w.error("\"" + *s + "\" is not allow or refuse");
    }
    return Status::Ok();
  });
  err += placement.finish();

  Section workload = top.sub("workload");
  err += workload.check_is_map();
  err += workload.field("configMap", string_field(c.workload.config_map));
  err += workload.field("file", string_field(c.workload.file));
  err += workload.finish();

  Section log = top.sub("log");
  err += log.check_is_map();
  err += log.field("level", enum_field(c.log.level, &parse_log_level));
  err += log.field("format", enum_field(c.log.format, &parse_log_format));
  err += log.finish();

  Section contract = top.sub("contract");
  err += contract.check_is_map();
  err += contract.field("profile", enum_field(c.contract.profile, &k8s::parse_profile));
  // Resource and annotation names, checked the same way for every profile.
  auto read_names = [&err](Section& section, std::initializer_list<std::pair<const char*, std::string*>> names) {
    for (const auto& [key, target] : names) {
      std::string* out = target;  // clang 14 cannot capture a structured binding
      err += section.field(key, [out](const YAML::Node& v, const Where& w) -> Status {
        auto s = scalar(v, w, "a resource or annotation name");
        if (!s) return Error{s.message()};
        if (s->empty() || s->find_first_of(" \t\"") != std::string::npos) return w.error("\"" + *s + "\" is not a valid name");
        *out = *s;
        return Status::Ok();
      });
    }
  };
  k8s::ContractNames& n = c.contract.fracpack;
  read_names(contract, {{"gpu", &n.gpu}, {"gpuMemory", &n.gpu_memory}, {"gpuMemoryPercent", &n.gpu_memory_percent}, {"gpuCores", &n.gpu_cores},
                        {"gpuModel", &n.model}, {"gpuUuid", &n.uuid}, {"gpuUuidExclude", &n.uuid_exclude}, {"numa", &n.numa},
                        {"isolation", &n.isolation},
                        {"gpuDevices", &n.devices}, {"gpuCordon", &n.cordon}, {"allocation", &n.allocation}, {"gpuIndices", &n.indices},
                        {"gfdCount", &n.gfd_count}, {"gfdMemory", &n.gfd_memory}, {"gfdProduct", &n.gfd_product}});

  Section hami = contract.sub("hami");
  err += hami.check_is_map();
  k8s::HamiNames& h = c.contract.hami;
  read_names(hami, {{"gpu", &h.gpu}, {"gpuMemory", &h.gpu_memory}, {"gpuMemoryPercentage", &h.gpu_memory_percent},
                    {"gpuCores", &h.gpu_cores}, {"useGpuType", &h.use_type}, {"nouseGpuType", &h.nouse_type},
                    {"useGpuUuid", &h.use_uuid}, {"nouseGpuUuid", &h.nouse_uuid}, {"numaBind", &h.numa_bind},
                    {"vgpuMode", &h.vgpu_mode}, {"nodeRegister", &h.register_devices}, {"gpuCordon", &h.cordon}});
  err += hami.field("memoryFactor", int_field(c.contract.hami_options.memory_factor, 1, 1 << 20));
  err += hami.field("defaultMemory", int_field(c.contract.hami_options.default_memory, 0, int64_t{1} << 30));
  err += hami.field("defaultCores", int_field(c.contract.hami_options.default_cores, 0, 100));
  err += hami.field("nodeLock", bool_field(c.contract.hami_node_lock));
  err += hami.field("nodeLockExpire", duration_field(c.contract.hami_node_lock_expire, milliseconds(1000), std::chrono::hours(24)));
  err += hami.finish();

  Section gpushare = contract.sub("gpushare");
  err += gpushare.check_is_map();
  k8s::GpushareNames& g = c.contract.gpushare;
  read_names(gpushare, {{"gpuMemory", &g.gpu_memory}, {"gpuCount", &g.gpu_count}, {"gpuCordon", &g.cordon}});
  err += gpushare.field("memoryUnit", [&c](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "GiB or MiB");
    if (!s) return Error{s.message()};
    if (*s != "GiB" && *s != "MiB") return w.error("\"" + *s + "\" is not GiB or MiB (the device plugin's --memory-unit)");
    c.contract.gpushare_options.unit_mib = *s == "MiB" ? 1 : 1024;
    return Status::Ok();
  });
  err += gpushare.finish();

  Section tke = contract.sub("tke");
  err += tke.check_is_map();
  k8s::TkeNames& t = c.contract.tke;
  read_names(tke, {{"vcudaCore", &t.vcuda_core}, {"vcudaMemory", &t.vcuda_memory}});
  err += tke.finish();
  err += contract.finish();

  Section agent = top.sub("nodeAgent");
  err += agent.check_is_map();
  NodeAgentConfig& a = c.node_agent;
  err += agent.field("nodeName", string_field(a.node_name));
  err += agent.field("devicePluginDir", string_field(a.device_plugin_dir));
  err += agent.field("nvmlLibrary", string_field(a.nvml_library));
  err += agent.field("listen", string_field(a.listen));
  err += agent.field("stateFile", string_field(a.state_file));
  err += agent.field("idsPerCard", int_field(a.ids_per_card, 1, 1024));
  err += agent.field("withoutDevices", enum_field(a.without_devices, &parse_without_devices));
  err += agent.field("cdi", bool_field(a.cdi));
  err += agent.field("visibleDevicesEnv", bool_field(a.visible_devices_env));
  err += agent.field("recordWait", duration_field(a.record_wait, milliseconds(0), std::chrono::seconds(30)));
  err += agent.field("isolation", [&a](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "none, mps or hami-core");
    if (!s) return Error{s.message()};
    scheduling::CardIsolation i{};
    if (!scheduling::parse_isolation(*s, i) || i == scheduling::CardIsolation::kMig) {
      return w.error("\"" + *s + "\" is not none, mps or hami-core (MIG instances say mig by themselves)");
    }
    a.isolation = i;
    return Status::Ok();
  });
  err += agent.field("mpsControl", string_field(a.mps_control));
  err += agent.field("mpsDir", string_field(a.mps_dir));
  err += agent.field("hamiCoreLibrary", string_field(a.hami_core_library));
  err += agent.field("hamiCoreDir", string_field(a.hami_core_dir));
  err += agent.finish();
  err += top.finish();
  if (!err.first.ok()) return Error{err.first.message()};
  if (Status s = validate(c); !s.ok()) {
    // validate() names the key first ("tls.certFile: ..."): point at its line.
    const std::string& m = s.message();
    const int line = line_of(root, m.substr(0, m.find(':')));
    return Error{source + (line >= 0 ? ":" + std::to_string(line + 1) : "") + ": " + m};
  }
  return c;
}

}  // namespace

Result<Config> parse_config(std::string_view yaml, const std::string& source) { return parse_config_keys(yaml, source, nullptr); }

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  (void)parse_config_keys("{}", "(keys)", &keys);
  return keys;
}

Result<Config> load_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return Error{"configuration: " + text.message()};
  return parse_config(*text, path);
}

}  // namespace fracpack::config
