#include "server/cluster_metrics.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "scheduling/fragmentation.h"

namespace fracpack::server {

using scheduling::Ledger;

void collect_cluster_metrics(const ClusterMetricsSources& in, std::vector<SampledFamily>& out) {
  using Type = SampledFamily::Type;
  SampledFamily mem{"fracpack_card_memory_allocated_bytes", "GPU memory reserved on a card.", Type::kGauge, {}};
  SampledFamily cap{"fracpack_card_memory_capacity_bytes", "GPU memory of a card.", Type::kGauge, {}};
  SampledFamily compute{"fracpack_card_compute_allocated_ratio", "Share of a card's compute reserved (0..1).", Type::kGauge, {}};
  SampledFamily sharers{"fracpack_card_sharers", "Pods holding a share of a card.", Type::kGauge, {}};
  SampledFamily cluster_gpus{"fracpack_cluster_gpus", "GPUs on the nodes fracpack knows.", Type::kGauge, {}};
  SampledFamily isolation{"fracpack_card_isolation",
                          "What holds each container to its share of a card (1 for the card's isolation: none, mps, hami-core, mig).",
                          Type::kGauge, {}};
  SampledFamily by_isolation{"fracpack_cluster_gpus_by_isolation", "GPUs on the nodes fracpack knows, by what enforces a share on them.",
                             Type::kGauge, {}};
  std::map<std::string, double> isolation_count;
  SampledFamily cluster_alloc{"fracpack_cluster_gpu_allocated_ratio", "Share of all GPU compute reserved (0..1).", Type::kGauge, {}};
  SampledFamily cluster_frag{"fracpack_cluster_gpu_fragmentation_ratio",
                             "Idle GPU compute the target workload cannot use, as a share of all (0..1).", Type::kGauge, {}};
  SampledFamily pod_count{"fracpack_pods", "Pods in the ledger, by phase.", Type::kGauge, {}};
  in.state.read([&](const Ledger& ledger) {
    int64_t gpus = 0, used = 0;
    std::optional<scheduling::FragmentationModel> model;
    if (in.workload) model.emplace(scheduling::Workload::typical(*in.workload));
    double frag = 0;
    for (const auto& [name, node] : ledger.nodes()) {
      if (!node.present()) continue;
      for (size_t p = 0; p < node.cards().size(); ++p) {
        const auto& card = node.cards()[p];
        const auto& use = node.use()[p];
        std::vector<std::pair<std::string, std::string>> labels = {
            {"node", name}, {"card", std::to_string(card.index)}, {"model", card.model}};
        mem.samples.push_back({labels, static_cast<double>(use.memory_mib) * 1048576.0});
        cap.samples.push_back({labels, static_cast<double>(card.memory_mib) * 1048576.0});
        compute.samples.push_back({labels, static_cast<double>(use.cores) / 1000.0});
        sharers.samples.push_back({labels, static_cast<double>(use.sharers)});
        const char* iso = scheduling::isolation_name(card.isolation);
        labels.emplace_back("isolation", iso);
        isolation.samples.push_back({std::move(labels), 1.0});
        isolation_count[iso] += 1;
        ++gpus;
        used += std::min(use.cores, scheduling::kCardMilli);
      }
      if (model) frag += model->frag(node);
    }
    cluster_gpus.samples.push_back({{}, static_cast<double>(gpus)});
    cluster_alloc.samples.push_back({{}, gpus > 0 ? static_cast<double>(used) / (1000.0 * static_cast<double>(gpus)) : 0});
    if (model) cluster_frag.samples.push_back({{}, gpus > 0 ? frag / (1000.0 * static_cast<double>(gpus)) : 0});
    const double assumed = static_cast<double>(ledger.assumed_count());
    pod_count.samples.push_back({{{"phase", "assumed"}}, assumed});
    pod_count.samples.push_back({{{"phase", "confirmed"}}, static_cast<double>(ledger.pod_count()) - assumed});
    return 0;
  });
  for (const char* iso : {"none", "mps", "hami-core", "mig"}) by_isolation.samples.push_back({{{"isolation", iso}}, isolation_count[iso]});
  for (auto* f : {&mem, &cap, &compute, &sharers, &isolation, &cluster_gpus, &by_isolation, &cluster_alloc, &pod_count}) {
    out.push_back(std::move(*f));
  }
  if (!cluster_frag.samples.empty()) out.push_back(std::move(cluster_frag));

  const k8s::SyncCounters c = in.state.counters();
  SampledFamily sync{"fracpack_sync_events_total", "Objects applied to the ledger, by kind.", Type::kCounter, {}};
  sync.samples = {{{{"kind", "pod"}}, static_cast<double>(c.pod_events)}, {{{"kind", "node"}}, static_cast<double>(c.node_events)}};
  SampledFamily problems{"fracpack_sync_problems_total", "Objects that could not be read or had to be inferred, by kind.",
                         Type::kCounter, {}};
  problems.samples = {{{{"kind", "malformed_pod"}}, static_cast<double>(c.malformed_pods)},
                      {{{"kind", "malformed_node"}}, static_cast<double>(c.malformed_nodes)},
                      {{{"kind", "malformed_config_map"}}, static_cast<double>(c.malformed_config_maps)},
                      {{{"kind", "malformed_resource_quota"}}, static_cast<double>(c.malformed_quotas)},
                      {{{"kind", "inferred_allocation"}}, static_cast<double>(c.inferred_allocations)},
                      {{{"kind", "overcommit_report"}}, static_cast<double>(c.overcommit_reports)},
                      {{{"kind", "expired_assumption"}}, static_cast<double>(c.expired_assumptions)},
                      {{{"kind", "relist_deletion"}}, static_cast<double>(c.relist_deletions)},
                      {{{"kind", "reconciled_assumption"}}, static_cast<double>(c.reconciled_assumptions)},
                      {{{"kind", "stale_event"}}, static_cast<double>(c.stale_events)}};
  out.push_back(std::move(sync));
  out.push_back(std::move(problems));
  out.push_back(SampledFamily{"fracpack_bind_fence_caught_up_total",
                              "Bound pods a bind's fence read from the API server before the watch delivered them "
                              "(another writer's binds: the other replica after a failover, an old leader).",
                              Type::kCounter,
                              {{{}, static_cast<double>(c.fence_caught_up)}}});
  out.push_back(SampledFamily{"fracpack_allocation_records_not_followed_total",
                              "Allocation records the ledger did not follow, by why: rejected (not signed by fracpack's "
                              "extender, or holding more than the pod asks), changed (after the pod was charged), ignored "
                              "(on a pod that asks no GPU). Each is also an Event on its pod.",
                              Type::kCounter,
                              {{{{"kind", "rejected"}}, static_cast<double>(c.rejected_records)},
                               {{{"kind", "changed"}}, static_cast<double>(c.changed_records)},
                               {{{"kind", "ignored"}}, static_cast<double>(c.ignored_records)}}});
  SampledFamily records{"fracpack_records",
                        "Bound pods by the key that signed their allocation record (\"unsigned\": trusted by "
                        "security.unsignedBefore; \"trusted\": records not verified; \"none\": no record followed). A key "
                        "is retired once it counts 0.",
                        Type::kGauge, {}};
  for (const auto& [key, n] : in.state.records_by_key()) records.samples.push_back({{{"key", key}}, static_cast<double>(n)});
  out.push_back(std::move(records));
  // The namespace GPU quota: one sample per limit (the operators'
  // ResourceQuotas bound the cardinality: three keys per object at most).
  SampledFamily quota_used{"fracpack_quota_used",
                           "What a namespace's pods hold against a ResourceQuota limit of fracpack's keys, in the key's unit "
                           "(cards, MiB, percent of a card), reservations of binds in flight included.",
                           Type::kGauge, {}};
  SampledFamily quota_hard{"fracpack_quota_hard", "The limit (spec.hard) of a ResourceQuota key fracpack enforces, in MiB for memory.",
                           Type::kGauge, {}};
  SampledFamily quota_malformed{"fracpack_quota_malformed",
                                "1 for a ResourceQuota key whose value cannot be read: it refuses every new GPU placement in its "
                                "namespace until fixed.",
                                Type::kGauge, {}};
  for (const auto& row : in.state.quota_rows()) {
    std::vector<std::pair<std::string, std::string>> l = {
        {"namespace", row.namespace_name}, {"resourcequota", row.limit.object}, {"key", row.limit.key}};
    quota_used.samples.push_back({l, static_cast<double>(row.used)});
    if (row.limit.malformed.empty()) {
      quota_hard.samples.push_back({l, static_cast<double>(row.limit.hard)});
    } else {
      quota_malformed.samples.push_back({l, 1.0});
    }
  }
  out.push_back(std::move(quota_used));
  out.push_back(std::move(quota_hard));
  out.push_back(std::move(quota_malformed));
  SampledFamily ready{"fracpack_ready", "1 once the initial lists are applied.", Type::kGauge, {{{}, in.state.ready() ? 1.0 : 0.0}}};
  out.push_back(std::move(ready));

  const auto es = in.evaluator.stats();
  SampledFamily cache{"fracpack_evaluation_cache_total", "Node evaluations served from the cache (hit) or computed (miss).",
                      Type::kCounter, {}};
  cache.samples = {{{{"result", "hit"}}, static_cast<double>(es.hits)}, {{{"result", "miss"}}, static_cast<double>(es.misses)}};
  out.push_back(std::move(cache));

  if (in.sources) {
    SampledFamily synced{"fracpack_informer_synced", "1 once the informer's initial list is applied.", Type::kGauge, {}};
    SampledFamily lists{"fracpack_informer_lists_total", "Complete lists applied (the first and every relist).", Type::kCounter, {}};
    SampledFamily relists{"fracpack_informer_relists_total", "Lists after the first.", Type::kCounter, {}};
    SampledFamily events{"fracpack_informer_events_total", "Watch events applied.", Type::kCounter, {}};
    SampledFamily errors{"fracpack_informer_errors_total", "Failed requests and broken streams.", Type::kCounter, {}};
    SampledFamily age{"fracpack_informer_last_event_age_seconds", "Seconds since the last watch event or bookmark (-1: none).",
                      Type::kGauge, {}};
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [resource, s] : in.sources()) {
      std::vector<std::pair<std::string, std::string>> l = {{"resource", resource}};
      synced.samples.push_back({l, s.synced ? 1.0 : 0.0});
      lists.samples.push_back({l, static_cast<double>(s.lists)});
      relists.samples.push_back({l, static_cast<double>(s.relists)});
      events.samples.push_back({l, static_cast<double>(s.events)});
      errors.samples.push_back({l, static_cast<double>(s.errors)});
      const bool never = s.last_event == std::chrono::steady_clock::time_point{};
      age.samples.push_back({l, never ? -1.0 : std::chrono::duration<double>(now - s.last_event).count()});
    }
    for (auto* f : {&synced, &lists, &relists, &events, &errors, &age}) out.push_back(std::move(*f));
  }
}

