#pragma once
// Durations on the command line: 500ms, 10s, 2m, 1h, 1m30s; a bare number is
// seconds. Values are milliseconds.
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::core {

// Throws UsageError naming `what` (e.g. "--ttl") on anything else: empty,
// negative, unknown unit, overflow.
int64_t parse_duration(std::string_view text, std::string_view what);

// 1500 -> "1.5s", 90000 -> "1m30s", 250 -> "250ms".
std::string format_duration(int64_t ms);

// Epoch milliseconds as "2026-12-01T04:05:00Z" (UTC, whole seconds, rounded
// down).
std::string format_utc(int64_t epoch_ms);

} // namespace simba::core
