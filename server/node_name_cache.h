// The ledger's nodes for a filter's or prioritize's NodeNames: the last
// list's answer is reused while the list's text and the ledger's node set
// are the same (5 000 lookups saved per request when kube-scheduler repeats
// its candidates, as it does for pod after pod). It also says which names
// repeat an earlier one: each distinct node is answered once (a repeated
// name would otherwise repeat its reason in the reply).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/ledger.h"

namespace fracpack::server {

class NodeNameCache {
 public:
  // out[i]: the ledger's node named names[i], or null. repeated: empty
  // when every name is distinct, else repeated[i] != 0 where names[i]
  // appeared before. `names_text`: the list as it appeared in the request
  // ("" disables the reuse).
  void resolve(const scheduling::Ledger& ledger, const std::vector<std::string_view>& names, std::string_view names_text,
               std::vector<const scheduling::NodeState*>& out, std::vector<uint8_t>& repeated);

  // Which names repeat an earlier one (empty when none does).
  static std::vector<uint8_t> repeats(const std::vector<std::string_view>& names);

 private:
  std::mutex mu_;
  std::string text_;
  uint64_t layout_ = 0;
  const scheduling::Ledger* ledger_ = nullptr;
  std::vector<const scheduling::NodeState*> nodes_;
  std::vector<uint8_t> repeated_;
};

}  // namespace fracpack::server
