// The ledger as JSON, per node and card: what GET /debug/ledger serves and
// what `fracpack inspect` prints (from a running server or from a snapshot,
// through this one function).
//
// {"nodes":[{"name","present","cpuMilli","cpuRequestedMilli","memoryBytes",
//            "memoryRequestedBytes",
//            "cards":[{"index","uuid","model","memoryMiB","memoryUsedMiB",
//                      "computeMilli","computeUsedMilli","sharers","healthy",
//                      "cordoned","pods":["ns/name",...]}],
//            "pods":[{"pod","uid","phase":"assumed"|"confirmed",
//                     "expiresInMs" (assumed: time left of its TTL)}]}],
//  "totals":{"nodes","gpus","gpuMilliUsed","allocatedRatio","pods",
//            "assumedPods","fragmentationRatio" (with a target workload)},
//  "quotas":[{"namespace","resourceQuota","key","used","hard" | "malformed"}]}
//
// The quotas (scheduling/quota.h) alone are what GET /debug/quota serves and
// `fracpack inspect quota` prints: used and hard in the key's unit (cards,
// MiB, percent of a card), reservations of binds in flight included.
#pragma once

#include <string>

#include "scheduling/ledger.h"
#include "scheduling/workload.h"

namespace fracpack::server {

// `workload` may be null: then the totals carry no fragmentation figure.
std::string ledger_report_json(const scheduling::Ledger& ledger, const scheduling::ShapeCounts* workload);
// The "quotas" array alone.
std::string quota_report_json(const scheduling::Ledger& ledger);

}  // namespace fracpack::server
