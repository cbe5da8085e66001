// simdjson on-demand decoding of the Kubernetes objects fracpack reads.
#include <algorithm>

#include "k8s/json.h"
#include "common/json/stream.h"

#if defined(__x86_64__) && !SIMDJSON_CAN_ALWAYS_RUN_HASWELL && !defined(FRACPACK_ALLOW_SLOW_JSON)
#error "simdjson would use its portable fallback kernel here: build with -march=x86-64-v3 -mpclmul (FRACPACK_ARCH)"
#endif

namespace fracpack::k8s {

const std::string* find(const StringMap& map, std::string_view key) {
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {
bool has_prefix(const std::vector<std::string>& prefixes, std::string_view key) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return key.rfind(p, 0) == 0; });
}
}  // namespace

bool Selection::keep_annotation(std::string_view key) const { return has_prefix(annotation_prefixes, key); }
bool Selection::keep_label(std::string_view key) const { return has_prefix(label_prefixes, key); }
bool Selection::keep_resource(std::string_view key) const {
  return std::find(resources.begin(), resources.end(), key) != resources.end();
}

namespace json {

simdjson::ondemand::parser& thread_parser() {
  thread_local simdjson::ondemand::parser parser;
  return parser;
}

Error type_error(std::string_view path, std::string_view expected) {
  return Error{std::string(path) + ": expected " + std::string(expected)};
}

Error syntax_error(simdjson::error_code code, std::string_view where) {
  std::string m = "invalid JSON";
  if (!where.empty()) m.append(" in ").append(where);
  m.append(": ").append(simdjson::error_message(code));
  return Error{std::move(m)};
}

namespace {

std::string join(std::string_view a, std::string_view b) {
  std::string s(a);
  s.append(".").append(b);
  return s;
}

// A string map, keeping only the keys `keep` accepts.
template <class Keep>
Status decode_string_map(od::value v, std::string_view path, Keep keep, StringMap& out) {
  return for_each_field(v, path, [&](std::string_view key, od::value val) -> Status {
    if (!keep(key)) return Status::Ok();
    std::string s;
    if (Status st = get_string(val, join(path, key), s); !st.ok()) return st;
    out.emplace_back(std::string(key), std::move(s));
    return Status::Ok();
  });
}

Status decode_resources(od::value v, std::string_view path, const Selection& sel, StringMap& out) {
  return for_each_field(v, path, [&](std::string_view key, od::value val) -> Status {
    if (!sel.keep_resource(key)) return Status::Ok();
    std::string s;
    if (Status st = get_quantity_text(val, join(path, key), s); !st.ok()) return st;
    out.emplace_back(std::string(key), std::move(s));
    return Status::Ok();
  });
}

Status decode_container(od::value v, std::string_view path, const Selection& sel, Container& out) {
  return for_each_field(v, path, [&](std::string_view key, od::value val) -> Status {
    if (key == "name") return get_string(val, join(path, key), out.name);
    if (key == "restartPolicy") {
      std::string p;
      if (Status s = get_string(val, join(path, key), p); !s.ok()) return s;
      out.restart_always = p == "Always";
      return Status::Ok();
    }
    if (key == "resources") {
      const std::string rpath = join(path, "resources");
      return for_each_field(val, rpath, [&](std::string_view rk, od::value rv) -> Status {
        if (rk == "requests") return decode_resources(rv, join(rpath, rk), sel, out.requests);
        if (rk == "limits") return decode_resources(rv, join(rpath, rk), sel, out.limits);
        return Status::Ok();
      });
    }
    if (!sel.container_env) return Status::Ok();
    // One string field of each element of a list ("env" -> name, ...).
    auto each_string = [&](std::string_view list, std::string_view field, std::vector<std::string>& into) -> Status {
      const std::string lpath = join(path, list);
      return for_each_element(val, lpath, [&](od::value el, size_t i) -> Status {
        const std::string epath = lpath + "[" + std::to_string(i) + "]";
        into.emplace_back();
        return for_each_field(el, epath, [&](std::string_view k, od::value v2) -> Status {
          return k == field ? get_string(v2, join(epath, k), into.back()) : Status::Ok();
        });
      });
    };
    if (key == "env") return each_string("env", "name", out.env);
    if (key == "envFrom") return each_string("envFrom", "prefix", out.env_from);
    if (key == "volumeMounts") return each_string("volumeMounts", "mountPath", out.mount_paths);
    return Status::Ok();
  });
}

Status decode_containers(od::value v, std::string_view path, const Selection& sel, std::vector<Container>& out) {
  return for_each_element(v, path, [&](od::value el, size_t i) -> Status {
    out.emplace_back();
    return decode_container(el, std::string(path) + "[" + std::to_string(i) + "]", sel, out.back());
  });
}

Status get_int32(od::value v, std::string_view path, int32_t& out) {
  int64_t x = 0;
  if (v.get_int64().get(x) || x < INT32_MIN || x > INT32_MAX) return type_error(path, "a 32-bit integer");
  out = static_cast<int32_t>(x);
  return Status::Ok();
}

Status get_bool(od::value v, std::string_view path, bool& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return syntax_error(e, path);
  if (t == od::json_type::null) {
    out = false;
    consume_null(v);
    return Status::Ok();
  }
  if (v.get_bool().get(out)) return type_error(path, "a boolean");
  return Status::Ok();
}

}  // namespace

Status get_string(od::value v, std::string_view path, std::string& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return syntax_error(e, path);
  if (t == od::json_type::null) {
    out.clear();
    consume_null(v);
    return Status::Ok();
  }
  if (t != od::json_type::string) return type_error(path, "a string");
  std::string_view s;
  if (auto e = v.get_string().get(s)) return syntax_error(e, path);
  out.assign(s);
  return Status::Ok();
}

Status get_quantity_text(od::value v, std::string_view path, std::string& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return syntax_error(e, path);
  if (t == od::json_type::number) {
    std::string_view raw = v.raw_json_token();
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
      raw.remove_suffix(1);
    }
    out.assign(raw);
    // Consume the number so the iterator moves on.
    double ignored = 0;
    auto consumed = v.get_double().get(ignored);
    (void)consumed;
    return Status::Ok();
  }
  if (t != od::json_type::string) return type_error(path, "a quantity string");
  return get_string(v, path, out);
}

