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

// "<pid>@<host>#<8 hex of nonce>", the host cut so the whole fits in 128 bytes.
std::string make_contender_id(long pid, std::string_view host, uint32_t nonce);

} // namespace simba::core
