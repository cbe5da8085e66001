#include "k8s/bound_pod_charge.h"

#include <algorithm>

#include "k8s/contract/kubernetes_rules.h"
#include "scheduling/allocation_check.h"

namespace fracpack::k8s {

Result<scheduling::PodRequest> bound_request(const Contract& contract, const Pod& pod) {
  const std::vector<std::string> steering = contract.placement_annotations();
  auto steers = [&](const auto& kv) { return std::find(steering.begin(), steering.end(), kv.first) != steering.end(); };
  if (std::none_of(pod.meta.annotations.begin(), pod.meta.annotations.end(), steers)) return contract.pod_request(pod);
  Pod amounts = pod;
  std::erase_if(amounts.meta.annotations, steers);
  return contract.pod_request(amounts);
}

std::vector<scheduling::CardCharge> BoundPodCharge::charges() const {
  if (kind != Kind::kRecord) return {};
  return scheduling::charges_of(record.allocation);
}

BoundPodCharge charge_bound_pod(const Contract& contract, const RecordTrust& trust, const std::vector<std::string>& record_keys,
                                const Pod& pod, const scheduling::NodeSpec* node) {
  BoundPodCharge out;
  RecordedAllocation rec = contract.recorded_allocation(pod, node);
  out.has_record = std::any_of(record_keys.begin(), record_keys.end(),
                               [&](const std::string& k) { return pod.meta.annotation(k) != nullptr; });
  Result<scheduling::PodRequest> req = contract.pod_request(pod);
  if (!req) {
    // An annotation that only steers placement cannot be read (perhaps
    // rewritten since the bind, to make the pod look as if it held
    // nothing): what it asks is still what its resources say.
    out.request_problem = req.message();
    if (auto amounts = bound_request(contract, pod)) req = std::move(amounts);
  }
  if (req && !req->wants_gpu()) {
    out.kind = BoundPodCharge::Kind::kNoGpu;
    out.cpu_milli = req->cpu_milli;
    out.memory_bytes = req->memory_bytes;
    out.request = std::move(req);
    return out;
  }
  if (out.has_record) {
    const std::string message = record_message(pod.meta.uid, pod.node_name, record_keys, pod.meta.annotations);
    if (auto by = check_record_signature(pod, message, trust)) {
      out.signed_by = std::move(*by);
    } else {
      out.rejection = BoundPodCharge::Rejection::kNotFracpacks;
      out.rejection_message = "its allocation record is not one fracpack's extender wrote (" + by.message() +
                              "): it is charged as a pod without a record, and the node agent does not serve it";
      rec = RecordedAllocation{};  // neither the record nor its flat card list
    }
  }
  if (!req) {
    // A pod fracpack would not place (another scheduler bound it) may still
    // carry a full record of what it holds: that is what it holds, with the
    // CPU and memory its containers name; if those cannot be read either,
    // nothing is known of it.
    scheduling::PodRequest facts_only;
    if (rec.kind == RecordedAllocation::Kind::kAllocation && pod_facts(pod, facts_only).ok()) {
      out.kind = BoundPodCharge::Kind::kRecord;
      out.record = std::move(rec);
      out.cpu_milli = facts_only.cpu_milli;
      out.memory_bytes = facts_only.memory_bytes;
    } else {
      out.kind = BoundPodCharge::Kind::kUnknown;
    }
    out.request = std::move(req);
    return out;
  }
  out.cpu_milli = req->cpu_milli;
  out.memory_bytes = req->memory_bytes;
  if (rec.kind == RecordedAllocation::Kind::kAllocation) {
    const Status within = scheduling::allocation_within_request(*req, rec.allocation, node);
    if (within.ok()) {
      out.kind = BoundPodCharge::Kind::kRecord;
      out.record = std::move(rec);
      out.request = std::move(req);
      return out;
    }
    out.rejection = BoundPodCharge::Rejection::kHoldsMore;
    out.rejection_message = "its allocation record holds more than the pod asks (" + within.message() +
                            "): it is charged as a pod without a record";
    out.signed_by = "none";
    rec = RecordedAllocation{};
  }
  out.kind = BoundPodCharge::Kind::kInfer;
  out.record = std::move(rec);
  out.request = std::move(req);
  return out;
}

}  // namespace fracpack::k8s
