// fracpack convert openb: the openb experiment of one seed as a cluster snapshot.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "server/cmd/convert_openb.h"

#include "common/time.h"
#include "k8s/contract/hami.h"
#include "k8s/objects.h"
#include "k8s/workload_codec.h"
#include "scheduling/go_rand.h"
#include "server/cmd/args.h"
#include "server/cmd/commands.h"

namespace fracpack::cli {
namespace {

constexpr const char* kConvertOpenbHelp = R"(usage: fracpack convert openb [options] > snapshot.json

Writes the openb experiment of one seed as a Kubernetes v1 List: the GPU nodes
(named with the seed's tie-breaking prefix), the tuned arrivals as pending
pods created one second apart in arrival order, and the trace's typical pods
as the fracpack-target-workload ConfigMap, in one profile's terms:
  fracpack  cards as GPU Feature Discovery labels; gpu_milli/10 ->
            fracpack.io/gpu-cores, whole GPUs as a bare fracpack.io/gpu.
            "fracpack replay snapshot" of the result places exactly as
            "fracpack replay openb" does for the same seed.
  hami      cards in hami.io/node-nvidia-register (split count
            --split-count); nvidia.com/gpu + gpucores (100: a whole card) +
            gpumem-percentage equal to the cores; gpu_spec as use-gputype.
  gpushare  aliyun.com/gpu-mem and gpu-count capacity (GiB); a one-card pod
            asks gpu-mem = its compute share of the smallest card (rounded,
            at least 1 GiB); gpu_spec dropped; pods of several cards left
            out (counted on standard error).

options:
  --trace-dir DIR   folder of the openb CSVs (default ../shared/traces/openb)
  --workload NAME   pod list openb_pod_list_NAME.csv (default: default)
  --nodes FILE      node list CSV (default: DIR/openb_node_list_gpu_node.csv)
  --pods FILE       pod list CSV (overrides --workload)
  --mix STEPS       a mix built from the pod list (see fracpack mix openb
                    --help; --mix-seed N, --spec-source FILE)
  --seed N          arrival order and tie-breaking of this seed (default 42)
  --tune R          target demand as a multiple of GPU capacity (default 1.3)
  --go-rng FILE     Go's math/rand rng.go (see fracpack replay openb --help)
  --profile NAME    fracpack (default), hami or gpushare, default names
  --split-count N   hami: sharers per card (default 10, HAMi's)
  --output FILE     write there instead of standard output
)";

using replay::OpenbNode;
using replay::OpenbPod;

// How one profile writes an openb node's cards and a pod's GPU request.
class OpenbWriter {
 public:
  virtual ~OpenbWriter() = default;
  // The node's cards (labels, annotations, capacity), added to `n`; `index` is its place in the node list.
  virtual void describe_cards(const OpenbNode& on, size_t index, k8s::Node& n) const = 0;
  // The GPU request of a pod asking `num_gpu` cards at `gpu_milli` each
  // (both > 0), into its container and annotations; false: the profile
  // cannot express it (left out).
  virtual Result<bool> ask(const OpenbPod& op, k8s::Pod& p, k8s::Container& c) const = 0;
};

Result<int> whole_percent(const OpenbPod& op) {
  if (op.gpu_milli % 10 != 0) {
    return Error{"pod " + op.name + ": gpu_milli " + std::to_string(op.gpu_milli) +
                 " is not a whole percent; the contract counts compute in percent"};
  }
  return op.gpu_milli / 10;
}

class FracpackWriter : public OpenbWriter {
 public:
  explicit FracpackWriter(const k8s::ContractNames& names) : names_(names) {}
  void describe_cards(const OpenbNode& on, size_t, k8s::Node& n) const override {
    if (on.gpus == 0) return;
    n.meta.labels.emplace_back(names_.gfd_count, std::to_string(on.gpus));
    n.meta.labels.emplace_back(names_.gfd_memory, std::to_string(replay::nominal_memory_mib(on.model)));
    n.meta.labels.emplace_back(names_.gfd_product, on.model);
  }
  Result<bool> ask(const OpenbPod& op, k8s::Pod& p, k8s::Container& c) const override {
    c.requests.emplace_back(names_.gpu, std::to_string(op.num_gpu));
    if (op.gpu_milli != 1000) {  // a share; a whole card is a bare count
      auto percent = whole_percent(op);
      if (!percent) return Error{percent.message()};
      c.requests.emplace_back(names_.gpu_cores, std::to_string(*percent));
    }
    if (!op.gpu_spec.empty()) p.meta.annotations.emplace_back(names_.model, op.gpu_spec);
    return true;
  }

 private:
  const k8s::ContractNames& names_;
};

// A card UUID in NVIDIA's form, unique per (node, card).
std::string card_uuid(size_t node, int card) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-%08zx-0000-4000-8000-%012x", node, card);
  return buf;
}

class HamiWriter : public OpenbWriter {
 public:
  HamiWriter(const k8s::HamiNames& names, int split_count) : names_(names), split_(split_count) {}
  void describe_cards(const OpenbNode& on, size_t index, k8s::Node& n) const override {
    if (on.gpus == 0) return;
    // HAMi's device plugin registers every card, each split split_ ways.
    std::vector<scheduling::Card> cards(static_cast<size_t>(on.gpus));
    for (int i = 0; i < on.gpus; ++i) {
      scheduling::Card& c = cards[static_cast<size_t>(i)];
      c.index = i;
      c.uuid = card_uuid(index, i);
      c.model = "NVIDIA-" + on.model;
      c.memory_mib = replay::nominal_memory_mib(on.model);
      c.max_sharers = split_;
    }
    n.meta.annotations.emplace_back(names_.register_devices, k8s::format_hami_register(cards));
    n.allocatable.emplace_back(names_.gpu, std::to_string(on.gpus * split_));
  }
  Result<bool> ask(const OpenbPod& op, k8s::Pod& p, k8s::Container& c) const override {
    auto percent = whole_percent(op);
    if (!percent) return Error{percent.message()};
    c.requests.emplace_back(names_.gpu, std::to_string(op.num_gpu));
    c.requests.emplace_back(names_.gpu_cores, std::to_string(*percent));  // 100: the card alone
    if (*percent < 100) c.requests.emplace_back(names_.gpu_memory_percent, std::to_string(*percent));
    if (!op.gpu_spec.empty()) {
      std::string types = op.gpu_spec;
      std::replace(types.begin(), types.end(), '|', ',');
      p.meta.annotations.emplace_back(names_.use_type, std::move(types));
    }
    return true;
  }

