#include "k8s/contract/hami_node_lock.h"

#include <thread>

#include <nlohmann/json.hpp>

#include "common/time.h"

namespace fracpack::k8s {

// (Tree, not json: k8s/json.h is the namespace k8s::json.)
using Tree = nlohmann::json;
using SystemClock = std::chrono::system_clock;

std::string format_node_lock(SystemClock::time_point at, const std::string& ns, const std::string& name) {
  return format_rfc3339(at) + "," + ns + "," + name;
}

std::optional<NodeLockValue> parse_node_lock(std::string_view text) {
  NodeLockValue v;
  const size_t first = text.find(',');
  const std::string_view time = text.substr(0, first);
  auto seconds = parse_rfc3339(time);
  if (!seconds) return std::nullopt;
  v.at = SystemClock::time_point(std::chrono::duration_cast<SystemClock::duration>(std::chrono::duration<double>(*seconds)));
  if (first == std::string_view::npos) return v;
  const size_t second = text.find(',', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  v.namespace_name = std::string(text.substr(first + 1, second - first - 1));
  v.name = std::string(text.substr(second + 1));
  if (v.namespace_name.empty() || v.name.empty()) return std::nullopt;
  return v;
}

namespace {

std::string node_path(const std::string& node) { return "/api/v1/nodes/" + url_encode(node); }

struct NodeRead {
  std::string resource_version;
  std::optional<std::string> lock;
};

Result<NodeRead> read_node(ApiClient& client, const std::string& node, const std::string& annotation, std::chrono::milliseconds timeout) {
  auto r = client.request("GET", node_path(node), {}, "application/json", timeout);
  if (!r) return Error{"reading node " + node + ": " + r.message()};
  if (r->status != 200) return Error{"reading node " + node + ": " + std::to_string(r->status) + " " + api_error_message(*r)};
  Tree n = Tree::parse(r->body, nullptr, false);
  if (!n.is_object()) return Error{"reading node " + node + ": the answer is not a JSON object"};
  NodeRead out;
  const Tree meta = n.value("metadata", Tree::object());
  out.resource_version = meta.value("resourceVersion", "");
  const Tree ann = meta.value("annotations", Tree::object());
  if (ann.contains(annotation) && ann[annotation].is_string()) out.lock = ann[annotation].get<std::string>();
  return out;
}

// 200: written; 409: the node changed since it was read; else an error.
Result<int> patch_lock(ApiClient& client, const std::string& node, const std::string& annotation, const Tree& value,
                       const std::string& resource_version, std::chrono::milliseconds timeout) {
  Tree body = {{"metadata", {{"annotations", {{annotation, value}}}, {"resourceVersion", resource_version}}}};
  auto r = client.request("PATCH", node_path(node), body.dump(), "application/merge-patch+json", timeout);
  if (!r) return Error{"writing node " + node + "'s " + annotation + ": " + r.message()};
  if (r->status == 200 || r->status == 409) return r->status;
  return Error{"writing node " + node + "'s " + annotation + ": " + std::to_string(r->status) + " " + api_error_message(*r)};
}

// Does the pod still exist? (Unknown counts as yes: never take a live lock.)
bool pod_exists(ApiClient& client, const std::string& ns, const std::string& name, std::chrono::milliseconds timeout) {
  auto r = client.request("GET", "/api/v1/namespaces/" + url_encode(ns) + "/pods/" + url_encode(name), {}, "application/json", timeout);
  return !(r && r->status == 404);
}

}  // namespace

Status HamiNodeLock::acquire(ApiClient& client, const BindTarget& t, std::chrono::steady_clock::time_point deadline) const {
  const std::string& key = options_.annotation;
  std::string holder;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Error{"node " + t.node + " is locked by " + (holder.empty() ? std::string("another writer") : "pod " + holder) + " (" + key +
                   ", released by HAMi's device plugin after Allocate) until past fracpack's bind timeout; kube-scheduler will retry"};
    }
    auto node = read_node(client, t.node, key, left);
    if (!node) return Error{node.message()};
    bool take = !node->lock.has_value();
    if (!take) {
      auto v = parse_node_lock(*node->lock);
      if (!v) {
        take = true;  // unreadable: HAMi's own scheduler would not honour it either
      } else if (v->namespace_name == t.namespace_name && v->name == t.name) {
        take = true;  // ours, from a retried bind
      } else if (SystemClock::now() - v->at > options_.expire) {
        take = true;  // expired
      } else if (!v->name.empty() && !pod_exists(client, v->namespace_name, v->name, left)) {
        take = true;  // its pod is gone
      } else {
        holder = v->name.empty() ? std::string() : v->namespace_name + "/" + v->name;
      }
    }
    if (take) {
      auto written = patch_lock(client, t.node, key, format_node_lock(SystemClock::now(), t.namespace_name, t.name),
                                node->resource_version, left);
      if (!written) return Error{written.message()};
      if (*written == 200) return Status::Ok();
      continue;  // 409: someone wrote the node first; read it again
    }
    std::this_thread::sleep_for(std::min(options_.poll, left));
  }
}

void HamiNodeLock::release(ApiClient& client, const BindTarget& t) const {
  const std::string suffix = "," + t.namespace_name + "," + t.name;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto node = read_node(client, t.node, options_.annotation, client.config().request_timeout);
    if (!node || !node->lock) return;
    const std::string& v = *node->lock;
    if (v.size() < suffix.size() || v.compare(v.size() - suffix.size(), suffix.size(), suffix) != 0) return;  // not ours
    auto written = patch_lock(client, t.node, options_.annotation, nullptr, node->resource_version, client.config().request_timeout);
    if (!written || *written == 200) return;
  }
}

std::string HamiNodeLock::held_by(const Node& node, std::chrono::system_clock::time_point now) const {
  const std::string* lock = node.meta.annotation(options_.annotation);
  if (lock == nullptr) return {};
  auto v = parse_node_lock(*lock);
  if (!v || v->name.empty() || now - v->at > options_.expire) return {};
  return v->namespace_name + "/" + v->name;
}

}  // namespace fracpack::k8s
