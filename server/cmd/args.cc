#include "server/cmd/args.h"

#include <atomic>
#include <charconv>
#include <iostream>
#include <mutex>
#include <thread>

#include "server/cmd/commands.h"

namespace fracpack::cli {

int usage_error(const std::string& message) {
  std::cerr << "fracpack: " << message << "\n";
  return 2;
}

int fail(const std::string& message) {
  std::cerr << "fracpack: " << message << "\n";
  return 1;
}

Result<Args> Args::parse(const std::vector<std::string>& argv, const std::set<std::string>& valued,
                         const std::set<std::string>& switches) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      a.positional_.push_back(arg);
      continue;
    }
    std::string flag = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (valued.count(flag) != 0) {
      if (!value) {
        if (i + 1 >= argv.size()) return Error{"flag --" + flag + " needs a value"};
        value = argv[++i];
      }
      a.values_[flag] = *value;
    } else if (switches.count(flag) != 0) {
      if (value) return Error{"flag --" + flag + " takes no value"};
      a.switches_.insert(flag);
    } else {
      return Error{"unknown flag --" + flag + " (see --help)"};
    }
  }
  return a;
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& flag, const std::string& fallback) const {
  return get(flag).value_or(fallback);
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t s = 0;
  while (s <= text.size()) {
    const size_t e = text.find(sep, s);
    std::string part = text.substr(s, e == std::string::npos ? std::string::npos : e - s);
    if (!part.empty()) out.push_back(part);
    if (e == std::string::npos) break;
    s = e + 1;
  }
  return out;
}

std::optional<int64_t> parse_integer(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<std::vector<int64_t>> parse_seed_list(const std::string& text) {
  const auto num = parse_integer;
  std::vector<int64_t> out;
  for (const auto& part : split_list(text)) {
    const size_t dash = part.find('-', 1);
    if (dash != std::string::npos) {
      auto a = num(part.substr(0, dash));
      auto b = num(part.substr(dash + 1));
      if (!a || !b || *b < *a || *b - *a > 10000) return Error{"bad seed range \"" + part + "\" (e.g. 42-51)"};
      for (int64_t s = *a; s <= *b; ++s) out.push_back(s);
    } else {
      auto a = num(part);
      if (!a) return Error{"bad seed \"" + part + "\""};
      out.push_back(*a);
    }
  }
  if (out.empty()) return Error{"no seeds given"};
  return out;
}

Status run_parallel(size_t count, int threads, const std::function<Status(size_t)>& job) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(threads, static_cast<int>(count)); ++t) {
    pool.emplace_back([&] {
      for (size_t j; (j = next++) < count;) {
        Status s = job(j);
        std::lock_guard lock(mu);
        if (!s.ok() && first.ok()) first = s;
      }
    });
  }
  for (auto& th : pool) th.join();
  return first;
}

}  // namespace fracpack::cli
