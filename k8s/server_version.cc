#include "k8s/server_version.h"

#include <optional>

// A tree: a cold read of /version, a small object, whole.
#include <nlohmann/json.hpp>

namespace fracpack::k8s {
namespace {

// "20", "20+", "31-gke.1": the leading digits.
bool leading_int(const std::string& s, int& out) {
  size_t i = 0;
  int v = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 6) v = v * 10 + (s[i++] - '0');
  if (i == 0) return false;
  out = v;
  return true;
}

}  // namespace

Result<ServerVersion> parse_server_version(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("/version is not JSON: ") + e.what()};
  }
  if (!j.is_object()) return Error{"/version is not an object"};
  ServerVersion v;
  // Strings, as the API server writes them; anything else is an error, not
  // an exception (j.value throws on another type).
  auto string_field = [&j](const char* key) -> std::optional<std::string> {
    auto it = j.find(key);
    if (it == j.end()) return std::string();
    if (!it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  const auto major_text = string_field("major"), minor_text = string_field("minor"), git = string_field("gitVersion");
  if (!major_text || !minor_text || !git) return Error{"/version: major, minor and gitVersion must be strings"};
  const std::string major = *major_text, minor = *minor_text;
  v.git_version = *git;
  if (!leading_int(major, v.major) || !leading_int(minor, v.minor)) {
    // Some builds leave major/minor empty: read gitVersion "v1.20.2".
    const std::string g = v.git_version.size() > 1 && v.git_version[0] == 'v' ? v.git_version.substr(1) : v.git_version;
    const size_t dot = g.find('.');
    if (dot == std::string::npos || !leading_int(g.substr(0, dot), v.major) || !leading_int(g.substr(dot + 1), v.minor)) {
      return Error{"/version names no major and minor version (major \"" + major + "\", minor \"" + minor + "\", gitVersion \"" +
                   v.git_version + "\")"};
    }
  }
  return v;
}

Result<ServerVersion> read_server_version(ApiClient& client, std::chrono::milliseconds timeout) {
  auto r = client.request("GET", "/version", {}, "application/json", timeout);
  if (!r) return Error{r.message()};
  if (r->status != 200) return Error{"GET /version: " + api_error_message(*r)};
  return parse_server_version(r->body);
}

}  // namespace fracpack::k8s
