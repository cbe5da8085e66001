// ExtenderArgs (k8s.io/kube-scheduler/extender/v1), the body of filter and
// prioritize: the pod, and the candidate nodes as NodeNames or a full
// NodeList. Decoded with simdjson as Go's encoding/json decodes it (keys
// matched case-insensitively, an exact match winning; unknown keys ignored;
// null as absent), reading only what fracpack needs: node names and texts are
// views into the body, and a candidate list sent before is taken whole.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json/padded_text.h"
#include "common/result.h"
#include "k8s/objects.h"

namespace fracpack::k8s {

// A Node sent in full (nodeCacheCapable: false): its name, and its text, to
// echo back unmodified when it passes. A node the ledger knows is judged
// by the ledger's view of it (the informer's, with fail-closed cordons), so
// only its name is read; the rest is decoded (parse_node(json)) only for a
// node the ledger does not know.
struct ExtenderNode {
  std::string_view name;  // metadata.name: a view into the body (or into storage, if escaped)
  std::string_view json;  // a view into the request body
  size_t item = 0;        // its index in Nodes.items (for messages)
};

// A NodeNames list decoded before. kube-scheduler sends the same candidates
// for pod after pod: a request whose list is this one byte for byte takes
// these names whole instead of decoding 5 000 strings again.
struct KnownNodeNames {
  std::string text;                     // the array as it was sent, brackets included
  std::vector<std::string_view> names;  // views into text
  // From a request's list: `text` its array text, `names` views into it
  // (null if one is not).
  static std::shared_ptr<const KnownNodeNames> copy_of(std::string_view text, const std::vector<std::string_view>& names);
};

// ExtenderArgs: the body of filter and prioritize.
struct ExtenderArgs {
  std::optional<Pod> pod;
  // NodeNames: views into the body, into storage, or into known_names.
  std::optional<std::vector<std::string_view>> node_names;
  std::optional<std::vector<ExtenderNode>> nodes;  // Nodes.items
  std::deque<std::string> storage;                 // names that had JSON escapes, decoded
  // The NodeNames array's text in the body, brackets included (empty if a
  // name had escapes): what a repeated candidate list is recognised by.
  std::string_view node_names_text;
  // Set when NodeNames was one of the known lists given to the parser.
  std::shared_ptr<const KnownNodeNames> known_names;
};

// `body` must outlive the result (names and node texts are views into it);
// a padded body (common/json/padded_text.h: every request body) is parsed
// in place, unpadded text copied first. `known`: lists to take NodeNames
// from when the body's is one of them.
Result<ExtenderArgs> parse_extender_args(PaddedText body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known = {});
Result<ExtenderArgs> parse_extender_args(std::string_view unpadded_body, const Selection& selection,
                                         std::span<const std::shared_ptr<const KnownNodeNames>> known = {});

}  // namespace fracpack::k8s
