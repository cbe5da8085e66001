#include "common/error_body.h"

#include "common/json_write.h"

namespace fracpack {

std::string error_body(std::string_view message) {
  std::string out = "{\"Error\":";
  append_json_string(out, message);
  out.push_back('}');
  return out;
}

}  // namespace fracpack
