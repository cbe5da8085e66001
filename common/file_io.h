// Whole-file reads and writes, with errors that name the path: kubeconfigs,
// token and certificate files, snapshots, configurations, workloads.
#pragma once

#include <string>

#include "common/result.h"

namespace fracpack {

Result<std::string> read_file(const std::string& path);
Status write_file(const std::string& path, const std::string& content);

}  // namespace fracpack
