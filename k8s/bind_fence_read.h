// How a GPU bind's fence reads what the API server has bound on its node
// (cluster.bindFenceRead; k8s/bind_fence.h says what each read does and
// costs). Its names are parsed here and nowhere else: the configuration
// holds the enum, and a name that is none of these is refused, never taken
// for kAuto.
#pragma once

#include <string_view>

#include "common/result.h"

namespace fracpack::k8s {

enum class BindFenceRead { kConsistent, kResourceVersion, kMarker, kAuto };

// "consistent", "resourceVersion", "marker", "auto": the configuration's spelling.
std::string_view bind_fence_read_name(BindFenceRead read);
// The read a name spells, exactly (case and all); any other text is an
// error: expected auto, consistent, marker or resourceVersion, got "x".
Result<BindFenceRead> parse_bind_fence_read(std::string_view name);

}  // namespace fracpack::k8s