Status decode_meta(od::value v, const Selection& sel, ObjectMeta& out) {
  return for_each_field(v, "metadata", [&](std::string_view key, od::value val) -> Status {
    if (key == "name") return get_string(val, "metadata.name", out.name);
    if (key == "namespace") return get_string(val, "metadata.namespace", out.namespace_name);
    if (key == "uid") return get_string(val, "metadata.uid", out.uid);
    if (key == "resourceVersion") return get_string(val, "metadata.resourceVersion", out.resource_version);
    if (key == "creationTimestamp") return get_string(val, "metadata.creationTimestamp", out.creation_timestamp);
    if (key == "deletionTimestamp") {
      if (Status s = get_string(val, "metadata.deletionTimestamp", out.deletion_timestamp); !s.ok()) return s;
      out.deleting = !out.deletion_timestamp.empty();
      return Status::Ok();
    }
    if (key == "labels") {
      return decode_string_map(val, "metadata.labels", [&](std::string_view k) { return sel.keep_label(k); }, out.labels);
    }
    if (key == "annotations") {
      return decode_string_map(val, "metadata.annotations", [&](std::string_view k) { return sel.keep_annotation(k); },
                               out.annotations);
    }
    return Status::Ok();
  });
}

Status decode_pod(od::object v, const Selection& sel, Pod& out) {
  return for_each_field(v, "pod", [&](std::string_view key, od::value val) -> Status {
    if (key == "metadata") return decode_meta(val, sel, out.meta);
    if (key == "spec") {
      return for_each_field(val, "spec", [&](std::string_view k, od::value sv) -> Status {
        if (k == "nodeName") return get_string(sv, "spec.nodeName", out.node_name);
        if (k == "schedulerName") return get_string(sv, "spec.schedulerName", out.scheduler_name);
        if (k == "priority") {
          od::json_type t;
          if (auto e = sv.type().get(t)) return syntax_error(e, "spec.priority");
          if (t == od::json_type::null) {
            consume_null(sv);
            return Status::Ok();
          }
          return get_int32(sv, "spec.priority", out.priority);
        }
        if (k == "containers") return decode_containers(sv, "spec.containers", sel, out.containers);
        if (k == "initContainers") return decode_containers(sv, "spec.initContainers", sel, out.init_containers);
        if (k == "overhead") return decode_resources(sv, "spec.overhead", sel, out.overhead);
        if (k == "schedulingGates") {
          return for_each_element(sv, "spec.schedulingGates", [&](od::value, size_t) -> Status {
            out.scheduling_gated = true;
            return Status::Ok();
          });
        }
        return Status::Ok();
      });
    }
    if (key == "status") {
      return for_each_field(val, "status", [&](std::string_view k, od::value sv) -> Status {
        if (k == "phase") return get_string(sv, "status.phase", out.phase);
        if (k == "reason") return get_string(sv, "status.reason", out.reason);
        if (k == "nominatedNodeName") return get_string(sv, "status.nominatedNodeName", out.nominated_node_name);
        return Status::Ok();
      });
    }
    return Status::Ok();
  });
}