 private:
  const k8s::HamiNames& names_;
  int split_;
};

class GpushareWriter : public OpenbWriter {
 public:
  GpushareWriter(const k8s::GpushareNames& names, int64_t unit_mib, int64_t smallest_card_mib)
      : names_(names), unit_mib_(unit_mib), smallest_card_mib_(smallest_card_mib) {}
  void describe_cards(const OpenbNode& on, size_t, k8s::Node& n) const override {
    if (on.gpus == 0) return;
    const int64_t per_card = replay::nominal_memory_mib(on.model) / unit_mib_;
    const k8s::StringMap gpu = {{names_.gpu_memory, std::to_string(on.gpus * per_card)}, {names_.gpu_count, std::to_string(on.gpus)}};
    n.capacity = n.allocatable;
    n.capacity.insert(n.capacity.end(), gpu.begin(), gpu.end());
    n.allocatable.insert(n.allocatable.end(), gpu.begin(), gpu.end());
  }
  Result<bool> ask(const OpenbPod& op, k8s::Pod&, k8s::Container& c) const override {
    if (op.num_gpu != 1) return false;
    const int64_t mib = op.gpu_milli * smallest_card_mib_ / 1000;
    const int64_t units = std::max<int64_t>(1, (mib + unit_mib_ / 2) / unit_mib_);
    c.requests.emplace_back(names_.gpu_memory, std::to_string(units));
    return true;
  }

