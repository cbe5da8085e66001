#include "test/support/fake_apiserver_store.h"

#include <algorithm>

#include "common/time.h"

namespace fracpack::testing::fake {

std::string now_rfc3339() { return format_rfc3339(std::chrono::system_clock::now()); }


Fields fields_of(const json& o) {
  Fields f;
  const json& m = o.value("metadata", json::object());
  f.ns = m.value("namespace", "");
  f.name = m.value("name", "");
  f.deleting = m.contains("deletionTimestamp") && !m["deletionTimestamp"].is_null();
  const json& spec = o.value("spec", json::object());
  f.node_name = spec.value("nodeName", "");
  f.scheduler_name = spec.value("schedulerName", "");
  f.unschedulable = spec.value("unschedulable", false);
  f.phase = o.value("status", json::object()).value("phase", "");
  return f;
}




std::optional<std::vector<Term>> parse_selector(const std::string& kind, const std::string& s, std::string& error) {
  std::vector<Term> terms;
  if (s.empty()) return terms;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    Term t;
    size_t op = part.find("!=");
    if (op != std::string::npos) {
      t.negate = true;
      t.field = part.substr(0, op);
      t.value = part.substr(op + 2);
    } else if ((op = part.find("==")) != std::string::npos) {
      t.field = part.substr(0, op);
      t.value = part.substr(op + 2);
    } else if ((op = part.find('=')) != std::string::npos) {
      t.field = part.substr(0, op);
      t.value = part.substr(op + 1);
    } else {
      error = "invalid selector: '" + s + "'; can't understand '" + part + "'";
      return std::nullopt;
    }
    static const std::set<std::string> kPod = {"metadata.name", "metadata.namespace", "spec.nodeName", "spec.host",
                                               "spec.schedulerName", "status.phase"};
    static const std::set<std::string> kNode = {"metadata.name", "spec.unschedulable"};
    if ((kind == "pods" && !kPod.contains(t.field)) || (kind == "nodes" && !kNode.contains(t.field)) ||
        (kind != "pods" && kind != "nodes" && t.field != "metadata.name" && t.field != "metadata.namespace")) {
      error = "field label not supported: " + t.field;
      return std::nullopt;
    }
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return terms;
}

bool matches(const std::vector<Term>& terms, const Fields& f) {
  static const std::string kTrue = "true", kFalse = "false", kNone;
  for (const Term& t : terms) {
    const std::string* v = &kNone;
    if (t.field == "metadata.name") v = &f.name;
    else if (t.field == "metadata.namespace") v = &f.ns;
    else if (t.field == "spec.nodeName" || t.field == "spec.host") v = &f.node_name;
    else if (t.field == "spec.schedulerName") v = &f.scheduler_name;
    else if (t.field == "status.phase") v = &f.phase;
    else if (t.field == "spec.unschedulable") v = f.unschedulable ? &kTrue : &kFalse;
    if ((*v == t.value) == t.negate) return false;
  }
  return true;
}

const std::string* pinned_node(const std::vector<Term>& terms) {
  for (const Term& t : terms) {
    if ((t.field == "spec.nodeName" || t.field == "spec.host") && !t.negate && !t.value.empty()) return &t.value;
  }
  return nullptr;
}

std::string status_json(int code, const std::string& reason, const std::string& message, const json& details) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", code < 300 ? "Success" : "Failure"}, {"message", message}, {"reason", reason}, {"code", code}};
  if (code < 300) {
    s.erase("message");
    s.erase("reason");
  }
  if (!details.is_null()) s["details"] = details;
  return s.dump();
}

std::string kind_name(const std::string& kind) {
  if (kind == "pods") return "Pod";
  if (kind == "nodes") return "Node";
  if (kind == "configmaps") return "ConfigMap";
  if (kind == "resourcequotas") return "ResourceQuota";
  return "Event";
}

std::map<std::string, std::string> parse_query(const std::string& q) {
  std::map<std::string, std::string> out;
  auto decode = [](const std::string& s) {
    std::string o;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        o.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else if (s[i] == '+') {
        o.push_back(' ');
      } else {
        o.push_back(s[i]);
      }
    }
    return o;
  };
  size_t start = 0;
  while (start < q.size()) {
    const size_t amp = q.find('&', start);
    const std::string kv = q.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    const size_t eq = kv.find('=');
    if (!kv.empty()) out[decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : decode(kv.substr(eq + 1));
    if (amp == std::string::npos) break;
    start = amp + 1;
  }
  return out;
}

