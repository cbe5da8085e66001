#include "k8s/bind_fence_read.h"

#include <string>

namespace fracpack::k8s {

std::string_view bind_fence_read_name(BindFenceRead read) {
  switch (read) {
    case BindFenceRead::kConsistent: return "consistent";
    case BindFenceRead::kResourceVersion: return "resourceVersion";
    case BindFenceRead::kMarker: return "marker";
    case BindFenceRead::kAuto: return "auto";
  }
  return "?";
}

Result<BindFenceRead> parse_bind_fence_read(std::string_view name) {
  for (BindFenceRead r : {BindFenceRead::kAuto, BindFenceRead::kConsistent, BindFenceRead::kMarker, BindFenceRead::kResourceVersion}) {
    if (name == bind_fence_read_name(r)) return r;
  }
  return Error{"expected auto, consistent, marker or resourceVersion, got \"" + std::string(name) + "\""};
}

}  // namespace fracpack::k8s
