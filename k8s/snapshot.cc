#include "k8s/snapshot.h"

#include <algorithm>

#include "common/time.h"
#include "k8s/ledger_builder.h"
#include "k8s/quota.h"
#include "k8s/workload_codec.h"
#include "scheduling/replay/sequence.h"

namespace fracpack::k8s {

using scheduling::PodRequest;

Result<ObjectList> parse_snapshot(std::string text, const Contract& contract) {
  return parse_list(text, contract.selection());
}

std::optional<scheduling::ShapeCounts> snapshot_workload(const ObjectList& list, std::vector<SnapshotProblem>& problems) {
  std::optional<scheduling::ShapeCounts> workload;
  for (const ConfigMap& cm : list.config_maps) {
    if (cm.meta.name != kWorkloadConfigMap) continue;
    const std::string* data = find(cm.data, kWorkloadKey);
    if (data == nullptr) {
      problems.push_back({"configmap " + cm.meta.name, "configmap " + cm.meta.name + ": no key " + kWorkloadKey});
      continue;
    }
    auto w = parse_workload(*data);
    if (!w) {
      problems.push_back({"configmap " + cm.meta.name, "configmap " + cm.meta.name + ": " + w.message()});
      continue;
    }
    workload = std::move(*w);
  }
  return workload;
}

SnapshotState read_snapshot(const ObjectList& list, const Contract& contract, const std::string& scheduler_name) {
  SnapshotState st;
  st.skipped_items = list.skipped;
  st.workload = snapshot_workload(list, st.problems);
  {
    QuotaBook book(contract.quota_keys());
    scheduling::Ledger limits;  // only its quotas are used
    for (const ResourceQuota& q : list.resource_quotas) {
      for (const scheduling::QuotaLimit& l : book.apply(q, limits)) {
        const std::string object = "resourcequota " + q.meta.namespace_name + "/" + q.meta.name;
        st.problems.push_back({object, object + ": spec.hard " + l.key + " cannot be read (" + l.malformed +
                                           "): no GPU placement in the namespace"});
      }
    }
    for (const auto& [ns, l] : limits.quotas()) st.quotas.emplace(ns, l);
  }
  LedgerBuilder builder(contract, [&](std::string object, std::string message) {
    // Every message names its object.
    SnapshotProblem problem;
    problem.message = message.rfind(object, 0) == 0 ? std::move(message) : object + ": " + message;
    problem.object = std::move(object);
    st.problems.push_back(std::move(problem));
  });
  for (const ConfigMap& c : list.config_maps) builder.apply_config_map(c);
  for (const Node& n : list.nodes) builder.apply_node(n);

  struct Pending {
    double created;
    std::string key;
    PodRequest request;
  };
  std::vector<Pending> pending;
  std::map<std::string, int64_t> demand;  // bound pods' GPU demand, by UID
  for (const Pod& p : list.pods) {
    if (p.terminal()) {
      ++st.terminal_pods;
      continue;
    }
    if (!p.node_name.empty()) {
      builder.apply_bound_pod(p);
      if (auto req = contract.pod_request(p)) {
        st.shapes.add(scheduling::shape_of(*req), 1, static_cast<double>(scheduling::node_memory_mib(*req)));
        demand[p.meta.uid] = replay::gpu_demand(*req);
      }
      continue;
    }
    auto req = contract.pod_request(p);
    if (!req) {
      st.problems.push_back({"pod " + p.key(), req.message()});  // the message names the pod
      continue;
    }
    st.shapes.add(scheduling::shape_of(*req), 1, static_cast<double>(scheduling::node_memory_mib(*req)));
    if (p.meta.deleting || p.scheduling_gated) continue;
    if (!scheduler_name.empty() && p.scheduler_name != scheduler_name) continue;
    const auto t = parse_rfc3339(p.meta.creation_timestamp);
    if (!t && !p.meta.creation_timestamp.empty()) {
      st.problems.push_back({"pod " + p.key(), "pod " + p.key() + ": metadata.creationTimestamp \"" +
                                                   p.meta.creation_timestamp + "\" is not an RFC 3339 time; ordered last"});
    }
    pending.push_back(Pending{t.value_or(1e300), p.key(), std::move(*req)});
  }
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    if (a.created != b.created) return a.created < b.created;
    return a.key < b.key;
  });
  for (auto& p : pending) st.pending.push_back(std::move(p.request));

  // What the path built, as nodes and records a replay loads afresh per run.
  const scheduling::Ledger& ledger = builder.ledger();
  for (const auto& [name, node] : ledger.nodes()) {
    if (node.present()) st.nodes.push_back(node.spec());
    for (const scheduling::PodRecord* r : node.pods()) {
      auto d = demand.find(r->uid);
      st.bound.push_back(BoundPod{scheduling::PodFacts{r->uid, r->key, r->cpu_milli, r->memory_bytes}, r->allocation,
                                  d == demand.end() ? 0 : d->second});
    }
  }
  std::sort(st.bound.begin(), st.bound.end(), [](const BoundPod& a, const BoundPod& b) { return a.facts.key < b.facts.key; });
  return st;
}

void load_ledger(const SnapshotState& state, scheduling::Ledger& ledger) {
  for (const auto& n : state.nodes) ledger.upsert_node(n);
  for (const auto& b : state.bound) ledger.confirm(b.facts, b.allocation);
  for (const auto& [ns, limits] : state.quotas) ledger.set_quota(ns, limits);
}

replay::SequenceResult replay_snapshot(const SnapshotState& state, scheduling::Policy& policy, const scheduling::Workload& metric,
                                       const replay::SequenceOptions& options) {
  scheduling::Ledger ledger;
  load_ledger(state, ledger);
  std::vector<std::string> order;
  for (const auto& n : state.nodes) order.push_back(n.name);
  int64_t arrived_before = 0;
  for (const auto& b : state.bound) arrived_before += b.gpu_demand;
  return replay::place_in_order(ledger, order, policy, state.pending, metric, options, arrived_before);
}

}  // namespace fracpack::k8s
