// The body of every error reply fracpack's HTTP server sends:
// {"Error":"<message>"}, the extender protocol's ExtenderBindingResult shape,
// which kube-scheduler reads from any verb, and valid JSON for any client;
// at most 4 KiB of message.
#pragma once

#include <string>
#include <string_view>

namespace fracpack {

std::string error_body(std::string_view message);

}  // namespace fracpack
