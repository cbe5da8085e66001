// The contract seam: everything that knows a Kubernetes resource or
// annotation name of a GPU-sharing contract sits behind this interface —
// how a pod asks for shares, how a node describes its cards, the allocation
// record a Binding writes, and how a bound pod's record is read back after a
// restart. ClusterState, the extender service, snapshots and the replay
// reach a contract only through it; a second contract (a peer's node agent)
// is one more implementation.
//
//   fracpack   (k8s/contract/fracpack.h) fracpack.io/* resources and
//              annotations, the README's contract.
//   hami       (k8s/contract/hami.h) HAMi's resources, node registration and
//              the annotations its device plugin reads.
//   gpushare   (k8s/contract/gpushare.h) Aliyun gpushare's aliyun.com/gpu-mem
//              and the ALIYUN_COM_GPU_MEM_* annotations.
//   tke        (k8s/contract/tke.h) GPUManager's tencent.com/vcuda-core and
//              -memory, served by fracpack's node agent and record.
//
// k8s/contract/profiles.h builds one by name; a deployment serves one
// profile and leaves nodes registered by another profile's node agent alone
// (NodeSpec::excluded, k8s/contract/foreign.h).
//
// What is the same for every contract lives elsewhere: Kubernetes' own
// request rules (k8s/contract/kubernetes_rules.h) and what to do when a
// record is missing or partial (the pod-to-ledger path, k8s/ledger_builder.h:
// it infers and fails closed the same way for every contract).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "scheduling/model.h"
#include "scheduling/quota.h"
#include "common/result.h"

namespace fracpack::k8s {

class NodeLock;

// What a bound pod's annotations say it holds.
struct RecordedAllocation {
  enum class Kind {
    kNone,       // no record: its cards are unknown (the caller infers them)
    kAllocation, // the record: these cards, these shares
    kCards,      // only a flat card list (a partial record): matched to the request by the caller
    kNeedsNode,  // the record names cards by UUID and the node's cards are not known yet
    kMalformed,  // a record that cannot be used; `problem` says why
  };
  Kind kind = Kind::kNone;
  scheduling::Allocation allocation;  // kAllocation
  std::vector<int> cards;             // kCards: card indices of the app containers' cards, in order
  std::string cards_source;           // kCards: where they were read ("annotation fracpack.io/gpu-indices")
  std::string problem;                // kMalformed, or why a full record gave way to kCards
};

// A ResourceQuota spec.hard key the contract's namespace quota reads
// (scheduling/quota.h, k8s/quota.h). Kubernetes' own quota admission
// ignores "limits." keys of extended resources: only fracpack counts them.
struct QuotaKey {
  std::string key;
  scheduling::QuotaResource resource = scheduling::QuotaResource::kCards;
  int64_t unit_mib = 1;  // memory keys: MiB per unit of the value
};

class Contract {
 public:
  virtual ~Contract() = default;

  // The profile's name: "fracpack".
  virtual std::string_view name() const = 0;
  // What the object decoders must keep for this contract.
  virtual const Selection& selection() const = 0;
  // The pod resources a pod asks with (kube-scheduler's managedResources).
  virtual std::vector<std::string> pod_resources() const = 0;
  // The resource the node agent's device plugin hands out as device IDs
  // (fracpack.io/gpu and nvidia.com/gpu: one per card; gpushare's
  // aliyun.com/gpu-mem: one per GiB). kubelet calls Allocate only for
  // containers that name it with a count above 0.
  virtual std::string device_resource() const = 0;
  // How many cards a container holds when kubelet allocates it `devices`
  // IDs of device_resource(): one per card for fracpack.io/gpu; for tke's
  // tencent.com/vcuda-core, percent of a card (30: one card, 200: two).
  // An error says why the count names no cards (the caller adds the
  // container and the field).
  virtual Result<int> cards_of_devices(int64_t devices) const;
  // The device IDs a card is advertised as, when the contract's unit fixes
  // it (tke: 100, a card's percent); 0: the node agent's choice
  // (--ids-per-card).
  virtual int device_ids_per_card() const { return 0; }
  // kube-scheduler's IsInterested: does any container (app or init) name
  // one of the contract's resources?
  virtual bool requests_gpu(const Pod& pod) const = 0;
  // The pod's placement request; errors name the pod and the field.
  virtual Result<scheduling::PodRequest> pod_request(const Pod& pod) const = 0;
  // The node's cards, cordons and allocatable CPU and memory; errors name
  // the node and the field.
  virtual Result<scheduling::NodeSpec> node_spec(const Node& node) const = 0;
  // The annotations the Binding writes for `allocation` of `pod` on `node`
  // (one atomic write with spec.nodeName), at `now`.
  virtual StringMap allocation_annotations(const Pod& pod, const scheduling::Allocation& allocation,
                                           const scheduling::NodeSpec& node,
                                           std::chrono::system_clock::time_point now) const = 0;
  // What a pod bound to `pod.node_name` holds by its annotations; `node` is
  // that node's description (null while it is not known).
  virtual RecordedAllocation recorded_allocation(const Pod& pod, const scheduling::NodeSpec* node) const = 0;
  // The annotations that make the record: written by allocation_annotations,
  // read back by recorded_allocation, and rewritten by no other component
  // after the bind. fracpack signs them (k8s/record_signature.h).
  virtual std::vector<std::string> record_keys() const = 0;
  // Every pod annotation of the record a namespace user must not write:
  // record_keys(), those the peer's device plugin rewrites after the bind,
  // and the signature. The admission webhook guards them (k8s/admission.h).
  virtual std::vector<std::string> guarded_annotations() const = 0;
  // The pod annotations pod_request reads that only steer where its cards
  // go (models, card UUIDs, NUMA, a sharing mode), not how much it asks. A
  // bound pod's holdings are judged without them: its owner may rewrite
  // them after the bind (to a model no card has, a value that cannot be
  // read) to make it look as if it held nothing (LedgerBuilder).
  virtual std::vector<std::string> placement_annotations() const { return {}; }
  // The per-node lock of a node agent that serves one bind per node at a
  // time and finds the pod through the lock (HAMi's hami.io/mutex.lock,
  // k8s/contract/hami_node_lock.h); null for contracts without one. Its
  // whole policy — who holds a node, whether binds take it, how it is taken
  // and released — is behind the NodeLock interface (k8s/contract/
  // node_lock.h, which lists who asks it what).
  virtual const NodeLock* node_lock() const { return nullptr; }
  // The ResourceQuota keys of the namespace GPU quota; none: the contract
  // has no quota (its ResourceQuotas are not watched).
  virtual std::vector<QuotaKey> quota_keys() const { return {}; }
  // What the operator should hear at start about how this contract places
  // (fracpack's: shares that may go on cards that cannot enforce them).
  virtual std::vector<std::string> start_warnings() const { return {}; }

  // Facts a node agent keeps beside the Node object, in ConfigMaps
  // (gpushare's unhealthy-gpu-<node> in kube-system). The namespace they
  // live in ("" when the contract reads none: nothing is watched).
  virtual std::string node_config_map_namespace() const { return {}; }
  // The nodes a ConfigMap of that namespace speaks of (none when it is not
  // one of the contract's).
  virtual std::vector<std::string> config_map_nodes(const ConfigMap&) const { return {}; }
  // Applies what the ConfigMap says to the node's description. Entries that
  // cannot be read are skipped and named in the error; the rest apply.
  virtual Status apply_config_map(const ConfigMap&, scheduling::NodeSpec&) const { return Status::Ok(); }
};

}  // namespace fracpack::k8s
