#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "common/file_io.h"
#include "common/time.h"
#include "scheduling/policy.h"
#include "scheduling/quantity.h"

namespace fracpack::config {
namespace {

// An error at a node: "<source>:<line>: <key>: <message>".
struct Where {
  const std::string& source;
  std::string key;
  int line;
  Error error(const std::string& message) const {
    return Error{source + ":" + std::to_string(line + 1) + ": " + key + ": " + message};
  }
};

// A mapping whose keys are checked off as they are read; what is left at
// the end is unknown.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, const std::string& source, std::vector<std::string>* keys)
      : node_(node), path_(std::move(path)), source_(source), keys_(keys) {}

  Status check_is_map() const {
    if (node_.IsNull() || node_.IsMap()) return Status::Ok();
    return Where{source_, path_.empty() ? "(top level)" : path_, node_.Mark().line}.error("expected a mapping of keys");
  }

  // Calls read(value, where) when the key is present and not null.
  Status field(const std::string& key, const std::function<Status(const YAML::Node&, const Where&)>& read) {
    known_[key] = true;
    if (keys_) keys_->push_back(full(key));
    if (!node_.IsMap()) return Status::Ok();
    const YAML::Node& map = node_;  // const: reading never inserts
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return Status::Ok();
    return read(v, Where{source_, full(key), v.Mark().line});
  }

  Section sub(const std::string& key) {
    known_[key] = true;
    const YAML::Node& map = node_;
    YAML::Node v = node_.IsMap() ? map[key] : YAML::Node();
    return Section(v.IsDefined() ? v : YAML::Node(), full(key), source_, keys_);
  }

  Status finish() const {
    if (!node_.IsMap()) return Status::Ok();
    std::map<std::string, int> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.Scalar();
      // yaml-cpp keeps the first of two equal keys; Kubernetes' strict
      // decoding calls that an error, and so do we.
      if (seen.count(key)) {
        return Where{source_, full(key), it->first.Mark().line}.error("duplicate key (first on line " + std::to_string(seen[key] + 1) + ")");
      }
      seen[key] = it->first.Mark().line;
      if (!known_.count(key)) {
        std::string known;
        for (const auto& [k, unused] : known_) known += (known.empty() ? "" : ", ") + k;
        return Where{source_, full(key), it->first.Mark().line}.error("unknown key (known here: " + known + ")");
      }
    }
    return Status::Ok();
  }

 private:
  std::string full(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::vector<std::string>* keys_;  // every leaf key read, when asked (config_keys)
  std::map<std::string, bool> known_;
};

Result<std::string> scalar(const YAML::Node& v, const Where& w, const char* what) {
  if (!v.IsScalar()) return w.error(std::string("expected ") + what);
  return v.Scalar();
}

auto string_field(std::string& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a string");
    if (!s) return Error{s.message()};
    out = *s;
    return Status::Ok();
  };
}

// A YAML sequence of strings (or one string, a list of one).
auto string_list_field(std::vector<std::string>& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    std::vector<std::string> items;
    if (v.IsScalar()) {
      items.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar()) return w.error("expected a list of strings");
        items.push_back(item.Scalar());
      }
    } else {
      return w.error("expected a list of strings");
    }
    for (const auto& item : items) {
      if (item.empty()) return w.error("an empty string in the list");
    }
    out = std::move(items);
    return Status::Ok();
  };
}

auto int_field(int64_t& out, int64_t min, int64_t max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "an integer");
    if (!s) return Error{s.message()};
    int64_t x = 0;
    auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), x);
    if (ec != std::errc() || p != s->data() + s->size()) return w.error("expected an integer, got \"" + *s + "\"");
    if (x < min || x > max) return w.error(std::to_string(x) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    out = x;
    return Status::Ok();
  };
}

auto double_field(double& out, double min, double max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a number");
    if (!s) return Error{s.message()};
    char* end = nullptr;
    const double x = std::strtod(s->c_str(), &end);
    if (s->empty() || end != s->c_str() + s->size() || !std::isfinite(x)) return w.error("expected a number, got \"" + *s + "\"");
    if (x < min || x > max) {
      std::ostringstream m;
      m << *s << " is out of range [" << min << ", " << max << "]";
      return w.error(m.str());
    }
    out = x;
    return Status::Ok();
  };
}

auto bool_field(bool& out) {
  return [&out](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "true or false");
    if (!s) return Error{s.message()};
    if (*s == "true") {
      out = true;
    } else if (*s == "false") {
      out = false;
    } else {
      return w.error("expected true or false, got \"" + *s + "\"");
    }
    return Status::Ok();
  };
}

