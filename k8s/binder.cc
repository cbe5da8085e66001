#include "k8s/binder.h"

#include <map>
#include <optional>
#include <thread>

#include "k8s/bind_fence.h"
#include "k8s/cluster_state.h"
#include "k8s/contract.h"
#include "k8s/json_write.h"

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

namespace {

// Does the pod as the API server has it now sit on the target node? When
// the GET fails too, nobody knows: the Binding may have been applied.
enum class Presence { kThere, kNotThere, kUnknown };
Presence already_there(ApiClient& client, const BindTarget& t, std::chrono::milliseconds timeout) {
  auto r = client.request("GET", "/api/v1/namespaces/" + t.namespace_name + "/pods/" + t.name, {}, "application/json", timeout);
  if (!r) return Presence::kUnknown;
  if (r->status == 404) return Presence::kNotThere;
  if (r->status != 200) return Presence::kUnknown;
  auto pod = parse_pod(r->body, Selection{});
  if (!pod) return Presence::kUnknown;
  return pod->node_name == t.node && (t.uid.empty() || pod->meta.uid == t.uid) ? Presence::kThere : Presence::kNotThere;
}

}  // namespace

Result<BindOutcome> bind_pod(ApiClient& client, const BindTarget& t, bool* pod_gone, bool* outcome_unknown,
                             std::chrono::milliseconds timeout) {
  if (pod_gone != nullptr) *pod_gone = false;
  if (outcome_unknown != nullptr) *outcome_unknown = false;
  const std::string path = "/api/v1/namespaces/" + t.namespace_name + "/pods/" + t.name + "/binding";
  auto r = client.request("POST", path, binding_json(t), "application/json", timeout);
  if (!r) {
    // The request may have reached the server before the connection failed.
    const Presence p = already_there(client, t, timeout);
    if (p == Presence::kThere) return BindOutcome::kAlreadyBound;
    if (outcome_unknown != nullptr) *outcome_unknown = p == Presence::kUnknown;
    return Error{"binding " + t.namespace_name + "/" + t.name + " to " + t.node + ": " + r.message()};
  }
  if (r->status == 201 || r->status == 200) return BindOutcome::kBound;
  const std::string message = status_message(r->body);
  if (r->status == 409 && message.find("is already assigned to node \"" + t.node + "\"") != std::string::npos) {
    return BindOutcome::kAlreadyBound;
  }
  if (r->status >= 500 || r->status == 429) {
    // A 5xx may come after the write was applied (an etcd timeout).
    const Presence p = already_there(client, t, timeout);
    if (p == Presence::kThere) return BindOutcome::kAlreadyBound;
    if (outcome_unknown != nullptr) *outcome_unknown = p == Presence::kUnknown;
  }
  if (pod_gone != nullptr) *pod_gone = r->status == 404 || (r->status == 409 && message.find("Precondition failed: UID") != std::string::npos);
  return Error{"binding " + t.namespace_name + "/" + t.name + " to " + t.node + ": API server answered " +
               api_error_message(*r)};
}

size_t reconcile_assumptions(ApiClient& client, ClusterState& state, std::chrono::milliseconds min_age) {
  size_t resolved = 0;
  bool answering = true;  // no GET of this pass has failed three times
  for (const auto& s : state.stale_assumptions(scheduling::Clock::now(), min_age)) {
    auto get = [&] { return client.request("GET", "/api/v1/namespaces/" + s.namespace_name + "/pods/" + s.name); };
    auto r = get();
    auto failed = [&] { return !r || (r->status != 200 && r->status != 404); };
    // Past its TTL a reservation waits for the API server's word: a failed
    // answer (a 500, a 429) is tried again now, twice, rather than a whole
    // interval later (the chaos soak saw such reservations held seconds past
    // their TTL). A Retry-After is honoured up to a second. Once all three
    // fail, the rest of the pass makes one attempt per reservation: a pass
    // over many reservations must not triple an outage's timeouts.
    for (int retry = 1; retry <= 2 && answering && s.past_ttl && failed(); ++retry) {
      const auto asked = r ? retry_after_delay(r->retry_after) : std::chrono::milliseconds(0);
      if (asked > std::chrono::seconds(1)) break;
      std::this_thread::sleep_for(std::max<std::chrono::milliseconds>(asked, std::chrono::milliseconds(50 * retry)));
      r = get();
      if (retry == 2 && failed()) answering = false;
    }
    if (!r) continue;  // cannot tell now; try again later
    if (r->status == 404) {
      state.note_gone(s.uid);
      ++resolved;
      continue;
    }
    if (r->status != 200) continue;
    auto pod = parse_pod(r->body, state.selection());
    if (!pod) continue;
    // Only release. A GET answered before a deletion the watch has since
    // applied would resurrect the pod as confirmed, with nothing left to
    // remove it: confirmations come from the informer alone (a live, bound
    // pod is in its next event or list).
    if (pod->meta.uid != s.uid || pod->terminal()) {
      state.note_gone(s.uid);
      ++resolved;
    } else if (!pod->node_name.empty() && pod->node_name != s.node) {
      state.note_reconciled(s.uid);
      ++resolved;
    } else if (pod->node_name.empty() && s.past_ttl) {
      // Past its TTL and provably not bound: the Binding never took effect.
      // (Bound here but not yet confirmed: kept — releasing it would let
      // another pod take its cards while the watch lags.)
      state.note_expired(s.uid);
      ++resolved;
    }
  }
  return resolved;
}

std::vector<OverCommittedCard> confirm_overcommitted(ApiClient& client, BindFence& fence, const ClusterState& state) {
  std::vector<OverCommittedCard> confirmed;
  std::map<std::string, std::optional<std::vector<Pod>>> read;  // node -> its pods as the API server has them
  for (auto& card : state.overcommitted()) {
    auto& pods = read[card.node];
    if (!pods) {
      const auto now = std::chrono::steady_clock::now();
      auto r = fence.node_pods(client, card.node, now, now + client.config().request_timeout);
      if (!r) continue;
      pods = std::move(*r);
    }
    int cores = 0;
    int64_t memory = 0;
    std::vector<std::pair<std::string, std::string>> holders;
    for (const Pod& p : *pods) {
      const std::string* record = p.meta.annotation(state.names().allocation);
      if (record == nullptr) continue;
      auto a = parse_allocation(*record);
      if (!a || a->node != card.node) continue;
      bool holds = false;
      for (const auto& c : scheduling::charges_of(*a)) {
        if (c.index != card.index) continue;
        cores += c.cores;
        memory += c.memory_mib;
        holds = true;
      }
      if (holds) holders.emplace_back(p.key(), p.meta.uid);
    }
    if (cores <= scheduling::kCardMilli && memory <= card.capacity_mib) continue;
    std::sort(holders.begin(), holders.end());
    card.cores = cores;
    card.memory_mib = memory;
    card.pods = std::move(holders);
    confirmed.push_back(std::move(card));
  }
  return confirmed;
}

}  // namespace fracpack::k8s
