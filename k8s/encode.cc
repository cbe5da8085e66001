// Encoders of the reduced objects (objects.h): what fracpack knows of a
// node, pod or ConfigMap, as JSON a List (a snapshot) can hold.
#include "common/json/write.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

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
  // An object deleting in code alone has no time: the epoch says "deleting".
  if (m.deleting) append_field(out, "deletionTimestamp", m.deletion_timestamp.empty() ? "1970-01-01T00:00:00Z" : m.deletion_timestamp);
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
  // A node written without its own capacity shows its allocatable there.
  const StringMap& capacity = n.capacity.empty() ? n.allocatable : n.capacity;
  if (!capacity.empty()) append_map(out, "capacity", capacity, true);
  if (!n.allocatable.empty()) append_map(out, "allocatable", n.allocatable, capacity.empty());
  if (!n.kubelet_version.empty()) {
    out += std::string(capacity.empty() && n.allocatable.empty() ? "" : ",") + "\"nodeInfo\":{\"kubeletVersion\":";
    append_json_string(out, n.kubelet_version);
    out += "}";
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
  // The gates' names are not kept (Pod::scheduling_gated): one says "gated".
  if (p.scheduling_gated) out += ",\"schedulingGates\":[{\"name\":\"gated\"}]";
  out += "},\"status\":{";
  bool first = true;
  if (!p.phase.empty()) {
    out += "\"phase\":";
    append_json_string(out, p.phase);
    first = false;
  }
  if (!p.reason.empty()) {
    out += first ? "\"reason\":" : ",\"reason\":";
    append_json_string(out, p.reason);
    first = false;
  }
  if (!p.nominated_node_name.empty()) {
    out += first ? "\"nominatedNodeName\":" : ",\"nominatedNodeName\":";
    append_json_string(out, p.nominated_node_name);
  }
  return out + "}}";
}

std::string config_map_json(const ConfigMap& c) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":" + meta_json(c.meta);
  if (!c.data.empty()) append_map(out, "data", c.data);
  return out + "}";
}

std::string resource_quota_json(const ResourceQuota& q) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":" + meta_json(q.meta) + ",\"spec\":{";
  std::string hard;
  append_map(hard, "hard", q.hard);
  if (!hard.empty() && hard[0] == ',') hard.erase(0, 1);
  return out + hard + "}}";
}

std::string list_json(const std::vector<std::string>& items) {
  std::string out = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    out += items[i];
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  return out + "]}\n";
}

}  // namespace fracpack::k8s
