// The chaos soak (issue: reliability): the test scheduler driver against
// `fracpack serve` as a child process, synced from the fake API server,
// while the API server injects random faults in bursts (dropped, expired
// and closed watches, compacted history, 409/500/lost answers on bindings,
// 429s, GET 500s, slow answers, late watch events), pods are created and
// deleted at random, and fracpack is killed (SIGKILL) and restarted mid-run.
// Invariants are checked continuously and at the end:
//   * no card over-committed, in the pods' annotations or in fracpack's ledger;
//   * no pod bound twice (its node and allocation never change once bound);
//   * no reservation past its TTL (beyond one reconciler pass) unless its pod
//     is bound there (the watch lagging: released only when provably unbound;
//     for a pod deleted while bound, the allowance runs from the deletion);
//   * the process never ends by itself (no crash);
//   * at the end, every bound pod's annotation equals fracpack's ledger.
// Used by test/server/chaos_test.cc (CI-sized) and bench/chaos_bench.cc (long).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/support/soak_options.h"

namespace fracpack::testing {

struct ChaosOptions : SoakOptions {
  // The contract the cluster speaks (test/support/soak_profile.h): its
  // nodes, pods and records; kubelet admits bound pods through the peer's
  // device plugin double.
  std::string profile = "fracpack";
  uint64_t restart_every = 700;   // operations between kills of fracpack (0: never)
  // Share of operations that inject a fault the informers ride through
  // (binding 409 / 500 / answer lost, GET 500, slow answers, late watch
  // events)...
  double fault_rate = 0.03;
  // ...and of those that can break fracpack's watches (closed at once, cut
  // mid-event, 410, compacted history, 429, every watch closed). Each may
  // send an informer into client-go's backoff (0.8 s doubling to 30 s, reset
  // only after 2 quiet minutes): at the default, the watches are down most
  // of the run and fracpack works from lists, binds and the reconciler; a
  // rate of about one per 30 s of run keeps them up most of the time.
  double disruption_rate = 0.02;
  uint64_t check_every = 100;     // operations between invariant checks
  // Allowed beyond one reconcile interval before a reservation past its TTL
  // counts as leaked (sanitizer builds run several times slower).
  std::chrono::milliseconds ttl_slack{1500};
};

struct ChaosReport {
  uint64_t operations = 0;
  uint64_t created = 0, deleted = 0, cycles = 0, placed = 0, unschedulable = 0, bind_failures = 0, cycle_errors = 0;
  uint64_t restarts = 0, killed_mid_bind = 0, checks = 0;
  uint64_t admitted = 0;  // bound pods the peer's device plugin double served (hami, gpushare)
  std::map<std::string, uint64_t> faults;  // by kind
  // What fracpack's informers met, summed over its processes (from /metrics,
  // read before each kill and at the end): how much of the run reached it
  // through watch events, and how much only through lists.
  uint64_t watch_events = 0, lists = 0;
  uint64_t violations = 0;
  std::vector<std::string> samples;        // the first violations, described
  double seconds = 0;
  double max_ready_seconds = 0;  // the longest restart, SIGKILL to ready
  uint64_t faults_total() const;
  std::string summary() const;
};

ChaosReport run_chaos(const ChaosOptions& options);

}  // namespace fracpack::testing
