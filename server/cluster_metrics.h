// The scrape-time metrics: what the ledger (per card, cluster totals,
// fragmentation against the target workload), the sync (events, problems),
// the informers and the evaluation cache are at the moment of a scrape.
//
//   fracpack_card_{memory_allocated_bytes,memory_capacity_bytes,compute_allocated_ratio,sharers}{node,card,model}
//   fracpack_cluster_{gpus,gpu_allocated_ratio,gpu_fragmentation_ratio}, fracpack_pods{phase}
//   fracpack_sync_events_total{kind}, fracpack_sync_problems_total{kind}, fracpack_bind_fence_caught_up_total
//   fracpack_ready, fracpack_evaluation_cache_total{result}
//   fracpack_informer_{synced,lists_total,relists_total,events_total,errors_total,last_event_age_seconds}{resource}
//
// and what the extender port's connections and request bodies are
// (collect_http_metrics):
//
//   fracpack_http_connections_{open,max,evicted_total,refused_total}
//   fracpack_http_request_body_bytes_in_flight, fracpack_http_{requests_busy,bad_requests,timeouts}_total
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "k8s/cluster_informers.h"
#include "k8s/cluster_state.h"
#include "scheduling/evaluator.h"
#include "scheduling/workload.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace fracpack::server {

struct ClusterMetricsSources {
  const k8s::ClusterState& state;
  const scheduling::Evaluator& evaluator;
  std::shared_ptr<const scheduling::ShapeCounts> workload;          // may be null (no fragmentation figure)
  std::function<std::vector<k8s::SourceHealth>()> sources;          // may be empty (standalone)
};

void collect_cluster_metrics(const ClusterMetricsSources& in, std::vector<SampledFamily>& out);

// `max_connections`: limits.maxConnections.
void collect_http_metrics(const HttpCounters& http, size_t max_connections, std::vector<SampledFamily>& out);

}  // namespace fracpack::server
