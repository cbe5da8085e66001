// fracpack convert openb: the openb experiment of one seed as a cluster snapshot.
#include <iostream>

#include "server/cmd/convert_openb.h"

#include "common/time.h"
#include "k8s/objects.h"
#include "k8s/workload_codec.h"
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

Result<std::string> openb_snapshot_json(const replay::ExperimentSetup& setup, const k8s::ContractNames& names, int64_t seed) {
  using namespace k8s;
  std::vector<std::string> items;
  items.reserve(setup.nodes.size() + setup.arrivals.size() + 1);
  for (size_t i = 0; i < setup.nodes.size(); ++i) {
    const replay::OpenbNode& on = setup.nodes[i];
    Node n;
    n.meta.name = setup.node_names[i];
    n.meta.uid = "openb-node-" + std::to_string(i);
    n.meta.labels = {{"kubernetes.io/hostname", n.meta.name}};
    if (on.gpus > 0) {
      n.meta.labels.emplace_back(names.gfd_count, std::to_string(on.gpus));
      n.meta.labels.emplace_back(names.gfd_memory, std::to_string(replay::nominal_memory_mib(on.model)));
      n.meta.labels.emplace_back(names.gfd_product, on.model);
    }
    n.allocatable = {{"cpu", std::to_string(on.cpu_milli) + "m"},
                     {"memory", std::to_string(on.memory_mib) + "Mi"},
                     {"pods", "1001"}};
    items.push_back(node_json(n));
  }
  const int64_t t0 = 1672531200;  // 2023-01-01T00:00:00Z; arrivals one second apart
  for (size_t i = 0; i < setup.arrivals.size(); ++i) {
    const replay::OpenbPod& op = setup.arrivals[i];
    Pod p;
    p.meta.name = op.name;
    p.meta.namespace_name = "openb";
    char uid[64];
    std::snprintf(uid, sizeof uid, "openb-s%lld-%06zu", static_cast<long long>(seed), i);
    p.meta.uid = uid;
    p.meta.creation_timestamp = format_rfc3339(t0 + static_cast<int64_t>(i));
    p.scheduler_name = "fracpack";
    p.phase = "Pending";
    Container c;
    c.name = "main";
    c.requests = {{"cpu", std::to_string(op.cpu_milli) + "m"}, {"memory", std::to_string(op.memory_mib) + "Mi"}};
    if (op.num_gpu > 0 && op.gpu_milli > 0) {
      if (op.gpu_milli == 1000) {
        c.requests.emplace_back(names.gpu, std::to_string(op.num_gpu));
      } else {
        if (op.gpu_milli % 10 != 0) {
          return Error{"pod " + op.name + ": gpu_milli " + std::to_string(op.gpu_milli) +
                       " is not a whole percent; the contract counts compute in percent"};
        }
        c.requests.emplace_back(names.gpu, std::to_string(op.num_gpu));
        c.requests.emplace_back(names.gpu_cores, std::to_string(op.gpu_milli / 10));
      }
      if (!op.gpu_spec.empty()) p.meta.annotations.emplace_back(names.model, op.gpu_spec);
    }
    c.limits = c.requests;  // requests equal limits
    p.containers.push_back(std::move(c));
    items.push_back(pod_json(p));
  }
  ConfigMap cm;
  cm.meta.name = kWorkloadConfigMap;
  cm.meta.namespace_name = "fracpack-system";
  cm.data = {{kWorkloadKey, format_workload(*setup.shapes)}};
  items.push_back(config_map_json(cm));
  return list_json(items);
}

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
  auto json = openb_snapshot_json(setup, k8s::ContractNames{}, eo.seed);
  if (!json) return fail(json.message());
  if (auto out = args->get("output")) {
    if (Status s = write_file(*out, *json); !s.ok()) return fail(s.message());
    return 0;
  }
  std::cout << *json;
  return std::cout.good() ? 0 : fail("error writing standard output");
}

}  // namespace fracpack::cli
