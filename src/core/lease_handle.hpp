#pragma once
// The handle of a split-phase lease (simba acquire, run --lease, renew,
// release --lease): a capability that names one lease on one backend —
// whoever holds it can guard, renew and release exactly that lease (the
// backends compare owner id AND fencing token), nobody else can.
//
// Text form: "simba1." + base64url (no padding) of seven lines: the
// backend's fingerprint, the mutex, the owner id, the fencing token, the
// ttl and the transition (ms), and a check of those six; with --slots, a
// line "slot/N" before the check. base64url keeps any mutex name and owner id intact
// through shells, env files ($GITHUB_ENV) and YAML without quoting.
#include <cstdint>
#include <string>
#include <string_view>

namespace simba::core {

struct LeaseHandle {
  std::string backend; // backend_fingerprint() of the backend that holds it
  std::string mutex;
  std::string owner_id; // the owner id stored with the lease (names.hpp)
  uint64_t token = 0;
  int64_t ttl_ms = 0;
  int64_t transition_ms = 0;
  // --slots N (slots.hpp): the slot the lease is, of `slots`. A handle of a
  // plain mutex (slots 1) has no field for them: its text is as before.
  int slot = 0;
  int slots = 1;
};

// The name the handle's lease is stored under: its slot's, or the mutex's.
std::string lease_name(const LeaseHandle& h);

std::string encode_lease_handle(const LeaseHandle& h);
// Throws UsageError (one line, the handle not echoed: it is a secret of
// sorts) unless `text` is a handle encode_lease_handle() made.
LeaseHandle decode_lease_handle(std::string_view text);

// 16 hex digits naming a backend (FNV-1a of Backend::describe(), which holds
// no password): a handle is refused by any other backend.
std::string backend_fingerprint(std::string_view describe);

} // namespace simba::core
