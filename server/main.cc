// fracpack: a kube-scheduler extender for fractional GPU placement.
// One binary, subcommands by layer: replay and convert drive the scheduling
// core offline; serve is the extender; node-agent its device plugin on each
// GPU node; inspect shows the ledger.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "server/cmd/commands.h"

namespace {

constexpr const char* kUsage = R"(usage: fracpack <command> [options]

commands:
  replay openb      replay the FGD paper's experiment on the Alibaba openb trace
  replay snapshot   replay a recorded cluster snapshot (kubectl get nodes,pods,resourcequotas -A -o json)
  convert openb     write the openb trace as a cluster snapshot
  mix openb         build a workload mix from the openb trace (the FGD paper's recipes)
  serve             run the kube-scheduler extender (HTTP)
  node-agent        run the node agent on a GPU node (kubelet device plugin)
  mps-control-daemon  run and supervise NVIDIA's MPS control daemon for the node agent (isolation mps)
  inspect           show per node and card what is reserved (a server or a snapshot)
  version           print the version

Run "fracpack <command> --help" for a command's options.
)";

}  // namespace


int main(int argc, char** argv) {
  using namespace fracpack::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto rest = [&](size_t n) { return std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(n), args.end()); };
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "version" || args[0] == "--version") {
      std::cout << "fracpack " << FRACPACK_VERSION_STRING << "\n";
      return 0;
    }
    if (args[0] == "replay" && args.size() >= 2 && args[1] == "openb") return cmd_replay_openb(rest(2));
    if (args[0] == "replay" && args.size() >= 2 && args[1] == "snapshot") return cmd_replay_snapshot(rest(2));
    if (args[0] == "convert" && args.size() >= 2 && args[1] == "openb") return cmd_convert_openb(rest(2));
    if (args[0] == "mix" && args.size() >= 2 && args[1] == "openb") return cmd_mix_openb(rest(2));
    if (args[0] == "serve") return cmd_serve(rest(1));
    if (args[0] == "node-agent") return cmd_node_agent(rest(1));
    if (args[0] == "inspect") return cmd_inspect(rest(1));
    if (args[0] == "mps-control-daemon") return cmd_mps_control_daemon(rest(1));
    if (args[0] == "replay" || args[0] == "convert" || args[0] == "mix") {
      return usage_error(args[0] + " needs a source: " + (args[0] == "replay" ? "openb or snapshot" : "openb"));
    }
    return usage_error("unknown command \"" + args[0] + "\" (see fracpack --help)");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
