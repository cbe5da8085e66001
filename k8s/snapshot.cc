#include "k8s/snapshot.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "k8s/json_write.h"
#include "scheduling/replay/sequence.h"

namespace fracpack::k8s {

using scheduling::PodRequest;

namespace {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::optional<double> parse_rfc3339(std::string_view s) {
  int y, mo, d, h, mi, sec;
  if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, h) || s[13] != ':' ||
      !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  size_t pos = 19;
  double frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    double scale = 0.1;
    ++pos;
    if (pos >= s.size() || s[pos] < '0' || s[pos] > '9') return std::nullopt;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
  }
  int offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(s, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset = (oh * 60 + om) * 60 * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + sec - offset) + frac;
}

std::string format_rfc3339(int64_t t) {
  int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400;
  int64_t rem = t - days * 86400;
  // civil_from_days
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(y + (m <= 2)), m, d,
                static_cast<long long>(rem / 3600), static_cast<long long>(rem % 3600 / 60),
                static_cast<long long>(rem % 60));
  return buf;
}

std::string format_workload(const scheduling::ShapeCounts& w) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& [shape, count] : w.counts()) {
    nlohmann::json s = {{"cpuMilli", shape.cpu_milli}, {"cards", shape.cards}, {"count", count}};
    if (shape.cores % 10 == 0) {
      s["cores"] = shape.cores / 10;
    } else {
      s["cores"] = shape.cores / 10.0;
    }
    if (shape.memory_mib != 0) s["memoryMiB"] = shape.memory_mib;
    if (shape.memory_percent != 0) s["memoryPercent"] = shape.memory_percent;
    if (!shape.models.empty()) s["models"] = shape.models;
    shapes.push_back(std::move(s));
  }
  return nlohmann::json{{"shapes", shapes}}.dump();
}

Result<scheduling::ShapeCounts> parse_workload(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error{"invalid JSON"};
  if (!doc.is_object() || !doc.contains("shapes") || !doc["shapes"].is_array()) {
    return Error{"expected {\"shapes\": [...]}"};
  }
  scheduling::ShapeCounts out;
  size_t i = 0;
  for (const auto& s : doc["shapes"]) {
    const std::string where = "shapes[" + std::to_string(i++) + "]";
    if (!s.is_object()) return Error{where + ": expected an object"};
    auto num = [&](const char* key, bool required, double min, double max, double& v) -> Status {
      if (!s.contains(key)) {
        if (required) return Error{where + "." + key + " is required"};
        return Status::Ok();
      }
      if (!s[key].is_number()) return Error{where + "." + key + " must be a number"};
      v = s[key].get<double>();
      if (!(v >= min && v <= max)) return Error{where + "." + key + " is out of range"};
      return Status::Ok();
    };
    double cpu = 0, cards = 0, cores = 0, mem = 0, pct = 0, count = 0;
    for (const Status& st : {num("cpuMilli", true, 0, 1e12, cpu), num("cards", true, 0, 64, cards),
                             num("cores", false, 0, 100, cores), num("memoryMiB", false, 0, 1e12, mem),
                             num("memoryPercent", false, 0, 100, pct), num("count", true, 0, 1e15, count)}) {
      if (!st.ok()) return Error{st.message()};
    }
    if (count <= 0) return Error{where + ".count must be positive"};
    scheduling::PodShape shape;
    shape.cpu_milli = static_cast<int64_t>(cpu);
    shape.cards = static_cast<int>(cards);
    shape.cores = static_cast<int>(std::lround(cores * 10));
    shape.memory_mib = static_cast<int64_t>(mem);
    shape.memory_percent = static_cast<int>(pct);
    if (s.contains("models")) {
      if (!s["models"].is_string()) return Error{where + ".models must be a string"};
      shape.models = s["models"].get<std::string>();
    }
    out.add(shape, count);
  }
  if (out.empty()) return Error{"no shapes"};
  return out;
}

