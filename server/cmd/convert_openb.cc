// fracpack convert openb: the openb experiment of one seed as a cluster snapshot.
#include <iostream>

#include "k8s/snapshot.h"
#include "scheduling/go_rand.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"

namespace fracpack::cli {
namespace {

constexpr const char* kHelp = R"(usage: fracpack convert openb [options] > snapshot.json

Writes the openb experiment of one seed as a Kubernetes v1 List: the GPU nodes
(named with the seed's tie-breaking prefix, cards as GPU Feature Discovery
labels), the tuned arrivals as pending pods created one second apart in
arrival order (gpu_milli/10 -> fracpack.io/gpu-cores; whole GPUs as a bare
fracpack.io/gpu), and the trace's typical pods as the
fracpack-target-workload ConfigMap. "fracpack replay snapshot" of the result
places exactly as "fracpack replay openb" does for the same seed.

options:
  --trace-dir DIR   folder of the openb CSVs (default ../shared/traces/openb)
  --workload NAME   pod list openb_pod_list_NAME.csv (default: default)
  --nodes FILE      node list CSV (default: DIR/openb_node_list_gpu_node.csv)
  --pods FILE       pod list CSV (overrides --workload)
  --seed N          arrival order and tie-breaking of this seed (default 42)
  --tune R          target demand as a multiple of GPU capacity (default 1.3)
  --go-rng FILE     Go's math/rand rng.go (see fracpack replay openb --help)
  --output FILE     write there instead of standard output
)";

}  // namespace

int cmd_convert_openb(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"trace-dir", "workload", "nodes", "pods", "seed", "tune", "go-rng", "output"}, {"help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("unexpected argument " + args->positional()[0]);
  auto seeds = parse_seed_list(args->get_or("seed", "42"));
  if (!seeds || seeds->size() != 1) return usage_error("--seed takes one integer");
  auto tune = parse_tune(*args);
  if (!tune) return usage_error(tune.message());
  auto inputs = load_openb_inputs(*args);
  if (!inputs) return fail(inputs.message());

  replay::ExperimentOptions eo;
  eo.seed = (*seeds)[0];
  eo.tune = *tune;
  eo.go_cooked = inputs->go_cooked;
  const replay::ExperimentSetup setup = replay::prepare_experiment(inputs->nodes, inputs->pods, eo);
  auto json = k8s::openb_snapshot_json(setup, k8s::ContractNames{}, eo.seed);
  if (!json) return fail(json.message());
  if (auto out = args->get("output")) {
    if (Status s = write_file(*out, *json); !s.ok()) return fail(s.message());
    return 0;
  }
  std::cout << *json;
  return std::cout.good() ? 0 : fail("error writing standard output");
}

}  // namespace fracpack::cli
