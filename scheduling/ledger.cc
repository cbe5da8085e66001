#include "scheduling/ledger.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <string>

#include "common/text.h"

namespace fracpack::scheduling {

int NodeState::position_of(int index) const {
  // Cards are few (<= 16 in practice) and sorted: a linear scan beats a map.
  for (size_t i = 0; i < spec_.cards.size(); ++i) {
    if (spec_.cards[i].index == index) return static_cast<int>(i);
  }
  return -1;
}

std::string gpu_shape_tag(const Allocation& allocation) {
  int cards = 0;
  bool shared = false;
  for (const auto& c : allocation.containers) {
    if (c.init) continue;
    for (const auto& s : c.cards) {
      ++cards;
      if (s.cores < kCardMilli) shared = true;
    }
  }
  if (cards == 0) return {};
  if (shared) return "share-gpu";
  return std::to_string(cards) + "-gpu";
}

Status allocation_fits(const NodeState& node, const Allocation& allocation) {
  if (!node.present()) return Error{"node " + node.name() + " is not known"};
  for (const auto& charge : charges_of(allocation)) {
    const int pos = node.position_of(charge.index);
    if (pos < 0) return Error{"node " + node.name() + " has no card " + std::to_string(charge.index)};
    const auto p = static_cast<size_t>(pos);
    const Card& card = node.cards()[p];
    const std::string where = "card " + std::to_string(charge.index) + " of node " + node.name();
    if (!card.healthy) return Error{where + " is unhealthy"};
    if (card.cordoned) return Error{where + " is cordoned"};
    if (node.use()[p].cores >= kCardMilli) return Error{where + " is taken exclusively"};
    if (card.max_sharers > 0 && node.use()[p].sharers + charge.shares > card.max_sharers) {
      return Error{where + " already serves " + std::to_string(node.use()[p].sharers) + " of its " +
                   std::to_string(card.max_sharers) + " shares"};
    }
    if (charge.cores > node.free_cores(p)) {
      return Error{where + " has " + std::to_string(node.free_cores(p) / 10) + "% compute free, needs " +
                   std::to_string((charge.cores + 9) / 10) + "%"};
    }
    if (charge.memory_mib > node.free_memory(p)) {
      return Error{where + " has " + std::to_string(node.free_memory(p)) + " MiB free, needs " +
                   std::to_string(charge.memory_mib) + " MiB"};
    }
  }
  return Status::Ok();
}

NodeState& Ledger::node_entry(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    it = nodes_.emplace(name, NodeState{}).first;
    layout_ = next_stamp();
    NodeState& node = it->second;
    node.spec_.name = name;
    if (free_slots_.empty()) {
      node.slot_ = next_slot_++;
    } else {
      node.slot_ = free_slots_.back();
      free_slots_.pop_back();
    }
    touch(node);
    by_name_.insert(&node);
  }
  return it->second;
}

// What a pod holds on a node, added (sign +1) or taken away (-1); returns
// the compute added to cards the node has.
int64_t Ledger::charge(NodeState& node, const PodRecord& pod, int sign) {
  int64_t cores = 0;
  for (const auto& c : pod.charges) {
    const int pos = node.position_of(c.index);
    if (pos < 0) continue;  // card not (or no longer) on the node: nothing to hold
    CardUse& use = node.use_[static_cast<size_t>(pos)];
    use.memory_mib += sign * c.memory_mib;
    use.cores += sign * c.cores;
    use.sharers += sign * c.shares;
    cores += sign * c.cores;
  }
  node.cpu_requested_ += sign * pod.cpu_milli;
  node.memory_requested_ += sign * pod.memory_bytes;
  if (!pod.tag.empty()) {
    int& n = node.tags_[pod.tag];
    n += sign;
    if (n == 0) node.tags_.erase(pod.tag);
  }
  return cores;
}

void Ledger::apply(NodeState& node, const PodRecord& pod, int sign) {
  total_cores_used_ += charge(node, pod, sign);
  touch(node);
}

NodeState Ledger::project(const NodeSpec& spec, const std::vector<std::string>& without) const {
  NodeState n;
  n.spec_ = spec;
  n.present_ = true;
  n.use_.assign(spec.cards.size(), CardUse{});
  n.version_ = 0;
  n.slot_ = UINT32_MAX;
  if (const NodeState* known = node(spec.name)) {
    for (const PodRecord* pod : known->pods_) {
      if (std::find(without.begin(), without.end(), pod->uid) == without.end()) charge(n, *pod, +1);
    }
  }
  return n;
}

