// fracpack mix openb: a workload mix built from an openb pod list, written as
// an openb pod list (scheduling/replay/mixes.h has the recipes).
#include <iostream>

#include "scheduling/replay/mixes.h"
#include "server/cmd/commands.h"

namespace fracpack::cli {
namespace {

constexpr const char* kMixOpenbHelp = R"(usage: fracpack mix openb --mix STEPS [options] > pods.csv

Builds a workload mix from an openb pod list the way the FGD paper built its
17 workloads, at any strength, and writes it as an openb pod list (the
columns fracpack replay openb --pods reads, with creation and deletion times
for the dynamic replay). Steps apply left to right, joined with '+':
  cpuN       the GPU pods, and CPU-only pods drawn (with replacement) from
             the list's own until their CPU request is N % of the nodes' CPU
             (the default trace: 17.9; the paper's cpu100: 13.1)
  gpushareN  whole-card pods, in a random order, replaced by sharing pods
             drawn from the list's own until shares are N % of the GPU
             request (default 28.5; the paper's gpushare40: 40.1)
  gpuspecN   GPU pods, in a random order, given a card-model constraint
             drawn from the spec source's pods of the same kind (sharing, or
             the same number of whole cards) until N % of the GPU pods have
             one (default 0; the paper's gpuspec33: 33.8)
  multigpuN  copies of the list's own multi-card pods appended until they
             are N % of the GPU request (default 14.6; the paper's
             multigpu20: 20.4)
The same inputs, steps and --mix-seed give the same list on every machine.
fracpack replay openb and convert openb take the same --mix flags and build
the mix in memory.

options:
  --mix STEPS         e.g. multigpu40 or gpushare60+gpuspec33 (required)
  --mix-seed N        the draws' seed (default 1)
  --trace-dir DIR     folder of the openb CSVs (default ../shared/traces/openb)
  --workload NAME     the base pod list openb_pod_list_NAME.csv (default: default)
  --pods FILE         the base pod list (overrides --workload)
  --nodes FILE        node list CSV (default: DIR/openb_node_list_gpu_node.csv)
  --spec-source FILE  pods to draw gpu_spec constraints from (default:
                      DIR/openb_pod_list_gpuspec33.csv)
  --output FILE       write there instead of standard output
)";

}  // namespace

int cmd_mix_openb(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"trace-dir", "workload", "nodes", "pods", "mix", "mix-seed", "spec-source", "go-rng", "output"},
                          {"help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kMixOpenbHelp;
    return 0;
  }
  if (!args->positional().empty()) return usage_error("unexpected argument " + args->positional()[0]);
  if (!args->has("mix")) return usage_error("--mix is required (e.g. --mix multigpu40); see fracpack mix openb --help");
  auto inputs = load_openb_inputs(*args);
  if (!inputs) return fail(inputs.message());
  const std::string csv = replay::format_openb_pods(inputs->pods);
  if (auto out = args->get("output")) {
    if (Status s = write_file(*out, csv); !s.ok()) return fail(s.message());
    return 0;
  }
  std::cout << csv;
  return std::cout.good() ? 0 : fail("error writing standard output");
}

}  // namespace fracpack::cli
