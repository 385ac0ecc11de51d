#pragma once
// Mutex names and contender ids (DESIGN §1).
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::core {

constexpr size_t k_max_name = 128;

// Throws UsageError unless `name` is 1–128 bytes of [A-Za-z0-9._:/@-].
void validate_mutex_name(std::string_view name);

// The owner id a backend stores and compares is "<label>#<16 hex>": the
// label (--contender-id, or "<pid>@<host>") and an instance id drawn at
// random by each simba process, so that two processes never share it
// (DESIGN §9), whatever label they were given. At most 128 bytes.
constexpr size_t k_instance_chars = 17;                       // "#" and 16 hex digits
constexpr size_t k_max_label = k_max_name - k_instance_chars; // 111

// Throws UsageError unless `label` is 1–111 printable bytes with no whitespace.
void validate_contender_label(std::string_view label);

// "<pid>@<host>", the host cut so that the label fits in 111 bytes.
std::string default_contender_label(long pid, std::string_view host);

// "<label>#<instance as 16 hex digits>".
std::string make_owner_id(std::string_view label, uint64_t instance);

// The label of an owner id made by make_owner_id; the id itself when it has
// no instance part (an id an older simba stored).
std::string_view label_of(std::string_view owner_id);

// Text read from a backend (names, owners) may hold anything another writer
// put there. For a terminal or a text log: every byte outside printable
// ASCII becomes \xNN and a backslash \\, so that no stored value can move
// the cursor, clear the screen or forge a line. No valid name or id holds a
// backslash, so valid ones come out as they are.
std::string escape_control(std::string_view s);
// The inverse, for a name typed as status showed it. Throws UsageError for a
// backslash not followed by "\\" or "xNN".
std::string unescape_control(std::string_view s);

} // namespace simba::core
