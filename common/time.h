// RFC 3339 times as Kubernetes writes them (metadata.creationTimestamp,
// Event timestamps): parsing and formatting, UTC, whole seconds out.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fracpack {

// Seconds since the epoch of an RFC 3339 time ("2024-05-01T10:00:00Z",
// fractions and offsets allowed); nullopt if malformed.
std::optional<double> parse_rfc3339(std::string_view text);
// "2024-05-01T10:00:00Z".
std::string format_rfc3339(int64_t epoch_seconds);
std::string format_rfc3339(std::chrono::system_clock::time_point t);

}  // namespace fracpack
