#include "server/ledger_report.h"

#include <algorithm>
#include <chrono>

#include "common/json/write.h"
#include "scheduling/fragmentation.h"

namespace fracpack::server {


std::string ledger_report_json(const scheduling::Ledger& ledger, const scheduling::ShapeCounts* workload) {
  std::string out = "{\"nodes\":[";
  int64_t gpus = 0, used_milli = 0, pods = 0;
  bool first_node = true;
  for (const auto& [name, node] : ledger.nodes()) {
    if (!first_node) out.push_back(',');
    first_node = false;
    out.push_back('{');
    append_json_field(out, "name", name, false);
    out += std::string(",\"present\":") + (node.present() ? "true" : "false");
    // Why the node offers no card at all (its agent not registered with
    // kubelet, a foreign agent's cards...): what a placement there is refused with.
    if (!node.spec().unavailable.empty()) append_json_field(out, "unavailable", node.spec().unavailable);
    append_json_number(out, "cpuMilli", static_cast<double>(node.spec().cpu_milli));
    append_json_number(out, "cpuRequestedMilli", static_cast<double>(node.cpu_requested()));
    append_json_number(out, "memoryBytes", static_cast<double>(node.spec().memory_bytes));
    append_json_number(out, "memoryRequestedBytes", static_cast<double>(node.memory_requested()));
    out += ",\"cards\":[";
    for (size_t p = 0; p < node.cards().size(); ++p) {
      const auto& card = node.cards()[p];
      const auto& use = node.use()[p];
      if (p) out.push_back(',');
      out.push_back('{');
      append_json_number(out, "index", card.index, false);
      append_json_field(out, "uuid", card.uuid);
      append_json_field(out, "model", card.model);
      append_json_number(out, "memoryMiB", static_cast<double>(card.memory_mib));
      append_json_number(out, "memoryUsedMiB", static_cast<double>(use.memory_mib));
      append_json_number(out, "computeMilli", 1000);
      append_json_number(out, "computeUsedMilli", use.cores);
      append_json_number(out, "sharers", use.sharers);
      append_json_number(out, "maxSharers", card.max_sharers);  // the split count (HAMi); 0: no limit
      append_json_field(out, "isolation", scheduling::isolation_name(card.isolation));  // what enforces a share there
      out += std::string(",\"healthy\":") + (card.healthy ? "true" : "false");
      out += std::string(",\"cordoned\":") + (card.cordoned ? "true" : "false");
      out += ",\"pods\":[";
      bool first_pod = true;
      for (const scheduling::PodRecord* r : node.pods()) {
        for (const auto& c : r->charges) {
          if (c.index != card.index) continue;
          if (!first_pod) out.push_back(',');
          first_pod = false;
          append_json_string(out, r->key);
        }
      }
      out += "]}";
      if (node.present()) {
        ++gpus;
        used_milli += std::min(use.cores, scheduling::kCardMilli);
      }
    }
    out += "],\"pods\":[";
    for (size_t i = 0; i < node.pods().size(); ++i) {
      const scheduling::PodRecord* r = node.pods()[i];
      if (i) out.push_back(',');
      out.push_back('{');
      append_json_field(out, "pod", r->key, false);
      append_json_field(out, "uid", r->uid);
      append_json_field(out, "phase", r->phase == scheduling::PodPhase::kAssumed ? "assumed" : "confirmed");
      if (r->phase == scheduling::PodPhase::kAssumed) {
        // Negative: past its TTL (released once the API server shows the pod unbound).
        append_json_number(out, "expiresInMs", static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                      r->deadline - scheduling::Clock::now()).count()));
      }
      out.push_back('}');
      ++pods;
    }
    out += "]}";
  }
  out += "],\"totals\":{";
  append_json_number(out, "nodes", static_cast<double>(ledger.nodes().size()), false);
  append_json_number(out, "gpus", static_cast<double>(gpus));
  append_json_number(out, "gpuMilliUsed", static_cast<double>(used_milli));
  append_json_number(out, "allocatedRatio", gpus > 0 ? static_cast<double>(used_milli) / (1000.0 * static_cast<double>(gpus)) : 0);
  append_json_number(out, "pods", static_cast<double>(pods));
  append_json_number(out, "assumedPods", static_cast<double>(ledger.assumed_count()));
  if (workload) {
    scheduling::FragmentationModel model(scheduling::Workload::typical(*workload));
    double frag = 0;
    for (const auto& [name, node] : ledger.nodes()) {
      if (node.present()) frag += model.frag(node);
    }
    append_json_number(out, "fragmentationRatio", gpus > 0 ? frag / (1000.0 * static_cast<double>(gpus)) : 0);
  }
  out += "},\"quotas\":";
  out += quota_report_json(ledger);
  out += "}";
  return out;
}

std::string quota_report_json(const scheduling::Ledger& ledger) {
  std::string out = "[";
  bool first = true;
  for (const auto& [ns, limits] : ledger.quotas()) {
    const scheduling::QuotaUse use = ledger.namespace_use(ns);
    for (const scheduling::QuotaLimit& l : limits) {
      if (!first) out.push_back(',');
      first = false;
      out.push_back('{');
      append_json_field(out, "namespace", ns, false);
      append_json_field(out, "resourceQuota", l.object);
      append_json_field(out, "key", l.key);
      append_json_number(out, "used", static_cast<double>(scheduling::quota_amount(use, l.resource)));
      if (l.malformed.empty()) {
        append_json_number(out, "hard", static_cast<double>(l.hard));
      } else {
        append_json_field(out, "malformed", l.malformed);
      }
      out.push_back('}');
    }
  }
  return out + "]";
}

}  // namespace fracpack::server
