// The ledger's nodes for a filter's or prioritize's NodeNames. kube-scheduler
// sends the same candidate list for pod after pod: the last few lists are
// kept (their text and names, which the parser then takes whole when a body
// repeats one, see k8s::KnownNodeNames) with their resolution, reused while
// the ledger's node set is the same (5 000 lookups saved per request). It
// also says which names repeat an earlier one: each distinct node is
// answered once (a repeated name would otherwise repeat its reason in the
// reply).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/extender_codec.h"
#include "scheduling/ledger.h"

namespace fracpack::server {

class NodeNameCache {
 public:
  // Lists kept, and the largest list text kept (a 5 000-node list is 84 KiB).
  static constexpr size_t kLists = 4;
  static constexpr size_t kMaxListBytes = 4 << 20;

  // The lists the parser may take a request's NodeNames from, most recently
  // used first.
  std::vector<std::shared_ptr<const k8s::KnownNodeNames>> known() const;

  // out[i]: the ledger's node named names[i], or null. repeated: empty
  // when every name is distinct, else repeated[i] != 0 where names[i]
  // appeared before. `names_text`: the list as it appeared in the request
  // (ExtenderArgs::node_names_text; "" when it cannot be kept), `known` the
  // list the parser took it from, if any. Returns the kept list these names
  // are (names[i] == list->names[i]), or null when it is not kept.
  std::shared_ptr<const k8s::KnownNodeNames> resolve(const scheduling::Ledger& ledger, const std::vector<std::string_view>& names,
                                                     std::string_view names_text,
                                                     const std::shared_ptr<const k8s::KnownNodeNames>& known,
                                                     std::vector<const scheduling::NodeState*>& out, std::vector<uint8_t>& repeated);

  // Which names repeat an earlier one (empty when none does).
  static std::vector<uint8_t> repeats(const std::vector<std::string_view>& names);

 private:
  struct Entry {
    std::shared_ptr<const k8s::KnownNodeNames> list;
    const scheduling::Ledger* ledger = nullptr;
    uint64_t layout = 0;
    std::vector<const scheduling::NodeState*> nodes;
    std::vector<uint8_t> repeated;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // most recently used first
};

}  // namespace fracpack::server
