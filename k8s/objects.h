// The Kubernetes objects fracpack reads, reduced to the fields it uses. JSON
// is decoded with simdjson's on-demand API: fields nobody asked for are
// skipped, never copied, so a 150 000-pod list costs what it must (a real
// pod carries kilobytes of annotations, env and volumes fracpack never needs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace fracpack::k8s {

// Small string maps (a handful of entries): a vector beats a map here.
using StringMap = std::vector<std::pair<std::string, std::string>>;
const std::string* find(const StringMap& map, std::string_view key);

// Which labels, annotations and resources to keep; everything else is skipped.
struct Selection {
  std::vector<std::string> annotation_prefixes;
  std::vector<std::string> label_prefixes;
  std::vector<std::string> resources;  // exact names, e.g. "cpu", "fracpack.io/gpu"
  // Nodes' status.capacity too (gpushare's cards are read there); else
  // only status.allocatable is decoded.
  bool capacity = false;
  // Containers' env names, envFrom prefixes and volume mount paths (the
  // node agent checks that none lifts the limit its isolation enforces);
  // the extender's reads skip them.
  bool container_env = false;

  bool keep_annotation(std::string_view key) const;
  bool keep_label(std::string_view key) const;
  bool keep_resource(std::string_view key) const;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  std::string creation_timestamp;  // RFC 3339, as sent
  bool deleting = false;           // deletionTimestamp is set
  std::string deletion_timestamp;  // RFC 3339, as sent (empty for an object built in code)
  StringMap labels;
  StringMap annotations;

  const std::string* annotation(std::string_view key) const { return find(annotations, key); }
  const std::string* label(std::string_view key) const { return find(labels, key); }
};

struct Container {
  std::string name;
  StringMap requests;
  StringMap limits;
  bool restart_always = false;  // an init container with restartPolicy: Always is a sidecar
  // With Selection::container_env only:
  std::vector<std::string> env;          // env[].name
  std::vector<std::string> env_from;     // envFrom[].prefix ("" when it has none)
  std::vector<std::string> mount_paths;  // volumeMounts[].mountPath
};

struct Pod {
  ObjectMeta meta;
  std::string node_name;
  std::string scheduler_name;
  std::string nominated_node_name;
  std::string phase;
  std::string reason;  // status.reason: why the pod is Failed (kubelet's, e.g. UnexpectedAdmissionError)
  int32_t priority = 0;
  bool scheduling_gated = false;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  StringMap overhead;

  std::string key() const { return meta.namespace_name + "/" + meta.name; }
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
};

struct Node {
  ObjectMeta meta;
  StringMap allocatable;
  StringMap capacity;  // a device plugin's totals (gpushare reads aliyun.com/gpu-mem here)
  bool unschedulable = false;
  std::string kubelet_version;  // status.nodeInfo.kubeletVersion ("v1.20.2"), "" when absent
};

struct ConfigMap {
  ObjectMeta meta;
  StringMap data;
};

// A ResourceQuota as the namespace GPU quota reads it (k8s/quota.h):
// spec.hard, every value as its quantity text.
struct ResourceQuota {
  ObjectMeta meta;
  StringMap hard;
  bool scoped = false;  // spec.scopes or spec.scopeSelector present (not written back)
};

// A list as the API server or kubectl writes it: PodList, NodeList, or a v1
// List of mixed kinds (items then carry their kind).
struct ObjectList {
  std::string kind;
  std::string resource_version;
  std::string continue_token;
  std::vector<Pod> pods;
  std::vector<Node> nodes;
  std::vector<ConfigMap> config_maps;
  std::vector<ResourceQuota> resource_quotas;
  size_t skipped = 0;  // items of other kinds
};

// Decoders. The text is copied into a padded buffer (k8s/json.h
// with_document): these are the informer's and the snapshot's decoders, not
// the extender's hot path (k8s/extender_body.h parses a padded body in place).
Result<Pod> parse_pod(std::string_view json, const Selection& selection);
Result<Node> parse_node(std::string_view json, const Selection& selection);
Result<ConfigMap> parse_config_map(std::string_view json, const Selection& selection);
Result<ResourceQuota> parse_resource_quota(std::string_view json, const Selection& selection);
Result<ObjectList> parse_list(std::string_view json, const Selection& selection);

// Encoders (encode.cc): what fracpack knows of an object, as JSON that the
// decoders above read back the same; list_json wraps items in a v1 List.
std::string node_json(const Node& node);
std::string pod_json(const Pod& pod);
std::string config_map_json(const ConfigMap& config_map);
std::string resource_quota_json(const ResourceQuota& quota);
std::string list_json(const std::vector<std::string>& items);

// A list's metadata (the text of its "metadata" value; "" gives empty fields).
struct ListMeta {
  std::string resource_version;
  std::string continue_token;
};
Result<ListMeta> parse_list_meta(std::string_view metadata_json);

// One watch event {"type":..., "object":{...}}: the object's raw text (a
// view into `json`, valid as long as it is), and for a BOOKMARK its
// resourceVersion. Only the envelope is read here, by a structural scan:
// the object is decoded once, by whoever takes it.
struct WatchEvent {
  std::string type;
  std::string_view object;
  std::string resource_version;
};
Result<WatchEvent> parse_watch_event(std::string_view json);

// A Kubernetes Status object's "message" ("" if the text is not one).
std::string status_message(std::string_view json);
// Its "code" and "reason" too, for watch ERROR events.
struct StatusInfo {
  int code = 0;
  std::string reason;
  std::string message;
};
Result<StatusInfo> parse_status(std::string_view json);

}  // namespace fracpack::k8s