Status decode_node(od::object v, const Selection& sel, Node& out) {
  return for_each_field(v, "node", [&](std::string_view key, od::value val) -> Status {
    if (key == "metadata") return decode_meta(val, sel, out.meta);
    if (key == "spec") {
      return for_each_field(val, "spec", [&](std::string_view k, od::value sv) -> Status {
        if (k == "unschedulable") return get_bool(sv, "spec.unschedulable", out.unschedulable);
        return Status::Ok();
      });
    }
    if (key == "status") {
      return for_each_field(val, "status", [&](std::string_view k, od::value sv) -> Status {
        if (k == "allocatable") return decode_resources(sv, "status.allocatable", sel, out.allocatable);
        if (k == "capacity" && sel.capacity) return decode_resources(sv, "status.capacity", sel, out.capacity);
        if (k == "nodeInfo") {
          return for_each_field(sv, "status.nodeInfo", [&](std::string_view ik, od::value iv) -> Status {
            if (ik == "kubeletVersion") return get_string(iv, "status.nodeInfo.kubeletVersion", out.kubelet_version);
            return Status::Ok();
          });
        }
        return Status::Ok();
      });
    }
    return Status::Ok();
  });
}

Status decode_config_map(od::object v, const Selection& sel, ConfigMap& out) {
  return for_each_field(v, "configmap", [&](std::string_view key, od::value val) -> Status {
    if (key == "metadata") return decode_meta(val, sel, out.meta);
    if (key == "data") return decode_string_map(val, "data", [](std::string_view) { return true; }, out.data);
    return Status::Ok();
  });
}

Status decode_resource_quota(od::object v, const Selection& sel, ResourceQuota& out) {
  return for_each_field(v, "resourcequota", [&](std::string_view key, od::value val) -> Status {
    if (key == "metadata") return decode_meta(val, sel, out.meta);
    if (key != "spec") return Status::Ok();
    return for_each_field(val, "spec", [&](std::string_view k, od::value sv) -> Status {
      if (k == "scopes" || k == "scopeSelector") {
        od::json_type t;
        if (auto e = sv.type().get(t)) return syntax_error(e, "spec." + std::string(k));
        if (t != od::json_type::null) out.scoped = true;
        return Status::Ok();
      }
      if (k != "hard") return Status::Ok();
      return for_each_field(sv, "spec.hard", [&](std::string_view name, od::value q) -> Status {
        out.hard.emplace_back(std::string(name), std::string());
        return get_quantity_text(q, "spec.hard." + std::string(name), out.hard.back().second);
      });
    });
  });
}

