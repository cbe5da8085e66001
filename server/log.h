// Structured logs on stderr: one line per record, JSON lines or logfmt.
// Records carry a level, a message and key/value fields; values are always
// strings (quoted and escaped as the format needs). Never give a token or
// key material to a field.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/values.h"

namespace fracpack::server {

// The configuration's log.level and log.format, parsed there
// (config::parse_log_level, config::parse_log_format).
using config::LogFormat;
using config::LogLevel;

using LogField = std::pair<std::string_view, std::string>;

// Process-wide settings (set once at startup, before threads).
void configure_log(LogLevel level, LogFormat format);
bool log_enabled(LogLevel level);

// Formats one record (no trailing newline); exposed for tests.
std::string format_log(LogFormat format, std::string_view time, LogLevel level, std::string_view message,
                       const std::vector<LogField>& fields);

// Writes one record (a single write(2), so lines of several threads never interleave).
void log(LogLevel level, std::string_view message, std::vector<LogField> fields = {});
inline void log_info(std::string_view message, std::vector<LogField> fields = {}) { log(LogLevel::kInfo, message, std::move(fields)); }
inline void log_warn(std::string_view message, std::vector<LogField> fields = {}) { log(LogLevel::kWarn, message, std::move(fields)); }
inline void log_error(std::string_view message, std::vector<LogField> fields = {}) { log(LogLevel::kError, message, std::move(fields)); }

}  // namespace fracpack::server
