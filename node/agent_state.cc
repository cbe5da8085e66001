#include "node/agent_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/file_io.h"

namespace fracpack::node {

std::string format_agent_state(const AgentState& state) {
  std::string out = "# fracpack node agent: containers allocated per waiting pod\n";
  if (!state.last_uid.empty()) out += "last " + state.last_uid + "\n";
  for (const auto& [uid, n] : state.served) out += "served " + uid + " " + std::to_string(n) + "\n";
  for (const auto& [uid, h] : state.holdings) {
    std::string charges;
    for (const scheduling::CardCharge& c : h.charges) {
      charges += (charges.empty() ? "" : ",") + std::to_string(c.index) + ":" + std::to_string(c.memory_mib) + ":" +
                 std::to_string(c.cores) + ":" + std::to_string(c.shares);
    }
    out += "holds " + uid + " " + h.key + " " + (charges.empty() ? "-" : charges) + "\n";
  }
  for (const auto& [uid, key] : state.undecided) out += "undecided " + uid + " " + key + "\n";
  if (state.verdicts_owed > 0) out += "owed " + std::to_string(state.verdicts_owed) + "\n";
  for (const std::string& uid : state.refused) out += "refused " + uid + "\n";
  return out;
}

Result<AgentState> parse_agent_state(const std::string& text, const std::string& source) {
  AgentState state;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string kind, uid, extra;
    words >> kind >> uid;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (uid.empty() && kind == "owed") return Error{where + "\"owed\" needs a count 1..1048576"};
    if (uid.empty()) return Error{where + "expected \"last <uid>\" or \"served <uid> <count>\", got \"" + line + "\""};
    if (kind == "last") {
      if (words >> extra) return Error{where + "\"last\" takes one pod UID"};
      state.last_uid = uid;
    } else if (kind == "served") {
      long long n = -1;
      if (!(words >> n) || n < 1 || n > 1024 || (words >> extra)) {
        return Error{where + "\"served " + uid + "\" needs a container count 1..1024"};
      }
      state.served[uid] = static_cast<int>(n);
    } else if (kind == "holds") {
      std::string key, charges;
      if (!(words >> key >> charges) || (words >> extra)) {
        return Error{where + "\"holds " + uid + "\" needs a namespace/name and the charges (card:memory:cores:shares,...)"};
      }
      Holding h{key, {}};
      if (charges != "-") {
        std::istringstream list(charges);
        std::string item;
        while (std::getline(list, item, ',')) {
          scheduling::CardCharge c;
          char a = 0, b = 0, d = 0;
          std::istringstream fields(item);
          long long index = -1, memory = -1, cores = -1, shares = -1;
          if (!(fields >> index >> a >> memory >> b >> cores >> d >> shares) || a != ':' || b != ':' || d != ':' || (fields >> extra) ||
              index < 0 || index > 1023 || memory < 0 || memory > (1LL << 40) || cores < 0 || cores > 1000000 || shares < 0 || shares > 1024) {
            return Error{where + "\"holds " + uid + "\": \"" + item + "\" is not card:memoryMiB:coresMilli:shares"};
          }
          c.index = static_cast<int>(index);
          c.memory_mib = memory;
          c.cores = static_cast<int>(cores);
          c.shares = static_cast<int>(shares);
          h.charges.push_back(c);
        }
      }
      state.holdings[uid] = std::move(h);
    } else if (kind == "undecided") {
      std::string key;
      if (!(words >> key) || (words >> extra)) return Error{where + "\"undecided " + uid + "\" needs a namespace/name"};
      state.undecided.emplace_back(uid, key);
    } else if (kind == "refused") {
      if (words >> extra) return Error{where + "\"refused\" takes one pod UID"};
      state.refused.push_back(uid);
    } else if (kind == "owed") {
      // `uid` holds the count here.
      long long n = -1;
      const bool digits = !uid.empty() && uid.size() <= 7 && std::all_of(uid.begin(), uid.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) n = std::stoll(uid);
      if (n < 1 || n > 1 << 20 || (words >> extra)) return Error{where + "\"owed\" needs a count 1..1048576"};
      state.verdicts_owed = static_cast<size_t>(n);
    } else {
      return Error{where + "unknown entry \"" + kind + "\" (expected last, served, holds, undecided, owed or refused)"};
    }
  }
  return state;
}

Result<AgentState> load_agent_state(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (ec) return Error{"state file " + path + ": " + ec.message()};
    return AgentState{};
  }
  auto text = read_file(path);
  if (!text) return Error{"state file " + text.message()};
  return parse_agent_state(*text, path);
}

Status save_agent_state(const std::string& path, const AgentState& state) {
  const std::string text = format_agent_state(state);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"state file " + tmp + ": " + std::strerror(errno)};
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{"state file " + tmp + ": " + why};
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const std::string why = synced ? "" : std::strerror(errno);
  if (::close(fd) != 0 || !synced) {
    ::unlink(tmp.c_str());
    return Error{"state file " + tmp + ": " + (synced ? std::string(std::strerror(errno)) : why)};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string rename_why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error{"state file " + path + ": " + rename_why};
  }
  return Status::Ok();
}

}  // namespace fracpack::node
