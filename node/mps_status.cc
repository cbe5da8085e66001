#include "node/mps_status.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/json/write.h"
#include "common/time.h"

namespace fracpack::node {

using Tree = nlohmann::json;

// (Keys in the order nlohmann's tree wrote them, sorted: the file is the same.)
std::string format_mps_status(const MpsStatus& s) {
  std::string out = "{\"cards\":[";
  for (size_t i = 0; i < s.cards.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, s.cards[i]);
  }
  out.push_back(']');
  append_json_field(out, "heartbeat", format_rfc3339(s.heartbeat));
  append_json_field(out, "message", s.message);
  out += ",\"pid\":" + std::to_string(s.pid);
  out += ",\"restarts\":" + std::to_string(s.restarts);
  append_json_field(out, "state", s.state);
  out += "}\n";
  return out;
}

// Reading the file whole into a tree: a small, cold read of every field.

Result<MpsStatus> parse_mps_status(std::string_view text) {
  const Tree t = Tree::parse(text, nullptr, false);
  if (!t.is_object()) return Error{"not a JSON object"};
  MpsStatus s;
  try {
    s.state = t.at("state").get<std::string>();
    const auto at = parse_rfc3339(t.at("heartbeat").get<std::string>());
    if (!at) return Error{"heartbeat is not an RFC 3339 time"};
    s.heartbeat = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::duration<double>(*at)));
    s.pid = t.value("pid", int64_t{0});
    s.cards = t.value("cards", std::vector<std::string>{});
    s.restarts = t.value("restarts", int64_t{0});
    s.message = t.value("message", std::string());
  } catch (const Tree::exception& e) {
    return Error{std::string("a field is missing or of another type: ") + e.what()};
  }
  return s;
}

Status write_mps_status(const std::string& path, const MpsStatus& status) {
  const std::string tmp = path + ".tmp";
  if (Status s = write_file(tmp, format_mps_status(status)); !s.ok()) return s;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Error{"cannot rename " + tmp + " to " + path};
  return Status::Ok();
}

Status mps_serves(const Result<std::string>& file, const std::string& uuid, std::chrono::system_clock::time_point now,
                  std::chrono::milliseconds stale_after) {
  if (!file) return Error{"the MPS control daemon's status cannot be read (is fracpack mps-control-daemon running?): " + file.message()};
  auto s = parse_mps_status(*file);
  if (!s) return Error{"the MPS control daemon's status is malformed: " + s.message()};
  if (s->state != "ready") {
    return Error{"the MPS control daemon is " + s->state + (s->message.empty() ? std::string() : ": " + s->message)};
  }
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - s->heartbeat);
  if (age > stale_after) {
    return Error{"the MPS control daemon's last heartbeat is " + std::to_string(age.count() / 1000) +
                 " s old (fracpack mps-control-daemon gone?)"};
  }
  if (std::find(s->cards.begin(), s->cards.end(), uuid) == s->cards.end()) {
    return Error{"the MPS control daemon does not serve this card"};
  }
  return Status::Ok();
}

}  // namespace fracpack::node