void merge_patch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_null()) {
      target.erase(it.key());
    } else {
      merge_patch(target[it.key()], it.value());
    }
  }
}


std::string with_resource_version(const std::string& text, uint64_t rv) {
  std::vector<char> open;  // '{' or '[' per nesting level
  bool expect_key = false;
  bool in_metadata = false;
  std::string_view last_top_key;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size()) return text;
      const std::string_view str(text.data() + i + 1, end - i - 1);
      if (expect_key && open.size() == 1) last_top_key = str;
      if (expect_key && open.size() == 2 && in_metadata && str == "resourceVersion") {
        size_t v = end + 1;
        while (v < text.size() && (text[v] == ':' || text[v] == ' ')) ++v;
        if (v >= text.size() || text[v] != '"') return text;
        size_t v_end = v + 1;
        while (v_end < text.size() && text[v_end] != '"') ++v_end;
        return text.substr(0, v + 1) + std::to_string(rv) + text.substr(v_end);
      }
      expect_key = false;
      i = end;
      continue;
    }
    switch (c) {
      case '{':
        open.push_back('{');
        expect_key = true;
        if (open.size() == 2) in_metadata = last_top_key == "metadata";
        break;
      case '[':
        open.push_back('[');
        expect_key = false;
        break;
      case '}':
      case ']':
        if (!open.empty()) open.pop_back();
        expect_key = false;
        break;
      case ',':
        expect_key = !open.empty() && open.back() == '{';
        break;
      default:
        break;
    }
  }
  return text;
}

void FakeStore::index_pod(const std::optional<Fields>& before, const Fields* now) {
  if (before && !before->node_name.empty()) {
    auto it = pods_by_node.find(before->node_name);
    if (it != pods_by_node.end()) {
      it->second.erase(key("pods", before->ns, before->name));
      if (it->second.empty()) pods_by_node.erase(it);
    }
  }
  if (now != nullptr && !now->node_name.empty()) pods_by_node[now->node_name].insert(key("pods", now->ns, now->name));
}

void FakeStore::record(const std::string& kind, const std::string& type, const Obj& now, std::optional<Fields> before,
                       std::shared_ptr<const std::string> before_json) {
  if (kind == "pods") index_pod(before, type == "DELETED" ? nullptr : &now.fields);
  kind_rv[kind] = now.rv;
  // A watcher whose selector the object stops matching gets the previous
  // state at the resource version of this change (etcd3 watcher: "the
  // *old* object with the etcd revision for the time at which it gets
  // deleted"), or its resume point would go back in time.
  if (before_json && type == "MODIFIED") {
    before_json = std::make_shared<const std::string>(with_resource_version(*before_json, now.rv));
  }
  HistoryEvent ev{now.rv, kind, type, now.json, now.fields, std::move(before), std::move(before_json)};
  history.push_back(std::move(ev));
  while (history.size() > options_.history) {
    compacted = history.front().rv;
    history.pop_front();
  }
}

std::string FakeStore::create_locked(const std::string& kind, json o) {
  json& m = o["metadata"];
  if (!m.contains("uid") || m["uid"].get<std::string>().empty()) {
    m["uid"] = "uid-" + std::to_string(++uid_counter) + "-" + m.value("name", "x");
  }
  if (!m.contains("creationTimestamp") || m["creationTimestamp"].is_null()) m["creationTimestamp"] = now_rfc3339();
  if (kind == "events" && m.value("name", "").empty()) {
    m["name"] = m.value("generateName", "event.") + std::to_string(++uid_counter);
  }
  o["kind"] = kind_name(kind);
  o["apiVersion"] = "v1";
  m["resourceVersion"] = std::to_string(++rv);
  Obj obj;
  obj.uid = m["uid"];
  obj.rv = rv;
  obj.fields = fields_of(o);
  obj.json = std::make_shared<const std::string>(o.dump());
  const std::string k = key(kind, obj.fields.ns, obj.fields.name);
  const bool existed = objects[kind].contains(k);
  std::optional<Fields> before;
  std::shared_ptr<const std::string> before_json;
  if (existed) {
    before = objects[kind][k].fields;
    before_json = objects[kind][k].json;
  }
  objects[kind][k] = obj;
  record(kind, existed ? "MODIFIED" : "ADDED", obj, before, before_json);
  return *obj.json;
}

