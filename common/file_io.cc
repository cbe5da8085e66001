#include "common/file_io.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace fracpack {

Result<std::string> read_file(const std::string& path) {
  // A folder opens as a stream that reads nothing and fails no bad() check:
  // it would read as an empty file (a kubeconfig or token path naming one).
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Error{"cannot read " + path + ": it is a folder, not a file"};
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
