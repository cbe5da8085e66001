// Command-line parsing shared by the subcommands: "--flag value",
// "--flag=value" and boolean "--flag"; positional arguments in order.
// Unknown flags are errors naming the flag.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_io.h"
#include "common/result.h"

namespace fracpack::cli {

class Args {
 public:
  // `valued` flags take a value; `switches` do not.
  static Result<Args> parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                            const std::set<std::string>& switches);

  bool has(const std::string& flag) const { return values_.count(flag) != 0 || switches_.count(flag) != 0; }
  std::optional<std::string> get(const std::string& flag) const;
  std::string get_or(const std::string& flag, const std::string& fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
  std::vector<std::string> positional_;
};

// Whole files (the error names the path).
using fracpack::read_file;
using fracpack::write_file;

// A whole decimal integer ("42", "-3"); nullopt for anything else.
std::optional<int64_t> parse_integer(const std::string& text);
// "42-51" or "42,43,50" or "42".
Result<std::vector<int64_t>> parse_seed_list(const std::string& text);
// "fgd,bestfit".
std::vector<std::string> split_list(const std::string& text, char sep = ',');

// Runs job(0) .. job(count - 1) on up to `threads` threads (the replays'
// runs); a job's error stops nothing. Returns the first error, if any.
Status run_parallel(size_t count, int threads, const std::function<Status(size_t)>& job);

}  // namespace fracpack::cli
