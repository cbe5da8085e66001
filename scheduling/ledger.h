// The ledger: per node, per card, how much memory and compute is held and by
// how many container shares; per pod UID, what it holds and whether that is only assumed
// (reserved by a bind in flight) or confirmed (read back from the pod's
// allocation annotation). It is rebuilt from the API server's list+watch, so
// a restart yields the same ledger; it owns no I/O and reads no clock.
//
// Pod states, after kube-scheduler's internal cache (pkg/scheduler/internal/cache):
//
//                 assume()                 confirm()
//     (absent) -----------> Assumed -----------------> Confirmed <--+
//        ^  ^                 |  |                        |  |      | confirm()
//        |  |     forget()    |  | expire(now) past       |  +------+ (annotation changed)
//        |  +-----------------+  | its deadline           |
//        +-----------------------+                        | remove() (deleted, terminal,
//        |                                                |  or bound without fracpack cards)
//        +------------------------------------------------+
//     confirm() on an absent pod enters Confirmed directly (a restart, or a
//     pod bound by another replica): the annotation is the source of truth.
//
// Invariants (check_invariants(), run by the tests and by debug builds after
// every mutation): every card's used memory, used cores and sharer count equal
// the sums over the pods placed on it, and every namespace's quota use the
// sum over its pods; assume() never takes a card past its memory or past 1000
// milli of compute, nor a namespace past its GPU quota (scheduling/quota.h). confirm() records what the API says
// even when that over-commits a card (another scheduler may have put it
// there); such cards are counted by overcommitted_cards() and accept nothing
// new until they drain.
//
// Cost: every pod operation is O(cards of its node); a node update that changes
// the cards re-applies that node's pods; one that does not is O(cards).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "scheduling/model.h"
#include "scheduling/name_index.h"
#include "scheduling/quota.h"
#include "common/result.h"

namespace fracpack::scheduling {

using Clock = std::chrono::steady_clock;

// Usage of one card.
struct CardUse {
  int64_t memory_mib = 0;
  int cores = 0;
  int sharers = 0;  // container shares on the card (CardCharge::shares summed)
  bool operator==(const CardUse&) const = default;
};

// A node with its current usage. Read-only outside the ledger.
struct PodRecord;

// The over-committed card, one rule for the ledger, the store, the bind
// fence's recheck and the reconciler: the charges on it sum past 1000 milli
// of compute or past its memory. (Which records are charged is the ledger's
// rule, k8s/ledger_builder.h: a record it rejects is not counted.)
constexpr bool card_over_capacity(int cores, int64_t memory_mib, int64_t capacity_mib) {
  return cores > kCardMilli || memory_mib > capacity_mib;
}

class NodeState {
 public:
  const NodeSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  bool present() const { return present_; }
  const std::vector<Card>& cards() const { return spec_.cards; }
  const std::vector<CardUse>& use() const { return use_; }

  int64_t cpu_requested() const { return cpu_requested_; }
  int64_t memory_requested() const { return memory_requested_; }
  int64_t cpu_left() const { return spec_.cpu_milli - cpu_requested_; }
  int64_t memory_left() const { return spec_.memory_bytes - memory_requested_; }

  int free_cores(size_t pos) const { return kCardMilli - use_[pos].cores; }
  int64_t free_memory(size_t pos) const { return spec_.cards[pos].memory_mib - use_[pos].memory_mib; }
  // The card at `pos` is over-committed (card_over_capacity).
  bool overcommitted(size_t pos) const { return card_over_capacity(use_[pos].cores, use_[pos].memory_mib, spec_.cards[pos].memory_mib); }
  // Position of the card with this device index, or -1.
  int position_of(int index) const;

  // Changes on every change of usage or cards, and is never reused by any
  // node of this ledger (a node deleted and re-created starts afresh):
  // evaluation caches key on it.
  uint64_t version() const { return version_; }
  // A small dense number, unique among the ledger's current nodes (reused
  // after a node is dropped): caches index arrays by it.
  uint32_t slot() const { return slot_; }
  // Pods placed here (confirmed or assumed), in no particular order.
  const std::vector<const PodRecord*>& pods() const { return pods_; }
  // GPU pods here by shape tag ("share-gpu", "1-gpu", "2-gpu", ...).
  const std::map<std::string, int>& gpu_pod_tags() const { return tags_; }

