#include "server/http_framing.h"

#include <boost/beast/core/string.hpp>

namespace fracpack::server {

namespace http = boost::beast::http;

bool has_obs_fold(std::string_view head) {
  for (size_t i = head.find("\r\n"); i != std::string_view::npos && i + 2 < head.size(); i = head.find("\r\n", i + 2)) {
    if (head[i + 2] == ' ' || head[i + 2] == '\t') return true;
  }
  return false;
}

std::string framing_error(const http::request_header<>& header) {
  if (header.version() >= 11 && header.find(http::field::host) == header.end()) return "HTTP/1.1 request without a Host header";
  size_t codings = 0;
  std::string_view coding;
  for (const auto& f : header) {
    if (f.name() != http::field::transfer_encoding) continue;
    ++codings;
    coding = f.value();
  }
  if (codings == 0) return "";
  while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
  while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
  if (codings > 1 || !boost::beast::iequals(coding, "chunked")) {
    return "unsupported Transfer-Encoding \"" + std::string(coding.substr(0, 64)) + "\" (only chunked is accepted)";
  }
  if (header.find(http::field::content_length) != header.end()) return "both Transfer-Encoding and Content-Length";
  return "";
}

}  // namespace fracpack::server
