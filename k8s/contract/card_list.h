// What every contract checks of a node's card list once it has read it,
// and the operator's card cordon (a fracpack annotation, whatever contract
// registers the cards). Errors name the node and the annotation.
#pragma once

#include <string>
#include <string_view>

#include "scheduling/model.h"
#include "common/result.h"

namespace fracpack::k8s {

// Sorts the cards by index; refuses more than 64 cards, an index or a
// non-empty UUID given twice. `who` is "node n", `source` where the list
// was read ("annotation hami.io/node-nvidia-register").
Status check_cards(scheduling::NodeSpec& spec, const std::string& who, const std::string& source);

// Cordons the cards named in `text` (comma-separated UUIDs or indices);
// an entry that names no card is an error.
Status apply_cordons(scheduling::NodeSpec& spec, std::string_view text, const std::string& who, const std::string& annotation);

}  // namespace fracpack::k8s
