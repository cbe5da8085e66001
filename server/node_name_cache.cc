#include "server/node_name_cache.h"

#include <algorithm>
#include <unordered_set>

namespace fracpack::server {

std::vector<std::shared_ptr<const k8s::KnownNodeNames>> NodeNameCache::known() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const k8s::KnownNodeNames>> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.list);
  return out;
}

std::shared_ptr<const k8s::KnownNodeNames> NodeNameCache::resolve(const scheduling::Ledger& ledger,
                                                                  const std::vector<std::string_view>& names,
                                                                  std::string_view names_text,
                                                                  const std::shared_ptr<const k8s::KnownNodeNames>& known,
                                                                  std::vector<const scheduling::NodeState*>& out,
                                                                  std::vector<uint8_t>& repeated) {
  const bool keep = !names_text.empty() && names_text.size() <= kMaxListBytes;
  std::unique_lock lock(mu_);
  auto it = entries_.end();
  if (known) {
    it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.list == known; });
  } else if (keep) {
    it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.list->text == names_text; });
  }
  if (it != entries_.end() && it->list->names.size() == names.size()) {
    std::rotate(entries_.begin(), it, it + 1);  // now the most recently used
    Entry& e = entries_.front();
    if (e.ledger != &ledger || e.layout != ledger.layout()) {
      e.nodes.resize(names.size());
      for (size_t i = 0; i < names.size(); ++i) e.nodes[i] = ledger.node(names[i]);
      e.ledger = &ledger;
      e.layout = ledger.layout();
    }
    out.assign(e.nodes.begin(), e.nodes.end());
    repeated = e.repeated;
    return e.list;
  }
  lock.unlock();
  out.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) out[i] = ledger.node(names[i]);
  repeated = repeats(names);
  if (!keep) return nullptr;
  Entry e;
  e.list = known ? known : k8s::KnownNodeNames::copy_of(names_text, names);
  if (!e.list) return nullptr;
  e.ledger = &ledger;
  e.layout = ledger.layout();
  e.nodes = out;
  e.repeated = repeated;
  auto list = e.list;
  lock.lock();
  // Another request may have kept the same list meanwhile: one entry each.
  auto same = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& k) { return k.list->text == list->text; });
  if (same != entries_.end()) entries_.erase(same);
  entries_.insert(entries_.begin(), std::move(e));
  if (entries_.size() > kLists) entries_.pop_back();
  return list;
}

std::vector<uint8_t> NodeNameCache::repeats(const std::vector<std::string_view>& names) {
  std::vector<uint8_t> out;
  std::unordered_set<std::string_view> seen;
  seen.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (seen.insert(names[i]).second) continue;
    if (out.empty()) out.resize(names.size(), 0);
    out[i] = 1;
  }
  return out;
}

}  // namespace fracpack::server