auto duration_field(milliseconds& out, milliseconds min, milliseconds max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a duration like 10s");
    if (!s) return Error{s.message()};
    auto d = parse_duration(*s);
    if (!d) return w.error(d.message());
    if (*d < min || *d > max) {
      return w.error(*s + " is out of range [" + std::to_string(min.count()) + " ms, " + std::to_string(max.count()) + " ms]");
    }
    out = *d;
    return Status::Ok();
  };
}

auto bytes_field(int64_t& out, int64_t min, int64_t max) {
  return [&out, min, max](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a size like 64Mi");
    if (!s) return Error{s.message()};
    auto q = Quantity::parse(*s);
    if (!q) return w.error("expected a size like 64Mi or 1000000: " + q.message());
    auto b = q->value();
    if (!b || q->negative()) return w.error("\"" + *s + "\" is not a size in bytes");
    if (*b < min || *b > max) return w.error(*s + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "] bytes");
    out = *b;
    return Status::Ok();
  };
}

// Collects the first error of a sequence of reads.
struct Errors {
  Status first = Status::Ok();
  void operator+=(Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  }
};

}  // namespace

Result<milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return Error{"expected a duration like 10s, got an empty string"};
  const std::string quoted = "\"" + std::string(text) + "\"";
  if (text == "0") return milliseconds(0);
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (start == i) return Error{"expected a duration like 10s or 1m30s, got " + quoted};
    const std::string number(text.substr(start, i - start));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return Error{"expected a duration like 10s or 1m30s, got " + quoted};
    start = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string_view unit = text.substr(start, i - start);
    double scale = 0;
    if (unit == "ns") scale = 1e-6;
    else if (unit == "us" || unit == "\u00b5s") scale = 1e-3;
    else if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else return Error{"unknown unit \"" + std::string(unit) + "\" in duration " + quoted + " (use ns, us, ms, s, m, h)"};
    total_ms += value * scale;
  }
  if (total_ms > 1e12) return Error{"duration " + quoted + " is too long"};
  return milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

Result<std::pair<std::string, uint16_t>> parse_listen(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Error{"expected HOST:PORT or :PORT, got \"" + std::string(text) + "\""};
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string_view port = text.substr(colon + 1);
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p > 65535) {
    return Error{"bad port in \"" + std::string(text) + "\""};
  }
  return std::pair<std::string, uint16_t>{host, static_cast<uint16_t>(p)};
}

bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Status validate(const Config& c) {
  if (auto contract = k8s::make_contract(c.contract); !contract) return Error{"contract.profile: " + contract.message()};
  auto listen = parse_listen(c.listen);
  if (!listen) return Error{"listen: " + listen.message()};
  // Whoever reaches the verbs may bind pods with fracpack's rights.
  if (!loopback_host(listen->first) && c.tls.client_ca_file.empty() && !c.security.allow_unauthenticated_listen) {
    return Error{"listen: \"" + c.listen +
                 "\" is reachable from other hosts and its clients are not authenticated: anyone who reaches it could bind pods "
                 "with fracpack's rights. Listen on loopback (kube-scheduler runs beside fracpack), require client certificates "
                 "(tls.clientCaFile), or set security.allowUnauthenticatedListen: true"};
  }
  if (c.scheduler_names.empty()) return Error{"schedulerNames: must name at least one scheduler"};
  if (c.security.records != "signed" && c.security.records != "unsigned") {
    return Error{"security.records: expected signed or unsigned, got \"" + c.security.records + "\""};
  }
  if (!c.security.unsigned_before.empty() && !parse_rfc3339(c.security.unsigned_before)) {
    return Error{"security.unsignedBefore: \"" + c.security.unsigned_before + "\" is not an RFC 3339 time like 2026-11-26T00:00:00Z"};
  }
  if (!c.admission.listen.empty()) {
    if (auto a = parse_listen(c.admission.listen); !a) return Error{"admission.listen: " + a.message()};
    if (c.admission.cert_file.empty() || c.admission.key_file.empty()) {
      return Error{"admission.listen: needs admission.certFile and admission.keyFile (the API server calls webhooks over TLS only)"};
    }
  }
  if (!c.metrics_listen.empty()) {
    auto m = parse_listen(c.metrics_listen);
    if (!m) return Error{"metricsListen: " + m.message()};
    auto l = parse_listen(c.listen);
    if (m->second != 0 && m->second == l->second) return Error{"metricsListen: the port " + std::to_string(m->second) + " is listen's too"};
  }
  if (c.limits.max_body_bytes_in_flight < c.limits.max_request_bytes) {
    return Error{"limits.maxBodyBytesInFlight: " + std::to_string(c.limits.max_body_bytes_in_flight) +
                 " is below limits.maxRequestBytes (" + std::to_string(c.limits.max_request_bytes) + "): the largest request could never be read"};
  }
  if (c.url_prefix.empty() || c.url_prefix.front() != '/') return Error{"urlPrefix: must start with \"/\" (got \"" + c.url_prefix + "\")"};
  if (c.tls.cert_file.empty() != c.tls.key_file.empty()) {
    return Error{c.tls.key_file.empty() ? "tls.certFile: needs tls.keyFile too (both or neither)" : "tls.keyFile: needs tls.certFile too (both or neither)"};
  }
  if (!c.tls.client_ca_file.empty() && c.tls.cert_file.empty()) {
    return Error{"tls.clientCaFile: needs tls.certFile and tls.keyFile (client certificates are a TLS feature)"};
  }
  if (!c.cluster.kubeconfig.empty() && !c.cluster.snapshot.empty()) {
    return Error{"cluster.snapshot: excludes cluster.kubeconfig (a snapshot needs no API server)"};
  }
  const auto& known = scheduling::policy_names();
  if (std::find(known.begin(), known.end(), c.policy.name) == known.end()) {
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    return Error{"policy.name: unknown policy \"" + c.policy.name + "\" (known: " + list + ")"};
  }
  if (!c.workload.config_map.empty() && c.workload.config_map.find('/') == std::string::npos) {
    return Error{"workload.configMap: expected namespace/name, got \"" + c.workload.config_map + "\""};
  }
  if (c.log.level != "debug" && c.log.level != "info" && c.log.level != "warn" && c.log.level != "error") {
    return Error{"log.level: expected debug, info, warn or error, got \"" + c.log.level + "\""};
  }
  if (c.cluster.bind_fence_read != "auto" && c.cluster.bind_fence_read != "consistent" && c.cluster.bind_fence_read != "marker" &&
      c.cluster.bind_fence_read != "resourceVersion") {
    return Error{"cluster.bindFenceRead: expected auto, consistent, marker or resourceVersion, got \"" + c.cluster.bind_fence_read + "\""};
  }
  if (const std::string& m = c.cluster.bind_fence_marker; !m.empty()) {
    const size_t slash = m.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == m.size() || m.find('/', slash + 1) != std::string::npos) {
      return Error{"cluster.bindFenceMarker: expected namespace/name of a pod, got \"" + m + "\""};
    }
  }
  if (c.log.format != "json" && c.log.format != "logfmt") return Error{"log.format: expected json or logfmt, got \"" + c.log.format + "\""};
  if (auto l = parse_listen(c.node_agent.listen); !l) return Error{"nodeAgent.listen: " + l.message()};
  if (c.node_agent.without_devices != "fail" && c.node_agent.without_devices != "idle") {
    return Error{"nodeAgent.withoutDevices: expected fail or idle, got \"" + c.node_agent.without_devices + "\""};
  }
  if (c.node_agent.device_plugin_dir.empty()) return Error{"nodeAgent.devicePluginDir: must not be empty"};
  if (c.node_agent.nvml_library.empty()) return Error{"nodeAgent.nvmlLibrary: must not be empty"};
  return Status::Ok();
}

namespace {

// The line of a dotted key ("tls.certFile") in the document, or of its
// deepest present parent; -1 when none is present.
int line_of(const YAML::Node& root, const std::string& dotted) {
  YAML::Node node = root;
  int line = -1;
  size_t start = 0;
  while (start <= dotted.size()) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node.IsMap()) break;
    YAML::Node next;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.Scalar() == key) {
        line = it->first.Mark().line;
        next = it->second;
        break;
      }
    }
    if (!next.IsDefined()) break;
    node = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return line;
}

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
  err += security.field("records", string_field(c.security.records));
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
  err += cluster.field("bindFenceRead", string_field(c.cluster.bind_fence_read));
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
  err += log.field("level", string_field(c.log.level));
  err += log.field("format", string_field(c.log.format));
  err += log.finish();

  Section contract = top.sub("contract");
  err += contract.check_is_map();
  err += contract.field("profile", [&c](const YAML::Node& v, const Where& w) -> Status {
    auto s = scalar(v, w, "a profile name");
    if (!s) return Error{s.message()};
    const auto& known = k8s::profile_names();
    if (std::find(known.begin(), known.end(), *s) == known.end()) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      return w.error("unknown profile \"" + *s + "\" (known: " + list + ")");
    }
    c.contract.profile = *s;
    return Status::Ok();
  });
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
  err += agent.field("withoutDevices", string_field(a.without_devices));
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
