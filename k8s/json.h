// Internal to the adapters: simdjson on-demand decoders of Kubernetes
// objects, for the translation units that parse API bodies (lists, watch
// events, extender requests). Keep this header out of other headers: the
// amalgamated simdjson.h is large and costs every file that includes it.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "k8s/objects.h"

namespace fracpack::k8s::json {

namespace od = simdjson::ondemand;

// "expected a string at metadata.name" and the like.
Error type_error(std::string_view path, std::string_view expected);
Error syntax_error(simdjson::error_code code, std::string_view where);

// Decode an object (consumed) into the structure.
Status decode_meta(od::value v, const Selection& sel, ObjectMeta& out);
Status decode_pod(od::object v, const Selection& sel, Pod& out);
Status decode_node(od::object v, const Selection& sel, Node& out);
Status decode_config_map(od::object v, const Selection& sel, ConfigMap& out);

// A string, or "" for null. Errors name `path`.
Status get_string(od::value v, std::string_view path, std::string& out);
// A quantity: a JSON string, or a bare number (Kubernetes accepts both); its text.
Status get_quantity_text(od::value v, std::string_view path, std::string& out);

}  // namespace fracpack::k8s::json
