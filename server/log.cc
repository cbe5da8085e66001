#include "server/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/json/write.h"

namespace fracpack::server {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kJson)};

void append_logfmt_value(std::string& out, std::string_view v) {
  bool quote = v.empty();
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) quote = true;
  }
  if (!quote) {
    out += v;
    return;
  }
  out.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

std::string now_rfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

void configure_log(LogLevel level, LogFormat format) {
  g_level = static_cast<int>(level);
  g_format = static_cast<int>(format);
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

std::string format_log(LogFormat format, std::string_view time, LogLevel level, std::string_view message,
                       const std::vector<LogField>& fields) {
  std::string out;
  out.reserve(96 + message.size());
  if (format == LogFormat::kJson) {
    out += "{\"time\":";
    append_json_string(out, time);
    out += ",\"level\":\"";
    out += config::log_level_name(level);
    out += "\",\"msg\":";
    append_json_string(out, message);
    for (const auto& [k, v] : fields) {
      out.push_back(',');
      append_json_string(out, k);
      out.push_back(':');
      append_json_string(out, v);
    }
    out.push_back('}');
    return out;
  }
  out += "time=";
  out += time;
  out += " level=";
  out += config::log_level_name(level);
  out += " msg=";
  append_logfmt_value(out, message);
  for (const auto& [k, v] : fields) {
    out.push_back(' ');
    out += k;
    out.push_back('=');
    append_logfmt_value(out, v);
  }
  return out;
}

void log(LogLevel level, std::string_view message, std::vector<LogField> fields) {
  if (!log_enabled(level)) return;
  std::string line = format_log(static_cast<LogFormat>(g_format.load(std::memory_order_relaxed)), now_rfc3339(), level,
                                message, fields);
  line.push_back('\n');
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(2, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace fracpack::server
