// The long chaos soak: bench/chaos_bench [--operations N] [--seed S]
// [--restart-every N] [--nodes N] [--fault-rate X] [--disruption-rate X]. Prints what it did and
// the invariant violations (must be 0); exit 1 if any. See
// test/support/chaos.h for what runs and what is checked.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test/support/chaos.h"

int main(int argc, char** argv) {
  fracpack::testing::ChaosOptions o;
  o.operations = 1'000'000;
  o.restart_every = 20'000;
  o.check_every = 500;
  o.nodes = 24;
  o.verbose = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--operations") o.operations = std::strtoull(v, nullptr, 10);
    else if (flag == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--restart-every") o.restart_every = std::strtoull(v, nullptr, 10);
    else if (flag == "--nodes") o.nodes = std::atoi(v);
    else if (flag == "--fault-rate") o.fault_rate = std::atof(v);
    else if (flag == "--disruption-rate") o.disruption_rate = std::atof(v);
    else {
      std::fprintf(stderr, "usage: chaos_bench [--operations N] [--seed S] [--restart-every N] [--nodes N] [--fault-rate X] [--disruption-rate X]\n");
      return 2;
    }
  }
  const auto r = fracpack::testing::run_chaos(o);
  std::printf("%s\n", r.summary().c_str());
  for (const auto& s : r.samples) std::printf("violation: %s\n", s.c_str());
  return r.violations == 0 ? 0 : 1;
}
