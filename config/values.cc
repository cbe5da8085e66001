// The configuration's values that are not YAML's: durations, listen
// addresses, and the names of its enums, each parsed here alone (the file
// and the command-line flags both come through these).
#include <charconv>
#include <cmath>
#include <string>

#include "config/values.h"

namespace fracpack::config {

using std::chrono::milliseconds;

Result<milliseconds> parse_duration(std::string_view text) {
  if (text.empty()) return Error{"expected a duration like 10s, got an empty string"};
  const std::string quoted = "\"" + std::string(text) + "\"";
  if (text == "0") return milliseconds(0);
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (start == i) return Error{"expected a duration like 10s or 1m30s, got " + quoted};
    const std::string number(text.substr(start, i - start));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return Error{"expected a duration like 10s or 1m30s, got " + quoted};
    start = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string_view unit = text.substr(start, i - start);
    double scale = 0;
    if (unit == "ns") scale = 1e-6;
    else if (unit == "us" || unit == "\u00b5s") scale = 1e-3;
    else if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else return Error{"unknown unit \"" + std::string(unit) + "\" in duration " + quoted + " (use ns, us, ms, s, m, h)"};
    total_ms += value * scale;
  }
  if (total_ms > 1e12) return Error{"duration " + quoted + " is too long"};
  return milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

Result<std::pair<std::string, uint16_t>> parse_listen(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Error{"expected HOST:PORT or :PORT, got \"" + std::string(text) + "\""};
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string_view port = text.substr(colon + 1);
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p > 65535) {
    return Error{"bad port in \"" + std::string(text) + "\""};
  }
  return std::pair<std::string, uint16_t>{host, static_cast<uint16_t>(p)};
}

bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string_view without_devices_name(WithoutDevices w) { return w == WithoutDevices::kIdle ? "idle" : "fail"; }

Result<WithoutDevices> parse_without_devices(std::string_view name) {
  if (name == "fail") return WithoutDevices::kFail;
  if (name == "idle") return WithoutDevices::kIdle;
  return Error{"expected fail or idle, got \"" + std::string(name) + "\""};
}

std::string_view record_signing_name(RecordSigning r) { return r == RecordSigning::kUnsigned ? "unsigned" : "signed"; }

Result<RecordSigning> parse_record_signing(std::string_view name) {
  if (name == "signed") return RecordSigning::kSigned;
  if (name == "unsigned") return RecordSigning::kUnsigned;
  return Error{"expected signed or unsigned, got \"" + std::string(name) + "\""};
}

std::string_view log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

Result<LogLevel> parse_log_level(std::string_view name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == log_level_name(l)) return l;
  }
  return Error{"expected debug, info, warn or error, got \"" + std::string(name) + "\""};
}

std::string_view log_format_name(LogFormat f) { return f == LogFormat::kLogfmt ? "logfmt" : "json"; }

Result<LogFormat> parse_log_format(std::string_view name) {
  if (name == "json") return LogFormat::kJson;
  if (name == "logfmt") return LogFormat::kLogfmt;
  return Error{"expected json or logfmt, got \"" + std::string(name) + "\""};
}

}  // namespace fracpack::config
