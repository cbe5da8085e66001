#include "server/node_name_cache.h"

#include <algorithm>
#include <unordered_set>

namespace fracpack::server {

void NodeNameCache::resolve(const scheduling::Ledger& ledger, const std::vector<std::string_view>& names,
                            std::string_view names_text, std::vector<const scheduling::NodeState*>& out,
                            std::vector<uint8_t>& repeated) {
  out.resize(names.size());
  if (!names_text.empty()) {
    std::lock_guard lock(mu_);
    if (ledger_ == &ledger && layout_ == ledger.layout() && nodes_.size() == names.size() && text_ == names_text) {
      std::copy(nodes_.begin(), nodes_.end(), out.begin());
      repeated = repeated_;
      return;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) out[i] = ledger.node(names[i]);
  repeated = repeats(names);
  if (names_text.empty()) return;
  std::lock_guard lock(mu_);
  text_.assign(names_text);
  layout_ = ledger.layout();
  ledger_ = &ledger;
  nodes_ = out;
  repeated_ = repeated;
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