void collect_http_metrics(const HttpCounters& h, size_t max_connections, std::vector<SampledFamily>& out) {
  using Type = SampledFamily::Type;
  auto one = [&out](const char* name, const char* help, Type type, double value) {
    out.push_back(SampledFamily::single(name, help, type, value));
  };
  one("fracpack_http_connections_open", "Connections open on the extender port.", Type::kGauge, static_cast<double>(h.open_connections));
  one("fracpack_http_connections_max", "limits.maxConnections.", Type::kGauge, static_cast<double>(max_connections));
  one("fracpack_http_connections_evicted_total", "Idle connections closed at limits.maxConnections to make room for a new one.",
      Type::kCounter, static_cast<double>(h.evicted));
  one("fracpack_http_connections_refused_total", "Connections refused at limits.maxConnections with none idle to close.",
      Type::kCounter, static_cast<double>(h.refused));
  one("fracpack_http_request_body_bytes_in_flight", "Request bodies held now (limits.maxBodyBytesInFlight bounds it).", Type::kGauge,
      static_cast<double>(h.body_bytes));
  one("fracpack_http_requests_busy_total", "Requests answered 503: their body would pass limits.maxBodyBytesInFlight.",
      Type::kCounter, static_cast<double>(h.busy));
  one("fracpack_http_bad_requests_total", "Requests the HTTP layer refused itself (400, 413, 431).", Type::kCounter,
      static_cast<double>(h.bad_requests));
  one("fracpack_http_timeouts_total", "Connections closed for a header, body or idle deadline.", Type::kCounter,
      static_cast<double>(h.timeouts));
}

}  // namespace fracpack::server
