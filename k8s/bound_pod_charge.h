// What the ledger charges a bound pod it has not charged yet, decided in one
// place: LedgerBuilder::apply_bound_pod charges by it, and
// LedgerBuilder::counted_record (what the reconciler sums, k8s/reconciler.h)
// counts by it. The two used to decide it each their own way and disagreed
// on an unreadable request (the reconciler counted a record the ledger had
// charged nothing for) and on the node spec (the reconciler read the
// ledger's effective one, the ledger the node's own cards).
//
// The rules, in order (k8s/ledger_builder.h tells the whole story):
//   - what the pod asks is read by the contract, else without its placement
//     annotations (bound_request);
//   - a pod that asks no GPU is charged its CPU and memory and no card,
//     whatever its annotations say;
//   - a record that is not fracpack's (its signature does not verify) is
//     rejected;
//   - what it asks cannot be read: its full record, with the CPU and memory
//     its containers name, is what it holds; else nothing;
//   - a record holding more than the pod asks is rejected;
//   - else its record as written, or (no usable record) its cards inferred.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "k8s/contract/contract.h"
#include "k8s/objects.h"
#include "k8s/record_signature.h"
#include "scheduling/model.h"

namespace fracpack::k8s {

// What a bound pod asks, read without the contract's placement annotations
// (Contract::placement_annotations): its owner may rewrite them after the
// bind, and where its cards went is settled.
Result<scheduling::PodRequest> bound_request(const Contract& contract, const Pod& pod);

struct BoundPodCharge {
  enum class Kind {
    kNoGpu,    // asks no GPU: cpu_milli and memory_bytes, no card
    kRecord,   // record.allocation as written, with cpu_milli and memory_bytes
    kInfer,    // no usable record: the cards are inferred from `record` (a partial one, or none) and the request
    kUnknown,  // what it asks cannot be read and no record says what it holds: no card, no CPU or memory
  };
  Kind kind = Kind::kUnknown;
  RecordedAllocation record;  // kRecord: the record; kInfer: what is left to infer from (never kAllocation)
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;

  // What it asks, as read (kNoGpu, kRecord with a readable request, kInfer).
  Result<scheduling::PodRequest> request = Error{"not read"};
  // Why the contract could not read what it asks ("": it could). With
  // `request` read all the same, it was read without the placement
  // annotations.
  std::string request_problem;

  bool has_record = false;         // any of the contract's record annotations is set
  std::string signed_by = "none";  // the key that signed the record (check_record_signature); "none": no record taken
  enum class Rejection { kNone, kNotFracpacks, kHoldsMore };
  Rejection rejection = Rejection::kNone;
  std::string rejection_message;   // for the pod's owner (FracpackRecordRejected)

  // The card indices and shares it holds on its node (kRecord; none otherwise).
  std::vector<scheduling::CardCharge> charges() const;
};

// `node`: the node's cards as the contract reads them (the builder's own
// spec: no ConfigMap marks, no cordons), null while the node is not known.
BoundPodCharge charge_bound_pod(const Contract& contract, const RecordTrust& trust, const std::vector<std::string>& record_keys,
                                const Pod& pod, const scheduling::NodeSpec* node);

}  // namespace fracpack::k8s