std::optional<std::string> FakeStore::update_locked(const std::string& kind, const std::string& k,
                                                    const std::function<void(json&)>& fn) {
  auto it = objects[kind].find(k);
  if (it == objects[kind].end()) return std::nullopt;
  json o = json::parse(*it->second.json);
  fn(o);
  o["metadata"]["resourceVersion"] = std::to_string(++rv);
  const Fields before = it->second.fields;
  auto before_json = it->second.json;
  it->second.rv = rv;
  it->second.fields = fields_of(o);
  it->second.json = std::make_shared<const std::string>(o.dump());
  record(kind, "MODIFIED", it->second, before, std::move(before_json));
  return *it->second.json;
}

bool FakeStore::remove_locked(const std::string& kind, const std::string& k) {
  auto it = objects[kind].find(k);
  if (it == objects[kind].end()) return false;
  json o = json::parse(*it->second.json);
  o["metadata"]["resourceVersion"] = std::to_string(++rv);
  Obj last = it->second;
  last.rv = rv;
  last.json = std::make_shared<const std::string>(o.dump());
  objects[kind].erase(it);
  record(kind, "DELETED", last, last.fields);
  return true;
}

Response FakeStore::list(const std::string& kind, const std::string& ns, const std::map<std::string, std::string>& q, bool expire) {
  std::string error;
  auto terms = parse_selector(kind, q.contains("fieldSelector") ? q.at("fieldSelector") : "", error);
  if (!terms) return {400, status_json(400, "BadRequest", error)};
  const std::string rv_param = q.contains("resourceVersion") ? q.at("resourceVersion") : "";
  const std::string cont = q.contains("continue") ? q.at("continue") : "";
  size_t limit = 0;
  if (q.contains("limit")) limit = static_cast<size_t>(std::stoul(q.at("limit")));
  if (options_.watch_cache && cont.empty() && rv_param == "0") limit = 0;  // served from the cache, whole
  std::lock_guard lock(mu);
  if (!cont.empty() && !rv_param.empty() && rv_param != "0") {
    return {400, status_json(400, "BadRequest", "specifying resource version is not allowed when using continue")};
  }
  if (cont.empty() && !rv_param.empty() && rv_param != "0") {
    if (expire) {
      return {410, status_json(410, "Expired", "too old resource version: " + rv_param + " (" + std::to_string(compacted) + ")")};
    }
    const uint64_t asked = std::stoull(rv_param);
    const uint64_t cached = options_.watch_cache_progress ? rv : (kind_rv.contains(kind) ? kind_rv[kind] : 1);
    if (asked > cached) {
      return {504, status_json(504, "Timeout", "Too large resource version: " + rv_param + ", current: " + std::to_string(cached)), "1"};
    }
    // "Exact" (with a limit) needs the state at that version, which only the current one is.
    if (limit > 0 && asked != rv && q.contains("resourceVersionMatch") && q.at("resourceVersionMatch") == "Exact") {
      return {410, status_json(410, "Expired", "too old resource version: " + rv_param)};
    }
  }
  // Expire old continue snapshots_.
  const auto now = std::chrono::steady_clock::now();
  for (auto it = snapshots_.begin(); it != snapshots_.end();) {
    it = now - it->second.created > options_.continue_ttl ? snapshots_.erase(it) : std::next(it);
  }
  Snapshot* snap = nullptr;
  size_t offset = 0;
  std::string id;
  if (!cont.empty()) {
    const size_t colon = cont.find(':');
    id = cont.substr(0, colon);
    auto it = snapshots_.find(id);
    if (colon == std::string::npos || it == snapshots_.end()) {
      return {410, status_json(410, "Expired",
                               "The provided continue parameter is too old to display a consistent list result. You can "
                               "start a new list without the continue parameter.")};
    }
    snap = &it->second;
    offset = std::stoul(cont.substr(colon + 1));
  } else {
    Snapshot s{rv, {}, now};
    auto consider = [&](const Obj& o) {
      if (!ns.empty() && o.fields.ns != ns) return;
      if (matches(*terms, o.fields)) s.items.push_back(o.json);
    };
    const auto& of_kind = objects[kind];
    if (const std::string* node = kind == "pods" ? pinned_node(*terms) : nullptr) {
      if (auto it = pods_by_node.find(*node); it != pods_by_node.end()) {
        for (const auto& k : it->second) consider(of_kind.at(k));
      }
    } else {
      for (const auto& [k, o] : of_kind) consider(o);
    }
    id = std::to_string(++snapshot_counter_);
    snap = &snapshots_.emplace(id, std::move(s)).first->second;
  }
  const size_t end = limit == 0 ? snap->items.size() : std::min(snap->items.size(), offset + limit);
  std::string body = R"({"kind":")" + kind_name(kind) + R"(List","apiVersion":"v1","metadata":{"resourceVersion":")" +
                     std::to_string(snap->rv) + "\"";
  if (end < snap->items.size()) body += R"(,"continue":")" + id + ":" + std::to_string(end) + "\"";
  body += R"(},"items":[)";
  Response r(200, std::move(body));
  static const auto comma = std::make_shared<const std::string>(",");
  static const auto close = std::make_shared<const std::string>("]}");
  r.parts.reserve(2 * (end - offset) + 1);
  for (size_t i = offset; i < end; ++i) {
    if (i > offset) r.parts.push_back(comma);
    r.parts.push_back(snap->items[i]);
  }
  r.parts.push_back(close);
  if (end >= snap->items.size()) {
    snapshots_.erase(id);
  } else {
    while (snapshots_.size() > kMaxSnapshots) {
      auto oldest = std::min_element(snapshots_.begin(), snapshots_.end(),
                                     [](const auto& a, const auto& b) { return a.second.created < b.second.created; });
      snapshots_.erase(oldest);
    }
  }
  return r;
}