void Ledger::insert(PodRecord record) {
  NodeState& node = node_entry(record.node);
  if (record.phase == PodPhase::kAssumed) assumed_.insert(record.uid);
  std::string uid = record.uid;
  record.quota = quota_use(record.allocation);
  if (!record.quota.zero()) namespace_use_[std::string(namespace_of_key(record.key))] += record.quota;
  auto [it, inserted] = pods_.emplace(std::move(uid), std::move(record));
  assert(inserted);
  (void)inserted;
  node.pods_.push_back(&it->second);
  apply(node, it->second, +1);
}

void Ledger::erase(std::unordered_map<std::string, PodRecord>::iterator it) {
  const std::string node_name = it->second.node;
  NodeState& node = node_entry(node_name);
  apply(node, it->second, -1);
  if (!it->second.quota.zero()) {
    auto ns = namespace_use_.find(std::string(namespace_of_key(it->second.key)));
    assert(ns != namespace_use_.end());
    ns->second -= it->second.quota;
    if (ns->second.zero()) namespace_use_.erase(ns);
  }
  auto& list = node.pods_;
  const auto pos = std::find(list.begin(), list.end(), &it->second);
  assert(pos != list.end());
  *pos = list.back();
  list.pop_back();
  assumed_.erase(it->first);
  pods_.erase(it);
  maybe_drop_node(node_name);
}

void Ledger::maybe_drop_node(const std::string& name) {
  auto it = nodes_.find(name);
  if (it != nodes_.end() && !it->second.present_ && it->second.pods_.empty()) {
    by_name_.erase(it->first);
    free_slots_.push_back(it->second.slot_);
    nodes_.erase(it);
    layout_ = next_stamp();
  }
}

void Ledger::upsert_node(NodeSpec spec) {
  NodeState& node = node_entry(spec.name);
  const bool cards_same = node.present_ && node.spec_.cards == spec.cards;
  if (!cards_same || node.spec_.cpu_milli != spec.cpu_milli || node.spec_.memory_bytes != spec.memory_bytes ||
      node.spec_.excluded != spec.excluded) {
    capacity_stamp_ = next_stamp();
  }
  if (cards_same) {
    node.spec_ = std::move(spec);
    touch(node);
    debug_check();
    return;
  }
  // Cards changed (or the node is new): re-apply its pods to the new cards.
  for (const PodRecord* pod : node.pods_) apply(node, *pod, -1);
  if (node.present_) count_cards(node.spec_, -1);
  count_cards(spec, +1);
  node.spec_ = std::move(spec);
  node.present_ = true;
  node.use_.assign(node.spec_.cards.size(), CardUse{});
  for (const PodRecord* pod : node.pods_) apply(node, *pod, +1);
  touch(node);  // even without pods: its cards changed
  debug_check();
}

void Ledger::remove_node(std::string_view name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  NodeState& node = it->second;
  for (const PodRecord* pod : node.pods_) apply(node, *pod, -1);
  if (node.present_) count_cards(node.spec_, -1);
  node.spec_ = NodeSpec{node.spec_.name, 0, 0, {}, {}, {}, 0};
  node.use_.clear();
  node.present_ = false;
  capacity_stamp_ = next_stamp();
  for (const PodRecord* pod : node.pods_) apply(node, *pod, +1);  // CPU/memory only: no cards
  touch(node);
  maybe_drop_node(std::string(name));
  debug_check();
}

Status Ledger::assume(const PodFacts& pod, Allocation allocation, Clock::time_point deadline) {
  if (pods_.count(pod.uid) != 0) return Error{"pod " + pod.key + " already holds a placement"};
  auto it = nodes_.find(std::string_view(allocation.node));
  if (it == nodes_.end() || !it->second.present_) return Error{"node " + allocation.node + " is not known"};
  if (Status fits = allocation_fits(it->second, allocation); !fits.ok()) return fits;
  if (!quotas_.empty()) {
    // A pod without cards asks nothing of the quota (a malformed limit
    // must not cost it its CPU and memory reservation).
    if (const QuotaUse asked = quota_use(allocation); !asked.zero()) {
      if (Status s = quota_admits(namespace_of_key(pod.key), asked); !s.ok()) return s;
    }
  }

  PodRecord record;
  record.uid = pod.uid;
  record.key = pod.key;
  record.node = allocation.node;
  record.phase = PodPhase::kAssumed;
  record.deadline = deadline;
  record.cpu_milli = pod.cpu_milli;
  record.memory_bytes = pod.memory_bytes;
  record.charges = charges_of(allocation);
  record.tag = gpu_shape_tag(allocation);
  record.allocation = std::move(allocation);
  insert(std::move(record));
  debug_check();
  return Status::Ok();
}

