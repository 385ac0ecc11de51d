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
constexpr size_t k_instance_chars = 17; // "#" and 16 hex digits
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

} // namespace simba::core
