#include "common/error_body.h"

#include "common/json_write.h"

namespace fracpack {

std::string error_body(std::string_view message) {
  // A message may quote the request (a path, a field's value): it is cut so
  // an error reply never grows with what the client sent.
  constexpr size_t kMaxMessageBytes = 4096;
  bool cut = false;
  const std::string_view kept = utf8_prefix(message, kMaxMessageBytes, &cut);
  std::string out = "{\"Error\":";
  append_json_string(out, cut ? std::string(kept) + "..." : std::string(kept));
  out.push_back('}');
  return out;
}

}  // namespace fracpack
