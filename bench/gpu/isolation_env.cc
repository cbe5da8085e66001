// Prints the environment the node agent's Allocate answer gives a container
// holding one share of one card (node/isolation.h, the agent's own code),
// one KEY=VALUE per line, for bench/gpu/isolation_check.sh to run a client
// with exactly what a pod would get. Mounts are printed as "# mount
// CONTAINER_PATH <- HOST_PATH".
//   isolation_env --isolation mps|hami-core --uuid GPU-... --card-mib 81920
//                 --share-mib 8192 --cores 250 [--mps-dir DIR] [--hami-core-library PATH]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "node/isolation.h"

int main(int argc, char** argv) {
  using namespace fracpack;
  node::IsolationOptions o;
  std::string uuid = "GPU-0", isolation = "mps";
  int64_t card_mib = 0, share_mib = 0;
  int cores = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--isolation") isolation = v;
    else if (k == "--uuid") uuid = v;
    else if (k == "--card-mib") card_mib = std::atoll(v.c_str());
    else if (k == "--share-mib") share_mib = std::atoll(v.c_str());
    else if (k == "--cores") cores = std::atoi(v.c_str());
    else if (k == "--mps-dir") o.mps_dir = v;
    else if (k == "--hami-core-library") o.hami_core_library = v;
    else {
      std::fprintf(stderr, "isolation_env: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (!scheduling::parse_isolation(isolation, o.mode) || card_mib <= 0 || share_mib <= 0 || cores <= 0) {
    std::fprintf(stderr, "usage: isolation_env --isolation mps|hami-core --uuid U --card-mib N --share-mib N --cores MILLI\n");
    return 2;
  }
  node::GpuDevice card;
  card.uuid = uuid;
  card.memory_mib = card_mib;
  card.isolation = o.mode;
  const node::Assignment a{"probe-uid", "bench/probe", "main", {scheduling::CardShare{0, uuid, share_mib, cores}}, {}};
  const std::vector<std::string> none;
  auto iso = node::isolate(a, {&card}, k8s::ContainerSettings{none, none, none}, o);
  if (!iso) {
    std::fprintf(stderr, "isolation_env: %s\n", iso.message().c_str());
    return 1;
  }
  for (const auto& [k, v] : iso->env) std::printf("%s=%s\n", k.c_str(), v.c_str());
  for (const auto& m : iso->mounts) std::printf("# mount %s <- %s\n", m.container_path.c_str(), m.host_path.c_str());
  return 0;
}