Result<SnapshotState> read_snapshot(std::string_view json, const ContractNames& names,
                                    const std::string& scheduler_name) {
  auto list = parse_list(json, names.selection());
  if (!list) return list.error();
  SnapshotState st;
  st.skipped_items = list->skipped;
  for (const ConfigMap& cm : list->config_maps) {
    if (cm.meta.name != kWorkloadConfigMap) continue;
    const std::string* data = find(cm.data, kWorkloadKey);
    if (data == nullptr) {
      st.problems.push_back({"configmap " + cm.meta.name, "configmap " + cm.meta.name + ": no key " + kWorkloadKey});
      continue;
    }
    auto w = parse_workload(*data);
    if (!w) {
      st.problems.push_back({"configmap " + cm.meta.name, "configmap " + cm.meta.name + ": " + w.message()});
      continue;
    }
    st.workload = std::move(*w);
  }
  for (const Node& n : list->nodes) {
    auto spec = node_spec(n, names);
    if (!spec) {
      st.problems.push_back({"node " + n.meta.name, spec.message()});  // the message names the node
      continue;
    }
    st.nodes.push_back(std::move(*spec));
  }
  std::sort(st.nodes.begin(), st.nodes.end(),
            [](const scheduling::NodeSpec& a, const scheduling::NodeSpec& b) { return a.name < b.name; });

  struct Pending {
    double created;
    std::string key;
    PodRequest request;
  };
  std::vector<Pending> pending;
  for (const Pod& p : list->pods) {
    if (p.terminal()) {
      ++st.terminal_pods;
      continue;
    }
    auto req = pod_request(p, names);
    if (!req) {
      st.problems.push_back({"pod " + p.key(), req.message()});  // the message names the pod
      continue;
    }
    st.shapes.add(scheduling::shape_of(*req));
    if (!p.node_name.empty()) {
      BoundPod b;
      b.facts = scheduling::PodFacts{req->uid, p.key(), req->cpu_milli, req->memory_bytes};
      b.allocation.node = p.node_name;
      if (const std::string* rec = p.meta.annotation(names.allocation)) {
        auto a = parse_allocation(*rec);
        if (!a) {
          st.problems.push_back({"pod " + p.key(), "pod " + p.key() + ": annotation " + names.allocation + ": " + a.message()});
        } else if (a->node != p.node_name) {
          st.problems.push_back({"pod " + p.key(), "pod " + p.key() + ": annotation " + names.allocation + " names node " +
                                                       a->node + " but the pod is bound to " + p.node_name});
        } else {
          b.allocation = std::move(*a);
        }
      } else if (req->wants_gpu()) {
        st.problems.push_back({"pod " + p.key(), "pod " + p.key() + ": bound to " + p.node_name + " without annotation " +
                                                     names.allocation + ": its cards are unknown"});
      }
      b.gpu_demand = replay::gpu_demand(*req);
      st.bound.push_back(std::move(b));
      continue;
    }
    if (p.meta.deleting || p.scheduling_gated) continue;
    if (!scheduler_name.empty() && p.scheduler_name != scheduler_name) continue;
    const auto t = parse_rfc3339(p.meta.creation_timestamp);
    if (!t && !p.meta.creation_timestamp.empty()) {
      st.problems.push_back({"pod " + p.key(), "pod " + p.key() + ": metadata.creationTimestamp \"" +
                                                   p.meta.creation_timestamp + "\" is not an RFC 3339 time; ordered last"});
    }
    pending.push_back(Pending{t.value_or(1e300), p.key(), std::move(*req)});
  }
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    if (a.created != b.created) return a.created < b.created;
    return a.key < b.key;
  });
  for (auto& p : pending) st.pending.push_back(std::move(p.request));
  return st;
}

void load_ledger(const SnapshotState& state, scheduling::Ledger& ledger) {
  for (const auto& n : state.nodes) ledger.upsert_node(n);
  for (const auto& b : state.bound) ledger.confirm(b.facts, b.allocation);
}

namespace {

void append_map(std::string& out, const char* key, const StringMap& map, bool first = false) {
  if (map.empty()) return;
  if (!first) out += ",";
  append_json_string(out, key);
  out += ":{";
  for (size_t i = 0; i < map.size(); ++i) {
    if (i > 0) out += ",";
    append_json_string(out, map[i].first);
    out += ":";
    append_json_string(out, map[i].second);
  }
  out += "}";
}

void append_field(std::string& out, const char* key, const std::string& value) {
  if (value.empty()) return;
  out += ",";
  append_json_string(out, key);
  out += ":";
  append_json_string(out, value);
}

std::string meta_json(const ObjectMeta& m) {
  std::string out = "{\"name\":";
  append_json_string(out, m.name);
  append_field(out, "namespace", m.namespace_name);
  append_field(out, "uid", m.uid);
  append_field(out, "resourceVersion", m.resource_version);
  append_field(out, "creationTimestamp", m.creation_timestamp);
  append_map(out, "labels", m.labels);
  append_map(out, "annotations", m.annotations);
  return out + "}";
}

std::string container_json(const Container& c) {
  std::string out = "{\"name\":";
  append_json_string(out, c.name);
  if (c.restart_always) out += ",\"restartPolicy\":\"Always\"";
  out += ",\"resources\":{";
  bool first = true;
  if (!c.requests.empty()) {
    append_map(out, "requests", c.requests, first);
    first = false;
  }
  append_map(out, "limits", c.limits, first);
  return out + "}}";
}

}  // namespace

