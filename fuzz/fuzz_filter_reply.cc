// libFuzzer: what a filter request can make fracpack write back. Any
// ExtenderArgs body is decoded; each distinct node gets a verdict whose
// reason quotes what the pod asked for (its model list, its container
// names), as the placement's reasons do. The reply must be valid JSON and
// bounded by construction: per distinct node, its name and a cut reason,
// whatever the pod carries and however often a name repeats.
#include <cstdint>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "k8s/contract/fracpack.h"
#include "k8s/extender_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fracpack::k8s::Selection selection = fracpack::k8s::ContractNames{}.selection();
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto args = fracpack::k8s::parse_extender_args(body, selection);
  if (!args || !args->pod || !args->node_names) return 0;
  std::string asked = "no GPU of model ";
  if (const std::string* models = args->pod->meta.annotation("fracpack.io/gpu-model")) asked += *models;
  for (const auto& c : args->pod->containers) asked += " container " + c.name;
  fracpack::k8s::FilterReplyWriter reply(false, args->node_names->size());
  std::unordered_set<std::string_view> seen;
  size_t bound = 256;
  for (const std::string_view name : *args->node_names) {
    if (!seen.insert(name).second) continue;  // each distinct node once, as the service answers
    bound += 6 * name.size() + 6 * (fracpack::k8s::kMaxReasonBytes + 3) + 8;
    if (name.size() % 3 == 0) {
      reply.pass(name);
    } else {
      reply.fail(name, asked, name.size() % 3 == 1);
    }
  }
  const std::string out = reply.finish(asked);
  bound += 6 * (fracpack::k8s::kMaxReasonBytes + 3);
  if (out.size() > bound) __builtin_trap();  // a reply that grows with the pod
  // (nlohmann, not simdjson: this unit does not see the library's build
  // definitions, and two layouts of simdjson's inline parser would clash.)
  if (!nlohmann::json::accept(out)) __builtin_trap();  // not JSON
  return 0;
}