int Ledger::confirm(const PodFacts& pod, Allocation allocation) {
  auto it = pods_.find(pod.uid);
  if (it != pods_.end()) {
    PodRecord& old = it->second;
    if (old.node == allocation.node && old.allocation == allocation && old.cpu_milli == pod.cpu_milli &&
        old.memory_bytes == pod.memory_bytes && namespace_of_key(old.key) == namespace_of_key(pod.key)) {
      old.phase = PodPhase::kConfirmed;
      old.key = pod.key;
      assumed_.erase(pod.uid);
      return 0;
    }
    erase(it);
  }
  PodRecord record;
  record.uid = pod.uid;
  record.key = pod.key;
  record.node = allocation.node;
  record.phase = PodPhase::kConfirmed;
  record.cpu_milli = pod.cpu_milli;
  record.memory_bytes = pod.memory_bytes;
  record.charges = charges_of(allocation);
  record.tag = gpu_shape_tag(allocation);
  record.allocation = std::move(allocation);
  const std::string node_name = record.node;
  insert(std::move(record));
  debug_check();

  int over = 0;
  const NodeState& node = nodes_.at(node_name);
  for (size_t p = 0; p < node.use_.size(); ++p) {
    if (node.overcommitted(p)) ++over;
  }
  return over;
}

bool Ledger::forget(std::string_view uid) {
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || it->second.phase != PodPhase::kAssumed) return false;
  erase(it);
  debug_check();
  return true;
}

bool Ledger::remove(std::string_view uid) {
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return false;
  erase(it);
  debug_check();
  return true;
}

std::vector<PodRecord> Ledger::expire(Clock::time_point now) {
  std::vector<std::string> due;
  for (const auto& uid : assumed_) {
    if (pods_.at(uid).deadline <= now) due.push_back(uid);
  }
  std::sort(due.begin(), due.end());  // deterministic order of the returned records
  std::vector<PodRecord> out;
  out.reserve(due.size());
  for (const auto& uid : due) {
    auto it = pods_.find(uid);
    out.push_back(it->second);
    erase(it);
  }
  if (!due.empty()) debug_check();
  return out;
}

const NodeState* Ledger::node(std::string_view name) const { return by_name_.find(name); }

void Ledger::touch(NodeState& node) {
  node.version_ = next_stamp();
  change_stamp_ = node.version_;
  const Change c{node.version_, node.slot_};
  if (journal_.size() < kJournal) {
    journal_.push_back(c);
    return;
  }
  journal_floor_ = journal_[journal_next_].version;
  journal_[journal_next_] = c;
  journal_next_ = (journal_next_ + 1) % kJournal;
}

bool Ledger::changed_since(uint64_t stamp, std::vector<uint32_t>& slots) const {
  if (stamp < journal_floor_) return false;
  // Newest first, back to `stamp`: a recent stamp costs only its changes.
  for (size_t k = 0; k < journal_.size(); ++k) {
    const size_t at = (journal_next_ + journal_.size() - 1 - k) % journal_.size();
    if (journal_[at].version <= stamp) break;
    slots.push_back(journal_[at].slot);
  }
  return true;
}

uint64_t Ledger::next_stamp() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

const PodRecord* Ledger::pod(std::string_view uid) const {
  auto it = pods_.find(std::string(uid));
  return it == pods_.end() ? nullptr : &it->second;
}

int Ledger::overcommitted_cards() const {
  int over = 0;
  for (const auto& [name, node] : nodes_) {
    for (size_t p = 0; p < node.use_.size(); ++p) {
      if (node.overcommitted(p)) ++over;
    }
  }
  return over;
}

std::string_view namespace_of_key(std::string_view key) { return split_object_key(key).namespace_name; }

QuotaUse Ledger::namespace_use(std::string_view namespace_name) const {
  auto it = namespace_use_.find(std::string(namespace_name));
  return it == namespace_use_.end() ? QuotaUse{} : it->second;
}

void Ledger::set_quota(std::string namespace_name, std::vector<QuotaLimit> limits) {
  if (limits.empty()) {
    auto it = quotas_.find(namespace_name);
    if (it != quotas_.end()) quotas_.erase(it);
    return;
  }
  quotas_[std::move(namespace_name)] = std::move(limits);
}

const std::vector<QuotaLimit>* Ledger::quota(std::string_view namespace_name) const {
  auto it = quotas_.find(namespace_name);
  return it == quotas_.end() ? nullptr : &it->second;
}

Status Ledger::quota_admits(std::string_view namespace_name, const QuotaUse& asked, std::string_view except_uid) const {
  const std::vector<QuotaLimit>* limits = quota(namespace_name);
  if (limits == nullptr) return Status::Ok();
  QuotaUse used = namespace_use(namespace_name);
  if (!except_uid.empty()) {
    if (const PodRecord* own = pod(except_uid); own != nullptr && namespace_of_key(own->key) == namespace_name) used -= own->quota;
  }
  return scheduling::quota_admits(std::string(namespace_name), *limits, used, asked);
}

