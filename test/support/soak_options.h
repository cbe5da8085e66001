// What the soaks against fracpack processes (chaos.h, failover.h) share:
// how long and how random a run is, the cluster's size, and fracpack's
// reservation timings.
#pragma once

#include <chrono>
#include <cstdint>

namespace fracpack::testing {

struct SoakOptions {
  uint64_t operations = 2000;
  uint64_t seed = 1;
  int nodes = 16;
  int cards = 4;  // per node, 16 GiB each
  std::chrono::milliseconds assume_ttl{3000};
  std::chrono::milliseconds reconcile_interval{500};
  bool verbose = false;  // progress lines on stderr
};

}  // namespace fracpack::testing
