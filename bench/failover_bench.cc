// The long failover soak: bench/failover_bench [--operations N] [--failovers N]
// [--seed S] [--kill 0|1] [--cut-permille N] [--nodes N] [--slow-permille N --slow-ms N]
// [--binds-in-flight N] [--pause-us N] [--handover 0|1] [--fence-read consistent|resourceVersion|marker]
// [--quota-namespaces N] [--quota-sample-every N]. With --quota-namespaces,
// pods spread over N namespaces with GPU ResourceQuotas, and a table of each
// limit's use by the annotations (the most seen at any sample) against hard. Two fracpack processes on the test API server;
// prints the over-committed cards (by the annotations: what a device plugin
// would hand out), bind latency and the API requests per bind. See
// test/support/failover.h. FRACPACK_TEST_BINARY runs another fracpack build.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/support/failover.h"

int main(int argc, char** argv) {
  fracpack::testing::FailoverOptions o;
  o.verbose = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--operations") o.operations = std::strtoull(v, nullptr, 10);
    else if (flag == "--failovers") o.failovers = std::atoi(v);
    else if (flag == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--kill") o.kill_old_leader = std::atoi(v) != 0;
    else if (flag == "--cut-permille") o.watch_cut_permille = std::atoi(v);
    else if (flag == "--nodes") o.nodes = std::atoi(v);
    else if (flag == "--slow-permille") o.slow_permille = std::atoi(v);
    else if (flag == "--slow-ms") o.slow_ms = std::atoi(v);
    else if (flag == "--binds-in-flight") o.binds_in_flight = std::atoi(v);
    else if (flag == "--pause-us") o.pause = std::chrono::microseconds(std::atoi(v));
    else if (flag == "--handover") o.lease_handover = std::atoi(v) != 0;
    else if (flag == "--fence-read") {
      auto read = fracpack::k8s::parse_bind_fence_read(v);
      if (!read) {
        std::fprintf(stderr, "failover_bench: --fence-read: %s\n", read.message().c_str());
        return 2;
      }
      o.bind_fence_read = *read;
    }
    else if (flag == "--quota-namespaces") o.quota_namespaces = std::atoi(v);
    else if (flag == "--quota-sample-every") o.quota_sample_every = std::strtoull(v, nullptr, 10);
    else {
      std::fprintf(stderr,
                   "usage: failover_bench [--operations N] [--failovers N] [--seed S] [--kill 0|1] [--cut-permille N] [--nodes N] "
                   "[--slow-permille N --slow-ms N] [--binds-in-flight N] [--pause-us N] [--handover 0|1] [--fence-read consistent|resourceVersion|marker] "
                   "[--quota-namespaces N] [--quota-sample-every N]\n");
      return 2;
    }
  }
  const auto r = fracpack::testing::run_failover(o);
  std::printf("%s\n", r.summary().c_str());
  if (o.quota_namespaces > 0) std::printf("%s", r.quota_table().c_str());
  for (const auto& s : r.samples) std::printf("  %s\n", s.c_str());
  return r.overcommitted_at_end == 0 && r.overcommitted_max == 0 && r.over_quota_max == 0 && r.over_quota_at_end == 0 ? 0 : 1;
}
