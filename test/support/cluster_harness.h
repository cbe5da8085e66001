// Test harness: a fake API server, a ClusterState fed by a pod and a node
// informer (each on its own thread), object builders, and the check that
// the ledger equals what the pods' annotations say.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k8s/cluster_informers.h"
#include "k8s/cluster_state.h"
#include "k8s/informer.h"
#include "test/support/fake_apiserver.h"

namespace fracpack::testing {

// A reservation chooser that picks `allocation` whatever the ledger holds
// (the ledger still refuses it if it does not fit).
inline k8s::Reservations::Chooser fixed_choice(scheduling::Allocation allocation) {
  return [allocation = std::move(allocation)](const scheduling::Ledger&) -> Result<scheduling::Allocation> { return allocation; };
}

// A node with `gpus` identical cards described by GPU Feature Discovery labels.
std::string node_object(const std::string& name, int gpus, int64_t memory_mib = 16384, const std::string& cpu = "64");

struct PodSpec {
  PodSpec(std::string name_, std::string ns_, std::string node_, std::string phase_,
          std::map<std::string, std::string> limits_, std::map<std::string, std::string> annotations_, std::string uid_ = "")
      : name(std::move(name_)), ns(std::move(ns_)), node(std::move(node_)), phase(std::move(phase_)),
        limits(std::move(limits_)), annotations(std::move(annotations_)), uid(std::move(uid_)) {}
  std::string name;
  std::string ns = "default";
  std::string node;     // "" pending
  std::string phase = "Running";
  std::map<std::string, std::string> limits;
  std::map<std::string, std::string> annotations;
  std::string uid;      // "" lets the server choose
};
std::string pod_object(const PodSpec& p);

// The bind fence's marker pod (manifests/bind-fence.yaml): pending, for no
// scheduler, asking nothing.
std::string bind_fence_marker_pod(const std::string& ns = "fracpack-system", const std::string& name = "fracpack-bind-fence");

// Half a card's limits: 50 % compute and 8 GiB.
std::map<std::string, std::string> half_card();
// A pod another scheduler bound: on `node`, card `card`, with its record (uid
// "u-<name>"), asking what the record holds.
std::string bound_share_pod(const std::string& name, const std::string& node, int card, int percent = 50, int64_t memory_mib = 8192);
// Objects decoded as the fracpack contract decodes them.
k8s::Pod decoded_pod(const std::string& json);
k8s::Node decoded_node(const std::string& name, int gpus);

// The allocation annotation of a single-container share.
std::string allocation_annotation(const std::string& node, const std::vector<std::pair<int, int>>& cards_cores_percent,
                                  int64_t memory_mib = 0, const std::string& container = "main");

// What the allocation records of the server's bound, live pods charge, per
// (node, card index); the pods charging each card; records that do not parse.
struct AnnotatedCard {
  int64_t cores_milli = 0;
  int64_t memory_mib = 0;
  std::vector<std::string> pods;  // namespace/name
};
struct AnnotatedUse {
  std::map<std::pair<std::string, int>, AnnotatedCard> cards;
  std::vector<std::string> unrecorded;   // bound GPU pods without a record
  std::vector<std::string> bad_records;  // pods whose record is malformed or names another node
};
const k8s::Contract& fracpack_contract();  // the fracpack contract, default names
AnnotatedUse annotated_use(const FakeApiServer& server, const k8s::Contract& contract = fracpack_contract());

// The server's bound, live pods with what their records say, read as the
// contract reads them (with their node's cards).
struct RecordedPod {
  k8s::Pod pod;
  Result<scheduling::PodRequest> request;
  k8s::RecordedAllocation record;
};
std::vector<RecordedPod> recorded_pods(const FakeApiServer& server, const k8s::Contract& contract);

k8s::ClientConfig client_for(const FakeApiServer& server);
k8s::InformerOptions fast_informer(const std::string& resource, const std::string& field_selector = "");

// Forwards to a sink, keeping the last events it saw (list boundaries,
// items and watch events with name, resourceVersion, phase and node) for
// failure messages.
class TracingSink : public k8s::InformerSink {
 public:
  explicit TracingSink(k8s::InformerSink& inner) : inner_(inner) {}
  void begin_list(bool consistent) override;
  Status list_item(std::string_view json) override;
  void end_list(const std::string& rv) override;
  void abort_list() override;
  Result<std::string> event(k8s::WatchEventType type, std::string_view json) override;
  // The trace lines that mention `name` (or list boundaries), oldest first.
  std::string about(const std::string& name) const;

 private:
  void note(std::string line);
  k8s::InformerSink& inner_;
  mutable std::mutex mu_;
  std::deque<std::string> lines_;
};

class Cluster {
 public:
  explicit Cluster(FakeApiServerOptions options = {});
  ~Cluster();

  FakeApiServer& server() { return *server_; }
  k8s::ClusterState& state() { return *state_; }
  // Starts (or restarts, with a fresh ClusterState) the informers.
  void start(k8s::ClientConfig client);
  void start() { start(client_for(*server_)); }
  void stop();
  k8s::InformerStats pod_stats() const { return informers_->pod_stats(); }
  // What the pod informer delivered about this pod (see TracingSink).
  std::string pod_trace(const std::string& name) const { return pod_trace_ ? pod_trace_->about(name) : ""; }
  k8s::InformerStats node_stats() const { return informers_->node_stats(); }
  // Every informer's (pods, nodes, ResourceQuotas ...) summed: the fake
  // server's faults meet whichever informer asks first.
  k8s::InformerStats all_stats() const {
    k8s::InformerStats sum;
    for (const auto& h : informers_->health()) {
      sum.watches += h.stats.watches;
      sum.expired += h.stats.expired;
      sum.throttled += h.stats.throttled;
      sum.relists += h.stats.relists;
    }
    return sum;
  }

  // Polls `pred` until true or the timeout.
  static bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits until the ledger equals the annotations on the server; returns the
  // last difference ("" when equal).
  std::string wait_consistent(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<k8s::ClusterState> state_;
  TracingSink* pod_trace_ = nullptr;  // owned by the informers
  std::unique_ptr<k8s::ClusterInformers> informers_;
};

// "" if the ledger's cards, CPU and pods equal what the server's pods say
// (their allocation annotations), field by field; else the first difference.
std::string compare_ledger(const FakeApiServer& server, const k8s::ClusterState& state);

}  // namespace fracpack::testing
