#include "common/error_body.h"

#include "common/json/write.h"

namespace fracpack {

std::string error_body(std::string_view message) {
  // A message may quote the request (a path, a field's value).
  constexpr size_t kMaxMessageBytes = 4096;
  std::string out = "{\"Error\":";
  append_json_string_cut(out, message, kMaxMessageBytes);
  out.push_back('}');
  return out;
}

}  // namespace fracpack