std::map<std::string, QuotaUse> Ledger::namespace_uses() const { return {namespace_use_.begin(), namespace_use_.end()}; }

void Ledger::count_cards(const NodeSpec& spec, int sign) {
  for (const auto& card : spec.cards) {
    if ((card_memory_[card.memory_mib] += sign) == 0) card_memory_.erase(card.memory_mib);
  }
}

std::pair<int64_t, int64_t> Ledger::card_memory_bounds() const {
  if (card_memory_.empty()) return {0, 0};
  return {card_memory_.begin()->first, card_memory_.rbegin()->first};
}

Status Ledger::check_invariants(bool capacity) const {
  {
    std::map<int64_t, int> cards;
    for (const auto& [name, node] : nodes_) {
      if (!node.present_) continue;
      for (const auto& card : node.spec_.cards) ++cards[card.memory_mib];
    }
    if (cards != card_memory_) return Error{"the count of cards by memory differs from the nodes'"};
  }
  {
    std::unordered_map<std::string, QuotaUse> expect;
    for (const auto& [uid, pod] : pods_) {
      if (!(pod.quota == quota_use(pod.allocation))) return Error{"pod " + pod.key + ": quota use out of date"};
      if (!pod.quota.zero()) expect[std::string(namespace_of_key(pod.key))] += pod.quota;
    }
    if (expect != namespace_use_) return Error{"the namespaces' quota use differs from the sum over their pods"};
  }
  int64_t total = 0;
  size_t indexed = 0;
  for (const auto& [name, node] : nodes_) {
    if (node.use_.size() != node.spec_.cards.size()) return Error{"node " + name + ": usage/cards size mismatch"};
    std::vector<CardUse> expect(node.spec_.cards.size());
    int64_t cpu = 0, mem = 0;
    std::map<std::string, int> tags;
    for (const PodRecord* listed : node.pods_) {
      auto it = pods_.find(listed->uid);
      if (it == pods_.end() || &it->second != listed) return Error{"node " + name + " lists an unknown pod"};
      const PodRecord& pod = it->second;
      if (pod.node != name) return Error{"pod " + pod.key + " is on " + pod.node + " but listed by " + name};
      if (pod.charges != charges_of(pod.allocation)) return Error{"pod " + pod.key + ": charges out of date"};
      for (const auto& c : pod.charges) {
        const int pos = node.position_of(c.index);
        if (pos < 0) continue;
        expect[static_cast<size_t>(pos)].memory_mib += c.memory_mib;
        expect[static_cast<size_t>(pos)].cores += c.cores;
        expect[static_cast<size_t>(pos)].sharers += c.shares;
      }
      cpu += pod.cpu_milli;
      mem += pod.memory_bytes;
      if (!pod.tag.empty()) ++tags[pod.tag];
      ++indexed;
    }
    for (size_t p = 0; p < expect.size(); ++p) {
      const std::string where = "node " + name + " card " + std::to_string(node.spec_.cards[p].index);
      if (!(expect[p] == node.use_[p])) {
        return Error{where + ": usage " + std::to_string(node.use_[p].memory_mib) + " MiB/" +
                     std::to_string(node.use_[p].cores) + " milli/" + std::to_string(node.use_[p].sharers) +
                     " sharers differs from the sum of its pods " + std::to_string(expect[p].memory_mib) + "/" +
                     std::to_string(expect[p].cores) + "/" + std::to_string(expect[p].sharers)};
      }
      if (capacity && node.use_[p].cores > kCardMilli) return Error{where + ": compute over-committed"};
      if (capacity && node.free_memory(p) < 0) return Error{where + ": memory over-committed"};
      total += node.use_[p].cores;
    }
    if (cpu != node.cpu_requested_ || mem != node.memory_requested_) {
      return Error{"node " + name + ": CPU/memory requested differs from the sum of its pods"};
    }
    if (tags != node.tags_) return Error{"node " + name + ": shape tags differ from its pods"};
    if (!node.present_ && node.pods_.empty()) return Error{"node " + name + ": absent and empty, not dropped"};
  }
  if (indexed != pods_.size()) return Error{"some pods are not indexed by their node"};
  if (total != total_cores_used_) return Error{"cluster compute total out of date"};
  for (const auto& uid : assumed_) {
    auto it = pods_.find(uid);
    if (it == pods_.end() || it->second.phase != PodPhase::kAssumed) return Error{"assumed set out of date: " + uid};
  }
  return Status::Ok();
}

void Ledger::debug_check() const {
#ifdef FRACPACK_LEDGER_DEBUG_CHECKS
  // Accounting must hold after every mutation; capacity may be exceeded only
  // by confirm() (external truth), so only the sums are asserted here.
  Status s = check_invariants(/*capacity=*/false);
  assert(s.ok());
  (void)s;
#endif
}

}  // namespace fracpack::scheduling