namespace {

Status decode_list(od::value root, const Selection& sel, ObjectList& out) {
  return for_each_field(root, "list", [&](std::string_view key, od::value val) -> Status {
    if (key == "kind") return get_string(val, "kind", out.kind);
    if (key == "metadata") {
      return for_each_field(val, "metadata", [&](std::string_view k, od::value mv) -> Status {
        if (k == "resourceVersion") return get_string(mv, "metadata.resourceVersion", out.resource_version);
        if (k == "continue") return get_string(mv, "metadata.continue", out.continue_token);
        return Status::Ok();
      });
    }
    if (key != "items") return Status::Ok();
    return for_each_element(val, "items", [&](od::value item, size_t i) -> Status {
      const std::string where = "items[" + std::to_string(i) + "]";
      od::object obj;
      if (item.get_object().get(obj)) return type_error(where, "an object");
      // Items of a typed list carry no kind; those of a v1 List do.
      std::string kind;
      od::value kv;
      if (!obj.find_field_unordered("kind").get(kv)) {
        if (Status s = get_string(kv, where + ".kind", kind); !s.ok()) return s;
      }
      if (auto e = obj.reset().error()) return syntax_error(e, where);
      if (kind.empty() && out.kind.size() > 4 && out.kind.substr(out.kind.size() - 4) == "List") {
        kind = out.kind.substr(0, out.kind.size() - 4);
      }
      Status s = Status::Ok();
      if (kind == "Pod") {
        out.pods.emplace_back();
        s = decode_pod(obj, sel, out.pods.back());
      } else if (kind == "Node") {
        out.nodes.emplace_back();
        s = decode_node(obj, sel, out.nodes.back());
      } else if (kind == "ConfigMap") {
        out.config_maps.emplace_back();
        s = decode_config_map(obj, sel, out.config_maps.back());
      } else if (kind == "ResourceQuota") {
        out.resource_quotas.emplace_back();
        s = decode_resource_quota(obj, sel, out.resource_quotas.back());
      } else {
        ++out.skipped;
        return Status::Ok();
      }
      return s.ok() ? s : with_context(where, Error{s.message()});
    });
  });
}

}  // namespace

}  // namespace json

namespace {

// One object of a kind from its JSON text, decoded with `decode`.
template <class T>
Result<T> parse_object(std::string_view text, const Selection& selection, std::string_view kind,
                       Status (*decode)(json::od::object, const Selection&, T&)) {
  T out;
  Status s = json::with_document(text, [&](json::od::value root) -> Status {
    json::od::object obj;
    if (root.get_object().get(obj)) return json::type_error(kind, "an object");
    return decode(obj, selection, out);
  });
  if (!s.ok()) return Error{s.message()};
  return out;
}

}  // namespace

Result<Pod> parse_pod(std::string_view text, const Selection& selection) {
  return parse_object<Pod>(text, selection, "pod", json::decode_pod);
}

Result<Node> parse_node(std::string_view text, const Selection& selection) {
  return parse_object<Node>(text, selection, "node", json::decode_node);
}

Result<ConfigMap> parse_config_map(std::string_view text, const Selection& selection) {
  return parse_object<ConfigMap>(text, selection, "configmap", json::decode_config_map);
}

Result<ResourceQuota> parse_resource_quota(std::string_view text, const Selection& selection) {
  return parse_object<ResourceQuota>(text, selection, "resourcequota", json::decode_resource_quota);
}

Result<ListMeta> parse_list_meta(std::string_view text) {
  ListMeta m;
  if (text.empty()) return m;
  Status s = json::with_document(text, [&](json::od::value root) -> Status {
    return json::for_each_field(root, "metadata", [&](std::string_view key, json::od::value v) -> Status {
      if (key == "resourceVersion") return json::get_string(v, "metadata.resourceVersion", m.resource_version);
      if (key == "continue") return json::get_string(v, "metadata.continue", m.continue_token);
      return Status::Ok();
    });
  });
  if (!s.ok()) return Error{s.message()};
  return m;
}

Result<StatusInfo> parse_status(std::string_view text) {
  StatusInfo info;
  Status s = json::with_document(text, [&](json::od::value root) -> Status {
    return json::for_each_field(root, "status", [&](std::string_view key, json::od::value v) -> Status {
      if (key == "message") return json::get_string(v, "message", info.message);
      if (key == "reason") return json::get_string(v, "reason", info.reason);
      if (key == "code") {
        int64_t c = 0;
        if (v.get_int64().get(c)) return json::type_error("code", "an integer");
        info.code = static_cast<int>(c);
      }
      return Status::Ok();
    });
  });
  if (!s.ok()) return Error{s.message()};
  return info;
}

std::string status_message(std::string_view text) {
  auto s = parse_status(text);
  return s.ok() ? s->message : std::string();
}

Result<ObjectList> parse_list(std::string_view text, const Selection& selection) {
  ObjectList list;
  Status s = json::with_document(text, [&](json::od::value root) { return json::decode_list(root, selection, list); });
  if (!s.ok()) return Error{s.message()};
  return list;
}

}  // namespace fracpack::k8s
