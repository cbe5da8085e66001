#include "server/node_name_cache.h"

#include <algorithm>

namespace fracpack::server {

void NodeNameCache::resolve(const scheduling::Ledger& ledger, const std::vector<std::string_view>& names,
                            std::string_view names_text, std::vector<const scheduling::NodeState*>& out) {
  out.resize(names.size());
  if (!names_text.empty()) {
    std::lock_guard lock(mu_);
    if (ledger_ == &ledger && layout_ == ledger.layout() && nodes_.size() == names.size() && text_ == names_text) {
      std::copy(nodes_.begin(), nodes_.end(), out.begin());
      return;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) out[i] = ledger.node(names[i]);
  if (names_text.empty()) return;
  std::lock_guard lock(mu_);
  text_.assign(names_text);
  layout_ = ledger.layout();
  ledger_ = &ledger;
  nodes_ = out;
}

}  // namespace fracpack::server
