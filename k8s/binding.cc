#include "k8s/binding.h"

#include <algorithm>


#include "common/json/write.h"

namespace fracpack::k8s {

std::string binding_json(const BindTarget& t) {
  std::string out = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)";
  append_json_string(out, t.name);
  out += R"(,"namespace":)";
  append_json_string(out, t.namespace_name);
  if (!t.uid.empty()) {
    out += R"(,"uid":)";
    append_json_string(out, t.uid);
  }
  if (!t.annotations.empty()) {
    out += R"(,"annotations":{)";
    for (size_t i = 0; i < t.annotations.size(); ++i) {
      if (i > 0) out += ",";
      append_json_string(out, t.annotations[i].first);
      out += ":";
      append_json_string(out, t.annotations[i].second);
    }
    out += "}";
  }
  out += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)";
  append_json_string(out, t.node);
  out += "}}";
  return out;
}

// Does the pod as the API server has it now sit on the target node? When
// the GET fails too, nobody knows: the Binding may have been applied.
Presence already_there(ApiClient& client, const BindTarget& t, std::chrono::milliseconds timeout) {
  auto r = client.request("GET", "/api/v1/namespaces/" + t.namespace_name + "/pods/" + t.name, {}, "application/json", timeout);
  if (!r) return Presence::kUnknown;
  if (r->status == 404) return Presence::kGone;
  if (r->status != 200) return Presence::kUnknown;
  auto pod = parse_pod(r->body, Selection{});
  if (!pod) return Presence::kUnknown;
  if (!t.uid.empty() && pod->meta.uid != t.uid) return Presence::kGone;
  return pod->node_name == t.node ? Presence::kThere : Presence::kNotThere;
}

Result<BindOutcome> post_binding(ApiClient& client, const BindTarget& t, bool* pod_gone, bool* outcome_unknown,
                             std::chrono::milliseconds timeout) {
  if (pod_gone != nullptr) *pod_gone = false;
  if (outcome_unknown != nullptr) *outcome_unknown = false;
  const std::string path = "/api/v1/namespaces/" + t.namespace_name + "/pods/" + t.name + "/binding";
  auto r = client.request("POST", path, binding_json(t), "application/json", timeout);
  if (!r && !client.last_request_sent()) {
    // Never sent (no connection: an API server restarting): not applied.
    return Error{"binding " + t.namespace_name + "/" + t.name + " to " + t.node + ": " + r.message() + " (not sent)"};
  }
  // The read that tells whether a Binding was applied gets a budget of its
  // own: the POST's remnant (a few ms at a bind's deadline) would leave the
  // outcome unknown where one read would settle it.
  const auto read_budget = std::max(timeout, kSettleReadTimeout);
  if (!r) {
    // The request may have reached the server before the connection failed.
    const Presence p = already_there(client, t, read_budget);
    if (p == Presence::kThere) return BindOutcome::kAlreadyBound;
    if (outcome_unknown != nullptr) *outcome_unknown = p == Presence::kUnknown;
    if (pod_gone != nullptr) *pod_gone = p == Presence::kGone;
    return Error{"binding " + t.namespace_name + "/" + t.name + " to " + t.node + ": " + r.message()};
  }
  if (r->status == 201 || r->status == 200) return BindOutcome::kBound;
  const std::string message = status_message(r->body);
  if (r->status == 409 && message.find("is already assigned to node \"" + t.node + "\"") != std::string::npos) {
    return BindOutcome::kAlreadyBound;
  }
  if (r->status >= 500 || r->status == 429) {
    // A 5xx may come after the write was applied (an etcd timeout).
    const Presence p = already_there(client, t, read_budget);
    if (p == Presence::kThere) return BindOutcome::kAlreadyBound;
    if (outcome_unknown != nullptr) *outcome_unknown = p == Presence::kUnknown;
  }
  if (pod_gone != nullptr) *pod_gone = r->status == 404 || (r->status == 409 && message.find("Precondition failed: UID") != std::string::npos);
  return Error{"binding " + t.namespace_name + "/" + t.name + " to " + t.node + ": API server answered " +
               api_error_message(*r)};
}

}  // namespace fracpack::k8s
