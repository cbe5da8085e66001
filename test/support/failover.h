// The failover soak (issue: failover over-commit): two `fracpack serve`
// processes, as manifests/deployment.yaml runs them, both synced from the
// test API server; the test scheduler driver calls one of them and, at each
// failover, the other — with binds pipelined as kube-scheduler sends them
// (asynchronously, a few in flight), watch connections cut mid-event at
// random, and pods deleted now and then. At a failover the old leader either
// stays up, no longer called (its lease lost: binds already sent still
// complete), or is killed with binds in flight and restarted as the standby.
//
// What it counts is what a device plugin would hand out: cards whose
// allocation records (the pods' annotations) sum past the card — two
// exclusive pods on one card, or memory or compute above it — checked after
// every failover and at the end. With quota_namespaces, the pods are spread
// over namespaces with GPU ResourceQuotas (issue 32), and it also counts
// namespaces whose pods' records sum past a quota's hard limit, sampled
// every few operations, after every failover and at the end.
// Used by test/server/failover_test.cc (CI-sized) and bench/failover_bench.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "k8s/bind_fence_read.h"
#include "test/support/soak_options.h"

namespace fracpack::testing {

struct FailoverOptions : SoakOptions {
  int failovers = 9;
  bool kill_old_leader = false;  // SIGKILL at the switch (with binds in flight), else it stays up
  int watch_cut_permille = 30;   // watch events cut mid-event, connection dropped
  double delete_share = 0.20;    // of operations: a pod deleted
  double create_share = 0.25;    // of operations: a pod created (the rest schedule one)
  // A pause after each operation: the run's pace (a failover every
  // operations / (failovers + 1) operations), so watches have time to fall
  // behind and catch up as they would in a cluster.
  std::chrono::microseconds pause{1000};
  int binds_in_flight = 3;       // pipelined binds, as kube-scheduler's binding goroutines
  // kube-scheduler's lease handover: the new leader starts only when the
  // old one's lease has expired (leaseDuration 15 s after its last renewal;
  // it stopped scheduling at renewDeadline, 10 s), so binds the old leader
  // sent have settled (fracpack's bindTimeout, 4 s, is shorter than the 5 s
  // between the two). With true the switch waits for them (bounded by 5 s);
  // with false it is instant, and the old leader's binds race the new
  // leader's: harsher than kube-scheduler allows.
  bool lease_handover = true;
  k8s::BindFenceRead bind_fence_read = k8s::BindFenceRead::kConsistent;  // fracpack's cluster.bindFenceRead
  // The API server's slow regime: this share (thousandths) of answers is
  // late by slow_ms.
  int slow_permille = 0;
  int slow_ms = 0;
  // Namespace GPU quota: the pods spread over this many namespaces
  // "team-<i>" (0: every pod in default, no quota), each with the
  // ResourceQuotas of failover.cc's quota_objects (of four shapes: cards,
  // memory, cores, and two objects at once); usage by the annotations is
  // checked every quota_sample_every operations, at each failover and at
  // the end.
  int quota_namespaces = 0;
  uint64_t quota_sample_every = 25;
};

// One limit of one namespace's ResourceQuota, and the most its namespace's
// records were seen to use of it.
struct QuotaRow {
  std::string ns, object, key;
  int64_t hard = 0;
  int64_t max_seen = 0, at_end = 0;  // cards, MiB or percent, as the key counts
};
// Per namespace: pods created, bound, and refused for its quota (filter:
// a cycle whose nodes all failed naming a ResourceQuota; bind: a bind
// refused naming one), as refusals and as distinct pods refused at least once.
struct NamespaceCounts {
  uint64_t created = 0, placed = 0, refused_by_filter = 0, refused_by_bind = 0, pods_refused = 0;
};

struct FailoverReport {
  uint64_t operations = 0, created = 0, deleted = 0, cycles = 0, placed = 0, unschedulable = 0, bind_failures = 0,
           cycle_errors = 0;
  uint64_t failovers = 0, killed_mid_bind = 0;
  // Cards over-committed by the annotations: at the end, and the most seen
  // at any check after a failover.
  uint64_t overcommitted_at_end = 0;
  uint64_t overcommitted_max = 0;
  std::vector<std::string> samples;  // the first over-committed cards, described
  // The binds: latency as the driver saw it (ms), and the API server's
  // requests that the bind path made, per placed pod.
  std::vector<double> bind_ms;
  uint64_t bindings_posted = 0, fence_reads = 0, node_reads = 0;
  // fracpack's own count: pods a bind's freshness read found that the
  // watch had not delivered yet, and over-committed cards the reconcilers
  // reported (summed over the processes' last /metrics).
  double fence_caught_up = 0, reported_overcommitted = 0;
  double marker_fallbacks = 0;  // binds fenced consistently: the marker pod missing or refused
  double seconds = 0;
  // With quota_namespaces: every limit's row, the namespaces' counts, how
  // many samples were taken, and the limits exceeded (at most at one
  // sample, and at the end).
  std::vector<QuotaRow> quota_rows;
  std::map<std::string, NamespaceCounts> namespaces;
  uint64_t quota_samples = 0, over_quota_max = 0, over_quota_at_end = 0;
  uint64_t namespace_reads = 0;  // the bind path's reads of a namespace's pods
  std::string summary() const;
  // A table: namespace, object, key, pods created / bound / refused for
  // quota (filter, bind), max seen, hard.
  std::string quota_table() const;
};

FailoverReport run_failover(const FailoverOptions& options);

}  // namespace fracpack::testing
