#pragma once
// Mutex names and contender ids (DESIGN §1).
#include <cstdint>
#include <functional>
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

// The default label inside a CI job (issue 31 §5), so that every notice,
// status line and history event names the job rather than a pid long gone:
// GitHub Actions (GITHUB_ACTIONS=true) "$GITHUB_REPOSITORY#$GITHUB_RUN_ID/
// $GITHUB_JOB", GitLab CI (GITLAB_CI=true) "$CI_JOB_URL"; "" outside one
// or when a variable it needs is unset. `env` looks a variable up ("" when
// unset: core reads no environment). Made to fit by fit_label.
std::string ci_job_label(const std::function<std::string(const char*)>& env);

// `text` as a valid label, never an error (a CI's value is not the user's
// typing): each byte outside printable ASCII, and a space, becomes '_'; a
// text longer than 111 bytes keeps "..." and its last 108, the end being
// where a CI's id names the run and the job. "" stays "".
std::string fit_label(std::string_view text);

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
