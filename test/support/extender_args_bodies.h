// What the tests of the extender's request bodies share
// (test/k8s/extender_args_test.cc, extender_body_test.cc): a pod as
// kube-scheduler sends it, and the ExtenderArgs parser fed a body as a test
// holds it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "k8s/extender_args.h"

namespace fracpack::testing {

inline constexpr const char* kExtenderPod = R"({"metadata":{"name":"p","namespace":"ml","uid":"u-1"},"spec":{"containers":[{"name":"c"}]}})";

// The body unpadded, as a test holds it (the parser copies it).
inline Result<k8s::ExtenderArgs> parse_args(const std::string& body, const k8s::Selection& selection,
                                            std::span<const std::shared_ptr<const k8s::KnownNodeNames>> known = {}) {
  return k8s::parse_extender_args(std::string_view(body), selection, known);
}

}  // namespace fracpack::testing
