// Filter and prioritize replies in names mode, kept per (candidate list, pod
// demand) and brought up to date by redoing only the nodes the ledger
// changed since (Ledger::changed_since). kube-scheduler asks about the same
// thousands of nodes for pod after pod, and between two of its cycles a bind
// changes one or two of them.
//
//   filter      each node's rendered answer (its name, or "name":"reason");
//               the reply is joined again only when an answer changed
//   prioritize  each node's raw score; the 0..10 scores are derived again
//               and only the changed ones are written over (each score has
//               two characters: `"Score": 9`, `"Score":10`)
//
// An entry is valid for one ledger, its node layout and the policy's
// generation (Evaluator::cache_generation); anything else rebuilds it. The
// verdicts come from the Evaluator, so a kept reply is the reply the
// uncached path writes, byte for byte (test/server/reply_cache_test.cc).
// Entries are bounded in number and bytes, the least recently used first out.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/extender_codec.h"
#include "scheduling/evaluator.h"
#include "scheduling/ledger.h"
#include "server/metrics.h"

namespace fracpack::server {

// Where a node's answer goes in an ExtenderFilterResult.
enum class FilterSection : uint8_t { kPassed, kFailed, kUnresolvable };
FilterSection section_of(const scheduling::Verdict& v);

// A filter's verdicts counted by outcome and rejection class, for metrics.
struct FilterTally {
  std::map<std::string_view, double> by_class;
  double passed = 0, failed = 0, unresolvable = 0;
  void add(const scheduling::Verdict& v) { add(section_of(v), v.fits ? std::string_view() : rejection_class(v.reason), 1); }
  void add(FilterSection section, std::string_view rejection_class, double sign);
  void report(Metrics& m) const;
};

// What the two kinds of kept reply share: which request it answers, for
// which ledger state, and where each listed node is.
struct KeptReply {
  std::shared_ptr<const k8s::KnownNodeNames> list;
  std::string demand;
  const scheduling::Ledger* ledger = nullptr;
  uint64_t layout = 0, generation = 0, stamp = 0;
  size_t budget = 0;
  std::vector<std::string_view> names;              // answer k's node (views into list)
  std::vector<const scheduling::NodeState*> nodes;  // by k
  std::vector<int32_t> by_slot;                     // k by node slot, -1 if none
  size_t bytes = 0;                                 // held, roughly

  bool current(const scheduling::Ledger& l, uint64_t generation, size_t budget) const;
  // Indexes the list's distinct names (repeated[i]: names[i] came before).
  void index(const scheduling::Ledger& l, uint64_t generation, size_t budget, std::span<const uint8_t> repeated,
             std::span<const scheduling::NodeState* const> nodes);
  // The answers (k, sorted) whose nodes changed since `stamp`, and those
  // nodes; false when the ledger no longer knows (rebuild).
  bool changed(const scheduling::Ledger& l, std::vector<uint32_t>& scratch, std::vector<uint32_t>& ks,
               std::vector<const scheduling::NodeState*>& redo) const;
};

struct ReplyCacheStats {
  uint64_t reused = 0;     // answered as it was
  uint64_t refreshed = 0;  // some nodes redone
  uint64_t rebuilt = 0;    // every node done
};

// Entries of one kind, most recently used first.
template <class Entry>
class KeptReplies {
 public:
  static constexpr size_t kEntries = 8;
  static constexpr size_t kMaxBytes = 32 << 20;
  // The entry for (list, demand), made if new; now the most recently used.
  Entry& find(const std::shared_ptr<const k8s::KnownNodeNames>& list, const std::string& demand);
  // Drops the least recently used past kEntries or kMaxBytes (the newest
  // stays, even alone past the bytes: it is being answered with).
  void trim();
  void drop_newest() { entries_.erase(entries_.begin()); }

 private:
  std::vector<std::unique_ptr<Entry>> entries_;
};

// A node's answer in a kept filter reply, rendered.
struct KeptFilterAnswer {
  FilterSection section = FilterSection::kPassed;
  std::string_view rejection_class;
  std::string text;
};
struct KeptFilterReply : KeptReply {
  std::vector<KeptFilterAnswer> answers;  // by k
  FilterTally tally;
  std::shared_ptr<const std::string> body;
};
struct KeptPrioritizeReply : KeptReply {
  std::vector<std::optional<int64_t>> raw;  // by k: the policy's score, none if the node does not fit
  std::vector<int64_t> scores;
  std::vector<size_t> score_at;  // where answer k's two score characters are in body
  std::shared_ptr<std::string> body;
};

// What both caches hold beside their entries: the lock, the buffers that
// list changed nodes (kept, not allocated per request), the counts.
template <class Entry>
class KeptReplyCache {
 public:
  ReplyCacheStats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 protected:
  // Under mu_: whether `e` is brought up to date by redoing only the nodes
  // changed since it was answered (then listed in ks_ and redo_).
  bool refreshable(const Entry& e, const scheduling::Ledger& l, uint64_t generation, size_t budget) {
    return e.body != nullptr && e.current(l, generation, budget) && e.changed(l, scratch_, ks_, redo_);
  }

  mutable std::mutex mu_;
  KeptReplies<Entry> entries_;
  std::vector<uint32_t> scratch_, ks_;
  std::vector<const scheduling::NodeState*> redo_;
  ReplyCacheStats stats_;
};

class FilterReplyCache : public KeptReplyCache<KeptFilterReply> {
 public:
  // `unresolvable_as_failed`: FilterReplyWriter::list_unresolvable_as_failed.
  explicit FilterReplyCache(bool unresolvable_as_failed = false) : unresolvable_as_failed_(unresolvable_as_failed) {}
  struct Reply {
    std::shared_ptr<const std::string> body;  // null: the reply would exceed max_reply_bytes
    FilterTally tally;
  };
  // The filter reply for `pod` over `list` (list->names[i] resolved as
  // nodes[i], those with repeated[i] set answered by their first
  // occurrence), as `ledger` is now. Called with the ledger held stable (its
  // read lock). `generation`: evaluator.cache_generation(), read before.
  Reply answer(const std::shared_ptr<const k8s::KnownNodeNames>& list, std::span<const uint8_t> repeated,
               std::span<const scheduling::NodeState* const> nodes, const scheduling::PodRequest& pod,
               const scheduling::Ledger& ledger, scheduling::Evaluator& evaluator, uint64_t generation, size_t max_reply_bytes);

 private:
  static KeptFilterAnswer answer_of(std::string_view name, const scheduling::Verdict& v);
  void render(KeptFilterReply& e) const;
  const bool unresolvable_as_failed_;
};

class PrioritizeReplyCache : public KeptReplyCache<KeptPrioritizeReply> {
 public:
  // The HostPriorityList for `pod` over `list` (as for FilterReplyCache).
  std::shared_ptr<const std::string> answer(const std::shared_ptr<const k8s::KnownNodeNames>& list,
                                            std::span<const uint8_t> repeated, std::span<const scheduling::NodeState* const> nodes,
                                            const scheduling::PodRequest& pod, const scheduling::Ledger& ledger,
                                            scheduling::Evaluator& evaluator, uint64_t generation);

 private:
  static void render(KeptPrioritizeReply& e);
};

}  // namespace fracpack::server