 private:
  friend class Ledger;
  NodeSpec spec_;
  bool present_ = false;  // false: pods refer to it but the node object is unknown or gone
  std::vector<CardUse> use_;
  int64_t cpu_requested_ = 0;
  int64_t memory_requested_ = 0;
  uint64_t version_ = 0;
  uint32_t slot_ = 0;
  // Records owned by the Ledger's map (node-based: addresses are stable).
  // A vector, not a set: a node holds tens of pods, and walking them is
  // what re-applying a node's cards does.
  std::vector<const PodRecord*> pods_;
  std::map<std::string, int> tags_;
};

enum class PodPhase { kAssumed, kConfirmed };

// What the ledger knows of one pod.
struct PodRecord {
  std::string uid;
  std::string key;  // namespace/name, for messages
  std::string node;
  PodPhase phase = PodPhase::kConfirmed;
  Clock::time_point deadline{};  // assumed pods only
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  Allocation allocation;
  std::vector<CardCharge> charges;  // derived from allocation
  QuotaUse quota;                   // derived from allocation: what it counts against its namespace's quota
  std::string tag;                  // GPU shape tag, empty for pods without GPUs
};

// The pod-level facts a placement commits besides its cards.
struct PodFacts {
  std::string uid;
  std::string key;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
};

class Ledger {
 public:
  Ledger() = default;
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;
  Ledger(Ledger&&) = default;
  Ledger& operator=(Ledger&&) = default;

  // --- nodes ---
  // Adds or replaces a node's description. Its pods stay; if its cards
  // changed, their charges are re-applied to the new cards.
  void upsert_node(NodeSpec spec);
  // The node is gone: it takes no placements; its pods' records stay until
  // they are removed themselves (a node can come back).
  void remove_node(std::string_view name);

  // --- namespace quotas (scheduling/quota.h) ---
  // The namespace's limits (every quota object's); empty: none.
  void set_quota(std::string namespace_name, std::vector<QuotaLimit> limits);
  // Null when the namespace has no limits.
  const std::vector<QuotaLimit>* quota(std::string_view namespace_name) const;
  const std::map<std::string, std::vector<QuotaLimit>, std::less<>>& quotas() const { return quotas_; }
  // Whether the namespace's limits admit `asked` beside what its pods hold
  // (but the pod `except_uid`: a pod judged again while its own reservation
  // is held is not counted twice).
  Status quota_admits(std::string_view namespace_name, const QuotaUse& asked, std::string_view except_uid = {}) const;
  // The memory of the smallest and the largest card of the present nodes
  // (0 and 0 without cards): what bounds a share sized by the card
  // (scheduling/quota_gate.h).
  std::pair<int64_t, int64_t> card_memory_bounds() const;

  // --- pods ---
  // Reserves the allocation for a bind in flight, if it still fits the node
  // and its namespace's quota (checked atomically with the reservation: no
  // two binds both take a namespace's last quota).
  Status assume(const PodFacts& pod, Allocation allocation, Clock::time_point deadline);
  // Records what the API server says the pod holds (its annotation), or that a
  // pod without fracpack cards is bound to a node (empty allocation.containers).
  // Replaces an assumed reservation of the same UID. Returns the number of
  // cards this left over-committed (0 normally).
  int confirm(const PodFacts& pod, Allocation allocation);
  // Drops an assumed reservation (its bind failed). Confirmed pods are kept.
  bool forget(std::string_view uid);
  // The pod is deleted, terminal, or no longer bound: release whatever it holds.
  bool remove(std::string_view uid);
  // Drops assumed reservations whose deadline is <= now; returns their records.
  std::vector<PodRecord> expire(Clock::time_point now);

