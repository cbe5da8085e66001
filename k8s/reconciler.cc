#include "k8s/reconciler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include "k8s/bind_fence.h"
#include "k8s/cluster_state.h"

namespace fracpack::k8s {

size_t reconcile_assumptions(ApiClient& client, ClusterState& state, std::chrono::milliseconds min_age) {
  size_t resolved = 0;
  bool answering = true;  // no GET of this pass has failed three times
  for (const auto& s : state.reservations().stale(scheduling::Clock::now(), min_age)) {
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
    std::optional<Pod> pod;  // none: 404
    if (r->status == 200) {
      auto parsed = parse_pod(r->body, state.selection());
      if (!parsed) continue;
      pod = std::move(*parsed);
    } else if (r->status != 404) {
      continue;
    }
    // Only release (Reservations::pod_read decides): confirmations come
    // from the informer alone.
    if (state.reservations().pod_read(s, pod ? &*pod : nullptr) != Reservations::Exit::kKept) ++resolved;
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
      // Only what the ledger charges: a record it rejects (unsigned,
      // forged, holding more than asked) double-books nothing, and a record
      // patched after the ledger charged the pod is not what it holds.
      bool holds = false;
      for (const auto& c : state.counted_record(p)) {
        if (c.index != card.index) continue;
        cores += c.cores;
        memory += c.memory_mib;
        holds = true;
      }
      if (holds) holders.emplace_back(p.key(), p.meta.uid);
    }
    if (!scheduling::card_over_capacity(cores, memory, card.capacity_mib)) continue;
    std::sort(holders.begin(), holders.end());
    card.cores = cores;
    card.memory_mib = memory;
    card.pods = std::move(holders);
    confirmed.push_back(std::move(card));
  }
  return confirmed;
}

}  // namespace fracpack::k8s