std::string node_json(const Node& n) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":" + meta_json(n.meta);
  out += ",\"spec\":{";
  if (n.unschedulable) out += "\"unschedulable\":true";
  out += "},\"status\":{";
  if (!n.allocatable.empty()) {
    append_map(out, "capacity", n.allocatable, true);
    append_map(out, "allocatable", n.allocatable);
  }
  return out + "}}";
}

std::string pod_json(const Pod& p) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":" + meta_json(p.meta) + ",\"spec\":{";
  out += "\"containers\":[";
  for (size_t i = 0; i < p.containers.size(); ++i) out += (i ? "," : "") + container_json(p.containers[i]);
  out += "]";
  if (!p.init_containers.empty()) {
    out += ",\"initContainers\":[";
    for (size_t i = 0; i < p.init_containers.size(); ++i) out += (i ? "," : "") + container_json(p.init_containers[i]);
    out += "]";
  }
  append_field(out, "nodeName", p.node_name);
  append_field(out, "schedulerName", p.scheduler_name);
  if (p.priority != 0) out += ",\"priority\":" + std::to_string(p.priority);
  append_map(out, "overhead", p.overhead);
  out += "},\"status\":{";
  if (!p.phase.empty()) {
    out += "\"phase\":";
    append_json_string(out, p.phase);
  }
  return out + "}}";
}

std::string config_map_json(const ConfigMap& c) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":" + meta_json(c.meta);
  if (!c.data.empty()) append_map(out, "data", c.data);
  return out + "}";
}

std::string list_json(const std::vector<std::string>& items) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    out += items[i];
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  return out + "]}\n";
}

Result<std::string> openb_snapshot_json(const replay::ExperimentSetup& setup, const ContractNames& names,
                                        int64_t seed) {
  std::vector<std::string> items;
  items.reserve(setup.nodes.size() + setup.arrivals.size() + 1);
  for (size_t i = 0; i < setup.nodes.size(); ++i) {
    const replay::OpenbNode& on = setup.nodes[i];
    Node n;
    n.meta.name = setup.node_names[i];
    n.meta.uid = "openb-node-" + std::to_string(i);
    n.meta.labels = {{"kubernetes.io/hostname", n.meta.name}};
    if (on.gpus > 0) {
      n.meta.labels.emplace_back(names.gfd_count, std::to_string(on.gpus));
      n.meta.labels.emplace_back(names.gfd_memory, std::to_string(replay::nominal_memory_mib(on.model)));
      n.meta.labels.emplace_back(names.gfd_product, on.model);
    }
    n.allocatable = {{"cpu", std::to_string(on.cpu_milli) + "m"},
                     {"memory", std::to_string(on.memory_mib) + "Mi"},
                     {"pods", "1001"}};
    items.push_back(node_json(n));
  }
  const int64_t t0 = 1672531200;  // 2023-01-01T00:00:00Z; arrivals one second apart
  for (size_t i = 0; i < setup.arrivals.size(); ++i) {
    const replay::OpenbPod& op = setup.arrivals[i];
    Pod p;
    p.meta.name = op.name;
    p.meta.namespace_name = "openb";
    char uid[64];
    std::snprintf(uid, sizeof uid, "openb-s%lld-%06zu", static_cast<long long>(seed), i);
    p.meta.uid = uid;
    p.meta.creation_timestamp = format_rfc3339(t0 + static_cast<int64_t>(i));
    p.scheduler_name = "fracpack";
    p.phase = "Pending";
    Container c;
    c.name = "main";
    c.requests = {{"cpu", std::to_string(op.cpu_milli) + "m"}, {"memory", std::to_string(op.memory_mib) + "Mi"}};
    if (op.num_gpu > 0 && op.gpu_milli > 0) {
      if (op.gpu_milli == 1000) {
        c.requests.emplace_back(names.gpu, std::to_string(op.num_gpu));
      } else {
        if (op.gpu_milli % 10 != 0) {
          return Error{"pod " + op.name + ": gpu_milli " + std::to_string(op.gpu_milli) +
                       " is not a whole percent; the contract counts compute in percent"};
        }
        c.requests.emplace_back(names.gpu, std::to_string(op.num_gpu));
        c.requests.emplace_back(names.gpu_cores, std::to_string(op.gpu_milli / 10));
      }
      if (!op.gpu_spec.empty()) p.meta.annotations.emplace_back(names.model, op.gpu_spec);
    }
    c.limits = c.requests;  // requests equal limits
    p.containers.push_back(std::move(c));
    items.push_back(pod_json(p));
  }
  ConfigMap cm;
  cm.meta.name = kWorkloadConfigMap;
  cm.meta.namespace_name = "fracpack-system";
  cm.data = {{kWorkloadKey, format_workload(*setup.shapes)}};
  items.push_back(config_map_json(cm));
  return list_json(items);
}

}  // namespace fracpack::k8s
