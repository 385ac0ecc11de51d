#pragma once
// The core's calls (action::Call, action::Disown, action::RecordLost, RecordSkipped,
// EndRevoked) as backend operations:
// which Backend method each one is, and the count of them all
// (SIMBA_CALL_COUNT_FILE, for scripts/bench).
#include "backend/backend.hpp"
#include "core/action.hpp"
#include "core/contender.hpp"

#include <cstdint>
#include <string>

namespace simba::cli {

core::CallResult to_call_result(const backend::Reply& r);

class BackendCalls {
public:
  BackendCalls(backend::Backend& backend, const core::ContenderConfig& config)
      : m_backend(backend), m_config(config), m_slot(config.lease_slot) {}

  // `a`, bounded by `timeout_ms`; its reply as the core reads it.
  core::CallResult call(const core::action::Call& a, int64_t timeout_ms);
  // A release nobody waits for (its reply is dropped).
  void disown(const core::action::Disown& a);
  // The lost event (Backend::record_lost); its reply only for a log line.
  backend::Reply record_lost(const core::action::RecordLost& a);
  // Our lease with `token`, revoked, ended now (Backend::end_revoked).
  backend::Reply end_revoked(uint64_t token, int64_t timeout_ms);
  // The skipped event (Backend::record_skipped), in the mutex's own history
  // also with --slots; its reply only for a log line.
  backend::Reply record_skipped(const core::action::RecordSkipped& a);
  // SIMBA_CALL_COUNT_FILE (diagnostics, used by scripts/bench): at exit,
  // append "<pid> <backend calls>" to that file.
  void report() const;

private:
  core::CallResult send(const core::action::Call& a, int64_t timeout_ms);
  core::CallResult acquire_once(const core::action::Call& a, int64_t timeout_ms);
  core::CallResult waiters(int64_t timeout_ms); // Op::waiters
  // --slots N > 1: the acquisition picks a slot; the other calls address it.
  core::CallResult call_slot(const core::action::Call& a, int64_t timeout_ms);
  // A plain acquire's reply; exit 64 when the mutex is held with slots.
  core::CallResult plain_acquire_result(const backend::Reply& r);
  backend::Reply release_slot(uint64_t token, int64_t timeout_ms);

  backend::Backend& m_backend;
  const core::ContenderConfig& m_config;
  uint64_t m_count = 0; // backend calls (lease operations)
  int m_slot;           // --slots: the slot last acquired (a step's: its handle's); -1 none known
};

} // namespace simba::cli
