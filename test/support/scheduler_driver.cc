#include "test/support/scheduler_driver.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "scheduling/quantity.h"

namespace fracpack::testing {
namespace {

using json = nlohmann::json;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Go's encoding/json: the exact key first, else any case-insensitive match;
// null counts as absent.
const json* field(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  if (auto it = object.find(std::string(key)); it != object.end()) return it->is_null() ? nullptr : &*it;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (iequals(it.key(), key)) return it->is_null() ? nullptr : &*it;
  }
  return nullptr;
}

Result<std::map<std::string, std::string>> string_map(const json* j, const char* what) {
  std::map<std::string, std::string> out;
  if (j == nullptr) return out;
  if (!j->is_object()) return Error{std::string(what) + " is not an object"};
  for (auto it = j->begin(); it != j->end(); ++it) {
    if (!it->is_string()) return Error{std::string(what) + " value is not a string"};
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

std::string verb_url(const ExtenderConfig& e, const std::string& verb) {
  std::string p = e.url_prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p + "/" + verb;
}

}  // namespace

struct SchedulerDriver::Pool {
  k8s::ClientConfig config;
  std::mutex mu;
  std::vector<std::unique_ptr<k8s::ApiClient>> idle;

  std::unique_ptr<k8s::ApiClient> take() {
    std::lock_guard lock(mu);
    if (idle.empty()) return std::make_unique<k8s::ApiClient>(config);
    auto c = std::move(idle.back());
    idle.pop_back();
    return c;
  }
  void give(std::unique_ptr<k8s::ApiClient> c) {
    std::lock_guard lock(mu);
    idle.push_back(std::move(c));
  }
};

std::string extender_args_json(const std::string& pod_json, const std::vector<CandidateNode>& candidates,
                               bool node_cache_capable) {
  std::string out = "{\"Pod\":" + pod_json;
  if (node_cache_capable) {
    json names = json::array();
    for (const auto& c : candidates) names.push_back(c.name);
    out += ",\"Nodes\":null,\"NodeNames\":" + names.dump() + "}";
  } else {
    out += ",\"Nodes\":{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (i > 0) out += ",";
      out += candidates[i].json;
    }
    out += "]},\"NodeNames\":null}";
  }
  return out;
}

Result<std::unique_ptr<SchedulerDriver>> SchedulerDriver::create(std::vector<ExtenderConfig> extenders) {
  int binders = 0;
  for (const auto& e : extenders) {
    if (!e.bind_verb.empty()) ++binders;
    if (!e.prioritize_verb.empty() && e.weight <= 0) return Error{"extender " + e.url_prefix + ": weight must be positive"};
    if (!k8s::Endpoint::parse(e.url_prefix)) return Error{"extender " + e.url_prefix + ": bad urlPrefix"};
  }
  if (binders > 1) return Error{"only one extender can implement bind"};
  return std::unique_ptr<SchedulerDriver>(new SchedulerDriver(std::move(extenders)));
}

SchedulerDriver::SchedulerDriver(std::vector<ExtenderConfig> extenders) : extenders_(std::move(extenders)) {
  for (size_t i = 0; i < extenders_.size(); ++i) {
    if (!extenders_[i].ignorable) order_.push_back(i);
  }
  for (size_t i = 0; i < extenders_.size(); ++i) {
    if (extenders_[i].ignorable) order_.push_back(i);
  }
  for (const auto& e : extenders_) {
    auto pool = std::make_unique<Pool>();
    pool->config.endpoint = *k8s::Endpoint::parse(e.url_prefix);
    pool->config.tls = e.tls;
    if (pool->config.endpoint.tls() && e.tls.ca_pem.empty()) pool->config.tls.insecure_skip_verify = true;  // §2.1
    const auto timeout = e.http_timeout.count() > 0 ? e.http_timeout : std::chrono::milliseconds(5000);
    pool->config.request_timeout = timeout;
    pool->config.connect_timeout = timeout;
    pool->config.user_agent = "Go-http-client/1.1";
    pools_.push_back(std::move(pool));
  }
}

SchedulerDriver::~SchedulerDriver() = default;

Result<k8s::HttpResponse> SchedulerDriver::post(size_t extender, const std::string& verb, const std::string& body) {
  Pool& pool = *pools_.at(extender);
  auto client = pool.take();
  // The verb is appended to the prefix's path (the client's base path).
  auto r = client->request("POST", "/" + verb, body, "application/json", pool.config.request_timeout);
  if (r) pool.give(std::move(client));
  return r;
}

Result<json> SchedulerDriver::call(size_t extender, const std::string& verb, const std::string& body) {
  // kube-scheduler's messages (extender.go send()): any status but 200, or
  // a body that is not JSON, fails the call.
  const std::string url = verb_url(extenders_.at(extender), verb);
  auto r = post(extender, verb, body);
  if (!r) return Error{"failed " + verb + " with extender at URL " + url + ": " + r.message()};
  if (r->status != 200) return Error{"failed " + verb + " with extender at URL " + url + ", code " + std::to_string(r->status)};
  try {
    return json::parse(r->body);
  } catch (const std::exception& ex) {
    return Error{"failed " + verb + " with extender at URL " + url + ": " + ex.what()};
  }
}

bool SchedulerDriver::interested(size_t extender, const std::string& pod_json) const {
  const ExtenderConfig& e = extenders_.at(extender);
  if (e.managed_resources.empty()) return true;
  const json pod = json::parse(pod_json, nullptr, false);
  std::set<std::string> managed(e.managed_resources.begin(), e.managed_resources.end());
  if (!pod.is_object() || !pod.contains("spec")) return false;
  const json& spec = pod["spec"];
  for (const char* list : {"containers", "initContainers"}) {
    if (!spec.contains(list)) continue;
    for (const auto& c : spec[list]) {
      if (!c.contains("resources")) continue;
      for (const char* kind : {"requests", "limits"}) {
        if (!c["resources"].contains(kind)) continue;
        for (const auto& [key, value] : c["resources"][kind].items()) {
          if (managed.count(key)) return true;
        }
      }
    }
  }
  return false;
}

Result<FilterOutcome> SchedulerDriver::filter(size_t extender, const std::string& pod_json,
                                              const std::vector<CandidateNode>& candidates) {
  const ExtenderConfig& e = extenders_.at(extender);
  auto called = call(extender, e.filter_verb, extender_args_json(pod_json, candidates, e.node_cache_capable));
  if (!called) return Error{called.message()};
  const json& reply = *called;
  if (!reply.is_null() && !reply.is_object()) return Error{"filter reply is not an object"};
  if (const json* err = field(reply, "Error")) {
    if (!err->is_string()) return Error{"filter reply: Error is not a string"};
    if (!err->get<std::string>().empty()) return Error{err->get<std::string>()};
  }
  FilterOutcome out;
  std::set<std::string> input;
  for (const auto& c : candidates) input.insert(c.name);
  const json* names = field(reply, "NodeNames");
  const json* nodes = field(reply, "Nodes");
  if (e.node_cache_capable && names != nullptr) {
    if (!names->is_array()) return Error{"filter reply: NodeNames is not an array"};
    for (const auto& n : *names) {
      if (!n.is_string()) return Error{"filter reply: a NodeNames entry is not a string"};
      if (!input.count(n.get<std::string>())) {
        return Error{"extender \"" + e.url_prefix + "\" claims a filtered node \"" + n.get<std::string>() +
                     "\" which is not found in the input node list"};
      }
      out.nodes.push_back(n.get<std::string>());
    }
  } else if (nodes != nullptr) {
    const json* items = field(*nodes, "items");
    if (items != nullptr) {
      if (!items->is_array()) return Error{"filter reply: Nodes.items is not an array"};
      for (const auto& n : *items) out.nodes.push_back(n.value("metadata", json::object()).value("name", ""));
    }
  }
  auto failed = string_map(field(reply, "FailedNodes"), "FailedNodes");
  if (!failed) return Error{"filter reply: " + failed.message()};
  auto unresolvable = string_map(field(reply, "FailedAndUnresolvableNodes"), "FailedAndUnresolvableNodes");
  if (!unresolvable) return Error{"filter reply: " + unresolvable.message()};
  out.unresolvable = std::move(*unresolvable);
  for (auto& [n, why] : *failed) {
    if (!out.unresolvable.count(n)) out.failed[n] = why;
  }
  return out;
}

Result<std::map<std::string, int64_t>> SchedulerDriver::prioritize(size_t extender, const std::string& pod_json,
                                                                   const std::vector<CandidateNode>& candidates) {
  const ExtenderConfig& e = extenders_.at(extender);
  auto called = call(extender, e.prioritize_verb, extender_args_json(pod_json, candidates, e.node_cache_capable));
  if (!called) return Error{called.message()};
  const json& reply = *called;
  std::map<std::string, int64_t> out;
  if (reply.is_null()) return out;
  if (!reply.is_array()) return Error{"prioritize reply is not an array (HostPriorityList)"};
  for (const auto& hp : reply) {
    const json* host = field(hp, "Host");
    const json* score = field(hp, "Score");
    if (host != nullptr && !host->is_string()) return Error{"prioritize reply: Host is not a string"};
    if (score != nullptr && !score->is_number_integer()) return Error{"prioritize reply: Score is not an integer"};
    out[host ? host->get<std::string>() : ""] = score ? score->get<int64_t>() : 0;
  }
  return out;
}

CycleResult SchedulerDriver::schedule(const std::string& pod_json, const std::vector<CandidateNode>& candidates) {
  CycleResult result;
  // The survivors so far, as positions in `candidates` (no copies of Node objects).
  std::vector<size_t> feasible(candidates.size());
  for (size_t i = 0; i < feasible.size(); ++i) feasible[i] = i;
  auto subset = [&] {
    std::vector<CandidateNode> out;
    out.reserve(feasible.size());
    for (size_t i : feasible) out.push_back(candidates[i]);
    return out;
  };
  std::unordered_map<std::string_view, size_t> position;
  for (size_t i = 0; i < candidates.size(); ++i) position.emplace(candidates[i].name, i);
  for (size_t e_index : order_) {
    if (feasible.empty()) break;
    const ExtenderConfig& e = extenders_[e_index];
    if (e.filter_verb.empty() || !interested(e_index, pod_json)) continue;
    auto f = feasible.size() == candidates.size() ? filter(e_index, pod_json, candidates) : filter(e_index, pod_json, subset());
    if (!f) {
      if (e.ignorable) continue;
      result.error = f.message();
      return result;
    }
    std::vector<char> was(candidates.size(), 0);
    for (size_t i : feasible) was[i] = 1;
    std::vector<size_t> next;
    next.reserve(f->nodes.size());
    for (const auto& n : f->nodes) {
      auto it = position.find(n);
      if (it != position.end() && was[it->second]) next.push_back(it->second);
    }
    for (auto& [n, why] : f->failed) result.filter.failed[n] = why;
    for (auto& [n, why] : f->unresolvable) result.filter.unresolvable[n] = why;
    feasible = std::move(next);
  }
  for (size_t i : feasible) result.filter.nodes.push_back(candidates[i].name);
  if (feasible.empty()) return result;
  if (feasible.size() == 1) {
    result.node = candidates[feasible[0]].name;  // "just use it": no prioritize
    return result;
  }
  result.prioritized = true;
  const std::vector<CandidateNode> survivors = feasible.size() == candidates.size() ? std::vector<CandidateNode>{} : subset();
  const std::vector<CandidateNode>& nodes = feasible.size() == candidates.size() ? candidates : survivors;
  std::unordered_map<std::string_view, int64_t> total;
  for (const auto& c : nodes) total.emplace(c.name, 0);
  for (size_t i = 0; i < extenders_.size(); ++i) {
    const ExtenderConfig& e = extenders_[i];
    if (e.prioritize_verb.empty() || !interested(i, pod_json)) continue;
    auto p = prioritize(i, pod_json, nodes);
    if (!p) continue;  // prioritize errors are always ignored
    for (const auto& [host, score] : *p) {
      if (auto it = total.find(host); it != total.end()) it->second += score * e.weight * 10;
    }
  }
  int64_t best = INT64_MIN;
  for (const auto& c : nodes) {
    const int64_t t = total[c.name];
    result.scores[c.name] = t;
    if (t > best) {
      best = t;
      result.node = c.name;
    }
  }
  return result;
}

Status SchedulerDriver::introduce(const std::string& pod_json) {
  for (size_t i = 0; i < extenders_.size(); ++i) {
    if (extenders_[i].filter_verb.empty() || !interested(i, pod_json)) continue;
    auto r = filter(i, pod_json, {});
    if (!r) return Error{r.message()};
  }
  return Status::Ok();
}

Status SchedulerDriver::introduce_and_bind(const std::string& pod_json, const std::string& node) {
  if (Status s = introduce(pod_json); !s.ok()) return s;
  const json pod = json::parse(pod_json);
  const json meta = pod.value("metadata", json::object());
  return bind(meta.value("namespace", "default"), meta.value("name", ""), meta.value("uid", ""), node);
}

std::future<Status> SchedulerDriver::introduce_and_bind_async(std::string pod_json, std::string node) {
  return std::async(std::launch::async, [this, pod_json = std::move(pod_json), node = std::move(node)] {
    return introduce_and_bind(pod_json, node);
  });
}

Status SchedulerDriver::bind(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node) {
  for (size_t i = 0; i < extenders_.size(); ++i) {
    const ExtenderConfig& e = extenders_[i];
    if (e.bind_verb.empty()) continue;
    const json args = {{"PodName", name}, {"PodNamespace", ns}, {"PodUID", uid}, {"Node", node}};
    auto called = call(i, e.bind_verb, args.dump());
    if (!called) return Error{called.message()};
    const json& reply = *called;
    if (const json* err = field(reply, "Error")) {
      if (!err->is_string()) return Error{"bind reply: Error is not a string"};
      if (!err->get<std::string>().empty()) return Error{err->get<std::string>()};
    }
    return Status::Ok();
  }
  return Error{"no extender binds"};
}

std::future<Status> SchedulerDriver::bind_async(std::string ns, std::string name, std::string uid, std::string node) {
  return std::async(std::launch::async, [this, ns = std::move(ns), name = std::move(name), uid = std::move(uid),
                                         node = std::move(node)] { return bind(ns, name, uid, node); });
}

Result<std::map<std::string, std::vector<std::string>>> SchedulerDriver::preempt(
    size_t extender, const std::string& pod_json, const std::map<std::string, std::vector<std::string>>& victims) {
  const ExtenderConfig& e = extenders_.at(extender);
  json meta = json::object();
  for (const auto& [node, uids] : victims) {
    json pods = json::array();
    for (const auto& u : uids) pods.push_back({{"UID", u}});
    meta[node] = {{"Pods", pods}, {"NumPDBViolations", 0}};
  }
  const std::string body = "{\"Pod\":" + pod_json + ",\"NodeNameToVictims\":null,\"NodeNameToMetaVictims\":" + meta.dump() + "}";
  auto called = call(extender, e.preempt_verb, body);
  if (!called) return Error{called.message()};
  const json& reply = *called;
  std::map<std::string, std::vector<std::string>> out;
  const json* m = field(reply, "NodeNameToMetaVictims");
  if (m == nullptr) return out;
  for (auto it = m->begin(); it != m->end(); ++it) {
    const json* pods = field(it.value(), "Pods");
    if (pods == nullptr || pods->empty()) return Error{"expected at least one victim pod on node \"" + it.key() + "\""};
    auto& list = out[it.key()];
    for (const auto& p : *pods) {
      const json* uid = field(p, "UID");
      list.push_back(uid ? uid->get<std::string>() : "");
    }
  }
  return out;
}

Status ResourceFitFilter::add_node(const std::string& node_json) {
  const json n = json::parse(node_json, nullptr, false);
  if (!n.is_object()) return Error{"node: invalid JSON"};
  Room r;
  r.node = CandidateNode{n["metadata"].value("name", ""), node_json};
  const json alloc = n.value("status", json::object()).value("allocatable", json::object());
  auto cpu = fracpack::parse_cpu_milli(alloc.value("cpu", "0"));
  auto mem = fracpack::parse_memory_bytes(alloc.value("memory", "0"));
  if (!cpu || !mem) return Error{"node " + r.node.name + ": bad allocatable"};
  r.cpu_left = *cpu;
  r.memory_left = *mem;
  index_[r.node.name] = nodes_.size();
  nodes_.push_back(std::move(r));
  return Status::Ok();
}

std::pair<int64_t, int64_t> ResourceFitFilter::requests(const std::string& pod_json) {
  const json p = json::parse(pod_json, nullptr, false);
  auto sum = [](const json& containers, bool max_of) {
    int64_t cpu = 0, mem = 0;
    for (const auto& c : containers) {
      const json req = c.value("resources", json::object()).value("requests", json::object());
      int64_t cc = 0, mm = 0;
      if (req.contains("cpu")) {
        if (auto q = fracpack::parse_cpu_milli(req["cpu"].get<std::string>())) cc = *q;
      }
      if (req.contains("memory")) {
        if (auto q = fracpack::parse_memory_bytes(req["memory"].get<std::string>())) mm = *q;
      }
      cpu = max_of ? std::max(cpu, cc) : cpu + cc;
      mem = max_of ? std::max(mem, mm) : mem + mm;
    }
    return std::pair{cpu, mem};
  };
  const json spec = p.value("spec", json::object());
  auto app = sum(spec.value("containers", json::array()), false);
  auto init = sum(spec.value("initContainers", json::array()), true);
  return {std::max(app.first, init.first), std::max(app.second, init.second)};
}

std::vector<CandidateNode> ResourceFitFilter::feasible(const std::string& pod_json, bool with_objects) const {
  const auto [cpu, mem] = requests(pod_json);
  std::vector<CandidateNode> out;
  out.reserve(nodes_.size());
  for (const auto& r : nodes_) {
    if (r.cpu_left >= cpu && r.memory_left >= mem) out.push_back({r.node.name, with_objects ? r.node.json : std::string()});
  }
  return out;
}

void ResourceFitFilter::assume(const std::string& pod_json, const std::string& node) {
  auto it = index_.find(node);
  if (it == index_.end()) return;
  const auto [cpu, mem] = requests(pod_json);
  nodes_[it->second].cpu_left -= cpu;
  nodes_[it->second].memory_left -= mem;
}

}  // namespace fracpack::testing
