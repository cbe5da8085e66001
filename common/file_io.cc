#include "common/file_io.h"

#include <fstream>
#include <sstream>

namespace fracpack {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{"error reading " + path};
  return ss.str();
}

Status write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{"cannot write " + path};
  out << content;
  out.close();
  if (!out) return Error{"error writing " + path};
  return Status::Ok();
}

}  // namespace fracpack
