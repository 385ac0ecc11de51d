#pragma once
// Mutex names and contender ids (DESIGN §1).
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::core {

constexpr size_t k_max_name = 128;

// Throws UsageError unless `name` is 1–128 bytes of [A-Za-z0-9._:/@-].
void validate_mutex_name(std::string_view name);

// Throws UsageError unless `id` is 1–128 printable bytes with no whitespace.
void validate_contender_id(std::string_view id);

// Text read from a backend (names, owners) may hold anything another writer
// put there. For a terminal or a text log: every byte outside printable
// ASCII becomes \xNN and a backslash \\, so that no stored value can move
// the cursor, clear the screen or forge a line. No valid name or id holds a
// backslash, so valid ones come out as they are.
std::string escape_control(std::string_view s);
// The inverse, for a name typed as status showed it. Throws UsageError for a
// backslash not followed by "\\" or "xNN".
std::string unescape_control(std::string_view s);

// "<pid>@<host>#<8 hex of nonce>", the host cut so the whole fits in 128 bytes.
std::string make_contender_id(long pid, std::string_view host, uint32_t nonce);

} // namespace simba::core