  // --- views ---
  const NodeState* node(std::string_view name) const;
  // Changes whenever node() could answer differently for some name (a node
  // added or dropped); the NodeState addresses stay valid until then.
  uint64_t layout() const { return layout_; }
  // Changes whenever a node is added or dropped or its capacity (cards, CPU,
  // memory, exclusion) changes: what depends on the nodes but not on their
  // use (a policy's view of which nodes can take which pods) keys on it.
  uint64_t capacity_stamp() const { return capacity_stamp_; }
  // The node as it would be with `spec` (cards from elsewhere, e.g. a Node
  // object kube-scheduler sent) and the pods this ledger has on it. Not the
  // ledger's: version() 0, no slot, no pods listed.
  // `without`: pods left out (preemption's "as if these were gone").
  NodeState project(const NodeSpec& spec, const std::vector<std::string>& without = {}) const;
  const PodRecord* pod(std::string_view uid) const;
  // Nodes by name, present or not; stable order (sorted by name).
  const std::map<std::string, NodeState, std::less<>>& nodes() const { return nodes_; }
  // One more than the largest slot() in use.
  uint32_t slot_bound() const { return next_slot_; }
  // The version the latest changed node got (0 before any change): with
  // changed_since(), what a cache of answers over many nodes keys on to
  // redo only the nodes that changed (the extender's filter replies).
  uint64_t change_stamp() const { return change_stamp_; }
  // Appends to `slots` the slot of every node changed after `stamp` (one
  // this ledger's change_stamp() gave; a slot may repeat). False when the
  // ledger no longer remembers that far back (kJournal changes): the
  // caller redoes everything.
  bool changed_since(uint64_t stamp, std::vector<uint32_t>& slots) const;
  static constexpr size_t kJournal = 4096;
  size_t pod_count() const { return pods_.size(); }
  size_t assumed_count() const { return assumed_.size(); }
  std::vector<std::string> assumed_pods() const { return {assumed_.begin(), assumed_.end()}; }
  // Cluster totals over present nodes' schedulable and unschedulable cards.
  int64_t total_cores_used() const { return total_cores_used_; }
  int overcommitted_cards() const;
  // What a namespace's pods here (confirmed and assumed) count against its
  // quota (scheduling/quota.h); kept as pods come and go.
  QuotaUse namespace_use(std::string_view namespace_name) const;
  // Every namespace holding something, sorted by name.
  std::map<std::string, QuotaUse> namespace_uses() const;

  // Checks every invariant; the error names the first violation. With
  // `capacity` false only the accounting is checked (the sums), not that cards
  // stay within their capacity (which confirm() may legitimately break).
  Status check_invariants(bool capacity = true) const;

 private:
  NodeState& node_entry(const std::string& name);
  static int64_t charge(NodeState& node, const PodRecord& pod, int sign);
  void apply(NodeState& node, const PodRecord& pod, int sign);
  void insert(PodRecord record);
  void erase(std::unordered_map<std::string, PodRecord>::iterator it);
  void maybe_drop_node(const std::string& name);
  void debug_check() const;

  // Versions and layouts come from process-wide counters, so no two ledgers
  // (a test's, a replay's, the server's) ever share one: caches keyed by
  // them cannot confuse ledgers.
  static uint64_t next_stamp();
  void touch(NodeState& node);

  std::map<std::string, NodeState, std::less<>> nodes_;
  // The same nodes by name, for the extender's thousands of lookups per
  // request (scheduling/name_index.h).
  NameIndex<NodeState> by_name_;
  std::vector<uint32_t> free_slots_;
  uint32_t next_slot_ = 0;
  // The last kJournal changes (version, slot), a ring in version order;
  // changes at or before journal_floor_ are forgotten.
  struct Change {
    uint64_t version;
    uint32_t slot;
  };
  std::vector<Change> journal_;
  size_t journal_next_ = 0;  // where the next change goes once the ring is full
  uint64_t journal_floor_ = 0;
  uint64_t change_stamp_ = 0;
  uint64_t layout_ = next_stamp();  // changes when a node is added or dropped (see layout())
  uint64_t capacity_stamp_ = next_stamp();
  std::unordered_map<std::string, PodRecord> pods_;
  std::unordered_set<std::string> assumed_;
  int64_t total_cores_used_ = 0;
  std::unordered_map<std::string, QuotaUse> namespace_use_;  // by namespace; no zero entries
  std::map<std::string, std::vector<QuotaLimit>, std::less<>> quotas_;  // by namespace; no empty entries
  std::map<int64_t, int> card_memory_;  // the present nodes' cards: how many of each memory size
  void count_cards(const NodeSpec& spec, int sign);
};

// The namespace part of a pod key ("namespace/name").
std::string_view namespace_of_key(std::string_view key);

// Shape tag of an allocation, as GpuClustering groups pods: "share-gpu" when
// any card is shared, otherwise "<cards>-gpu"; empty without cards.
std::string gpu_shape_tag(const Allocation& allocation);

// Does the allocation fit the node's current free capacity and constraints of
// card health? Returns the reason when it does not. Used by assume(); exposed
// for the bind path's messages.
Status allocation_fits(const NodeState& node, const Allocation& allocation);

}  // namespace fracpack::scheduling
