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
  const std::string dir = args->get_or("trace-dir", "../shared/traces/openb");
  const std::string nodes_path = args->get_or("nodes", dir + "/openb_node_list_gpu_node.csv");
  const std::string pods_path =
      args->get_or("pods", dir + "/openb_pod_list_" + args->get_or("workload", "default") + ".csv");
  auto seeds = parse_seed_list(args->get_or("seed", "42"));
  if (!seeds || seeds->size() != 1) return usage_error("--seed takes one integer");
  double tune = 1.3;
  try {
    tune = std::stod(args->get_or("tune", "1.3"));
  } catch (...) {
    tune = -1;
  }
  if (!(tune > 0 && tune < 100)) return usage_error("--tune must be a positive number, e.g. 1.3");

  auto nodes_text = read_file(nodes_path);
  if (!nodes_text) return fail(nodes_text.message());
  auto pods_text = read_file(pods_path);
  if (!pods_text) return fail(pods_text.message());
  auto nodes = replay::parse_openb_nodes(*nodes_text);
  if (!nodes) return fail(nodes_path + ": " + nodes.message());
  auto pods = replay::parse_openb_pods(*pods_text);
  if (!pods) return fail(pods_path + ": " + pods.message());
  auto cooked = load_go_rng(args->get_or("go-rng", kDefaultGoRngSource), args->has("go-rng"));
  if (!cooked) return fail(cooked.message());

  replay::ExperimentOptions eo;
  eo.seed = (*seeds)[0];
  eo.tune = tune;
  eo.go_cooked = *cooked;
  const replay::ExperimentSetup setup = replay::prepare_experiment(*nodes, *pods, eo);
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