 private:
  const k8s::GpushareNames& names_;
  int64_t unit_mib_;
  int64_t smallest_card_mib_;
};

Result<std::unique_ptr<OpenbWriter>> writer_for(const replay::ExperimentSetup& setup, const k8s::ContractConfig& cc,
                                                const OpenbConversion& options) {
  switch (cc.profile) {
    case k8s::Profile::kFracpack:
      return std::unique_ptr<OpenbWriter>(std::make_unique<FracpackWriter>(cc.fracpack));
    case k8s::Profile::kHami:
      if (options.hami_split_count < 1) return Error{"the split count must be at least 1"};
      return std::unique_ptr<OpenbWriter>(std::make_unique<HamiWriter>(cc.hami, options.hami_split_count));
    case k8s::Profile::kGpushare: {
      int64_t smallest = 0;
      for (const OpenbNode& n : setup.nodes) {
        if (n.gpus == 0) continue;
        const int64_t mib = replay::nominal_memory_mib(n.model);
        smallest = smallest == 0 ? mib : std::min(smallest, mib);
      }
      return std::unique_ptr<OpenbWriter>(std::make_unique<GpushareWriter>(cc.gpushare, cc.gpushare_options.unit_mib, smallest));
    }
    case k8s::Profile::kTke:
      break;
  }
  return Error{"the " + std::string(k8s::profile_name(cc.profile)) + " profile has no OpenB writer (fracpack, hami or gpushare)"};
}

// The pending pod of an arrival; nullopt: left out.
Result<std::optional<k8s::Pod>> pod_of(const OpenbPod& op, const OpenbWriter& writer) {
  k8s::Pod p;
  p.meta.name = op.name;
  p.meta.namespace_name = "openb";
  p.scheduler_name = "fracpack";
  p.phase = "Pending";
  k8s::Container c;
  c.name = "main";
  c.requests = {{"cpu", std::to_string(op.cpu_milli) + "m"}, {"memory", std::to_string(op.memory_mib) + "Mi"}};
  if (op.num_gpu > 0 && op.gpu_milli > 0) {  // the simulator treats gpu_milli 0 as CPU-only
    auto asked = writer.ask(op, p, c);
    if (!asked) return Error{asked.message()};
    if (!*asked) return std::optional<k8s::Pod>();
  }
  c.limits = c.requests;  // requests equal limits
  p.containers.push_back(std::move(c));
  return std::optional<k8s::Pod>(std::move(p));
}

// The target workload in the profile's terms: each shape written as a pod
// and read back through the contract, so it is what the pods look like.
Result<scheduling::ShapeCounts> shapes_for(const scheduling::ShapeCounts& trace, const OpenbWriter& writer, const k8s::Contract& contract) {
  scheduling::ShapeCounts out;
  for (const auto& [shape, count] : trace.counts()) {
    OpenbPod op;
    op.name = "shape";
    op.cpu_milli = shape.cpu_milli;
    op.num_gpu = shape.cards;
    op.gpu_milli = shape.cards > 0 ? shape.cores : 0;
    op.gpu_spec = shape.models;
    auto pod = pod_of(op, writer);
    if (!pod) return Error{pod.message()};
    if (!*pod) continue;
    auto request = contract.pod_request(**pod);
    if (!request) return Error{"a workload shape written for the profile does not read back: " + request.message()};
    out.add(scheduling::shape_of(*request), count, trace.node_memory_mib(shape));
  }
  return out;
}

}  // namespace

Result<OpenbSnapshot> openb_snapshot(const replay::ExperimentSetup& setup, const k8s::ContractConfig& cc, int64_t seed,
                                     const OpenbConversion& options) {
  using namespace k8s;
  auto made = make_contract(cc);
  if (!made) return Error{made.message()};
  auto writer = writer_for(setup, cc, options);
  if (!writer) return Error{writer.message()};
  OpenbSnapshot out;
  std::vector<std::string> items;
  items.reserve(setup.nodes.size() + setup.arrivals.size() + 1);
  for (size_t i = 0; i < setup.nodes.size(); ++i) {
    const replay::OpenbNode& on = setup.nodes[i];
    Node n;
    n.meta.name = setup.node_names[i];
    n.meta.uid = "openb-node-" + std::to_string(i);
    n.meta.labels = {{"kubernetes.io/hostname", n.meta.name}};
    n.allocatable = {{"cpu", std::to_string(on.cpu_milli) + "m"},
                     {"memory", std::to_string(on.memory_mib) + "Mi"},
                     {"pods", "1001"}};
    (*writer)->describe_cards(on, i, n);
    items.push_back(node_json(n));
  }
  const int64_t t0 = 1672531200;  // 2023-01-01T00:00:00Z; arrivals one second apart
  for (size_t i = 0; i < setup.arrivals.size(); ++i) {
    auto pod = pod_of(setup.arrivals[i], **writer);
    if (!pod) return Error{pod.message()};
    if (!*pod) {
      ++out.left_out;
      continue;
    }
    Pod& p = **pod;
    char uid[64];
    std::snprintf(uid, sizeof uid, "openb-s%lld-%06zu", static_cast<long long>(seed), i);
    p.meta.uid = uid;
    p.meta.creation_timestamp = format_rfc3339(t0 + static_cast<int64_t>(i));
    items.push_back(pod_json(p));
  }
  if (out.left_out > 0) out.left_out_why = "the " + std::string(k8s::profile_name(cc.profile)) + " profile places a pod on one card; pods asking for several were left out";
  auto shapes = shapes_for(*setup.shapes, **writer, **made);
  if (!shapes) return Error{shapes.message()};
  ConfigMap cm;
  cm.meta.name = kWorkloadConfigMap;
  cm.meta.namespace_name = "fracpack-system";
  cm.data = {{kWorkloadKey, format_workload(*shapes)}};
  items.push_back(config_map_json(cm));
  out.json = list_json(items);
  return out;
}

int cmd_convert_openb(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"trace-dir", "workload", "nodes", "pods", "mix", "mix-seed", "spec-source", "seed", "tune", "go-rng", "output", "profile", "split-count"}, {"help"});
  if (!args) return usage_error(args.message());
  if (args->has("help")) {
    std::cout << kConvertOpenbHelp;
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
  k8s::ContractConfig cc;
  if (auto v = args->get("profile")) {
    auto profile = k8s::parse_profile(*v);
    if (!profile) return usage_error("--profile: " + profile.message());
    cc.profile = *profile;
  }
  if (auto made = k8s::make_contract(cc); !made) return usage_error("--profile: " + made.message());
  OpenbConversion conversion;
  if (auto n = args->get("split-count")) {
    if (cc.profile != k8s::Profile::kHami) return usage_error("--split-count is for --profile hami");
    auto v = parse_integer(*n);
    if (!v || *v < 1 || *v > 1000) return usage_error("--split-count takes an integer from 1 to 1000, not \"" + *n + "\"");
    conversion.hami_split_count = static_cast<int>(*v);
  }
  auto snapshot = openb_snapshot(setup, cc, eo.seed, conversion);
  if (!snapshot) return fail(snapshot.message());
  if (snapshot->left_out > 0) std::cerr << "left out " << snapshot->left_out << " pods: " << snapshot->left_out_why << "\n";
  if (auto out = args->get("output")) {
    if (Status s = write_file(*out, snapshot->json); !s.ok()) return fail(s.message());
    return 0;
  }
  std::cout << snapshot->json;
  return std::cout.good() ? 0 : fail("error writing standard output");
}

}  // namespace fracpack::cli