Response FakeStore::bind(const std::string& ns, const std::string& name, const std::string& body) {
  json b = json::parse(body, nullptr, false);
  if (!b.is_object()) return {400, status_json(400, "BadRequest", "invalid JSON body")};
  const json meta = b.value("metadata", json::object());
  if (meta.value("name", "") != name) return {400, status_json(400, "BadRequest", "name in URL does not match name in Binding object")};
  const json target = b.value("target", json::object());
  const std::string tkind = target.value("kind", "");
  if ((tkind != "" && tkind != "Node") || target.value("name", "").empty()) {
    return {500, status_json(500, "InternalError", "Internal error occurred: target.kind must be Node and target.name non-empty")};
  }
  std::lock_guard lock(mu);
  const std::string k = key("pods", ns, name);
  auto it = objects["pods"].find(k);
  if (it == objects["pods"].end()) {
    return {404, status_json(404, "NotFound", "pods \"" + name + "\" not found", json{{"name", name}, {"kind", "pods"}})};
  }
  const std::string conflict = "Operation cannot be fulfilled on pods/binding \"" + name + "\": ";
  json details = {{"name", name}, {"kind", "pods/binding"}};
  if (meta.contains("uid") && meta["uid"].get<std::string>() != it->second.uid) {
    return {409, status_json(409, "Conflict",
                             conflict + "Precondition failed: UID in precondition: " + meta["uid"].get<std::string>() +
                                 ", UID in object meta: " + it->second.uid,
                             details)};
  }
  if (it->second.fields.deleting) {
    return {409, status_json(409, "Conflict", conflict + "pod " + name + " is being deleted, cannot be assigned to a host", details)};
  }
  if (!it->second.fields.node_name.empty()) {
    return {409, status_json(409, "Conflict",
                             conflict + "pod " + name + " is already assigned to node \"" + it->second.fields.node_name + "\"",
                             details)};
  }
  json current = json::parse(*it->second.json);
  if (current["spec"].contains("schedulingGates") && !current["spec"]["schedulingGates"].empty()) {
    return {409, status_json(409, "Conflict", conflict + "pod " + name + " has non-empty .spec.schedulingGates", details)};
  }
  update_locked("pods", k, [&](json& o) {
    o["spec"]["nodeName"] = target["name"];
    if (meta.contains("annotations")) {
      for (auto a = meta["annotations"].begin(); a != meta["annotations"].end(); ++a) o["metadata"]["annotations"][a.key()] = a.value();
    }
    json cond = {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", now_rfc3339()}};
    json& conds = o["status"]["conditions"];
    if (!conds.is_array()) conds = json::array();
    conds.push_back(cond);
  });
  changed();
  return {201, status_json(201, "", "")};
}

Response FakeStore::patch(const std::string& kind, const std::string& ns, const std::string& name, const std::string& content_type,
                          const std::string& body) {
  if (content_type.find("application/merge-patch+json") == std::string::npos &&
      content_type.find("application/strategic-merge-patch+json") == std::string::npos) {
    return {415, status_json(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json")};
  }
  json p = json::parse(body, nullptr, false);
  if (!p.is_object()) return {400, status_json(400, "BadRequest", "invalid JSON patch")};
  std::lock_guard lock(mu);
  const std::string k = key(kind, ns, name);
  auto it = objects[kind].find(k);
  if (it == objects[kind].end()) return {404, status_json(404, "NotFound", kind + " \"" + name + "\" not found")};
  if (p.contains("metadata") && p["metadata"].contains("resourceVersion") &&
      p["metadata"]["resourceVersion"].get<std::string>() != std::to_string(it->second.rv)) {
    return {409, status_json(409, "Conflict", "Operation cannot be fulfilled on " + kind + " \"" + name +
                                                  "\": the object has been modified; please apply your changes to the latest version and try again")};
  }
  if (p.contains("metadata")) p["metadata"].erase("resourceVersion");
  auto updated = update_locked(kind, k, [&](json& o) { merge_patch(o, p); });
  changed();
  return {200, *updated};
}

WatchBatch FakeStore::watch_start(const std::string& kind, const std::string& ns, const std::vector<Term>& terms,
                                  const std::string& rv_param, bool expire) {
  std::lock_guard lock(mu);
  WatchBatch b;
  if (expire || (!rv_param.empty() && rv_param != "0" && std::stoull(rv_param) < compacted)) {
    b.events.push_back(R"({"type":"ERROR","object":)" +
                       status_json(410, "Expired", "too old resource version: " + rv_param + " (" + std::to_string(compacted) + ")") +
                       "}\n");
    b.expired = true;
  } else if (rv_param.empty() || rv_param == "0") {
    for (const auto& [k, o] : objects[kind]) {
      if (!ns.empty() && o.fields.ns != ns) continue;
      if (matches(terms, o.fields)) b.events.push_back(R"({"type":"ADDED","object":)" + *o.json + "}\n");
    }
    b.sent = rv;
  } else {
    b.sent = std::stoull(rv_param);
  }
  return b;
}

WatchBatch FakeStore::watch_next(const std::string& kind, const std::string& ns, const std::vector<Term>& terms, uint64_t sent) {
  std::lock_guard lock(mu);
  WatchBatch b;
  if (sent < compacted) {
    // Fell behind the history while streaming: the server's cache would drop us.
    b.events.push_back(R"({"type":"ERROR","object":)" + status_json(410, "Expired", "too old resource version") + "}\n");
    b.expired = true;
    return b;
  }
  // The history is in resource-version order: start after `sent`.
  auto first = std::partition_point(history.begin(), history.end(), [&](const HistoryEvent& ev) { return ev.rv <= sent; });
  for (auto it = first; it != history.end(); ++it) {
    const HistoryEvent& ev = *it;
    if (ev.kind != kind) continue;
    if (!ns.empty() && ev.now.ns != ns) continue;
    const bool now_in = matches(terms, ev.now);
    const bool was_in = ev.before && matches(terms, *ev.before);
    std::string type = ev.type;
    if (ev.type == "DELETED") {
      if (!was_in) continue;
    } else if (now_in && !was_in) {
      type = "ADDED";
    } else if (!now_in && was_in) {
      type = "DELETED";  // stopped matching: the client gets the previous state
    } else if (!now_in && !was_in) {
      continue;
    }
    const auto& text = type == "DELETED" && ev.type != "DELETED" && ev.before_json ? ev.before_json : ev.json;
    b.events.push_back(R"({"type":")" + type + R"(","object":)" + *text + "}\n");
  }
  b.sent = rv;
  return b;
}

std::string FakeStore::bookmark(const std::string& kind, uint64_t at) const {
  return R"({"type":"BOOKMARK","object":{"kind":")" + kind_name(kind) + R"(","apiVersion":"v1","metadata":{"resourceVersion":")" +
         std::to_string(at) + R"("}}})" + "\n";
}

}  // namespace fracpack::testing::fake
