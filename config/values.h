// The configuration's values that are not YAML's (config/values.cc):
// durations, listen addresses, and its enums. Each is parsed here and
// nowhere else: the file (config/config.cc) and the command-line flags both
// come through these, and so does whoever acts on them (server/log.h for the
// log's level and format). A name that is none of an enum's is an error,
// never a default.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace fracpack::config {

// "10s", "1m30s", "250ms", "1.5h" (Go's time.ParseDuration, non-negative).
Result<std::chrono::milliseconds> parse_duration(std::string_view text);
// "HOST:PORT", ":PORT", "[::1]:PORT" -> host ("" = any) and port.
Result<std::pair<std::string, uint16_t>> parse_listen(std::string_view text);
// Whether a listen host is loopback only ("127.x.y.z", "::1", "localhost").
bool loopback_host(const std::string& host);

enum class WithoutDevices { kFail, kIdle };       // nodeAgent.withoutDevices: fail, idle
enum class RecordSigning { kSigned, kUnsigned };  // security.records: signed, unsigned
// log.level (--log-level): records below it are not written.
enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
// log.format (--log-format): JSON lines or logfmt.
enum class LogFormat { kJson, kLogfmt };

std::string_view without_devices_name(WithoutDevices w);
Result<WithoutDevices> parse_without_devices(std::string_view name);
std::string_view record_signing_name(RecordSigning r);
Result<RecordSigning> parse_record_signing(std::string_view name);
std::string_view log_level_name(LogLevel l);  // "debug", "info", "warn", "error"
Result<LogLevel> parse_log_level(std::string_view name);
std::string_view log_format_name(LogFormat f);  // "json", "logfmt"
Result<LogFormat> parse_log_format(std::string_view name);
// cluster.bindFenceRead: k8s/bind_fence_read.h; contract.profile: k8s/contract/profiles.h.

}  // namespace fracpack::config
