#pragma once
// simba doctor: the judgements of the checks every backend shares, on what
// the command measured (no I/O here, so that tests can give them any
// numbers). The command (doctor.cpp) makes the calls; the backend adds its
// own checks (Backend::diagnose).
#include "backend/diagnosis.hpp"
#include "core/lease.hpp"

#include <cstdint>

namespace simba::cli {

// One reading of the backend's clock: a get() sent at `sent_ms` and
// answered at `received_ms` (this host's wall clock) whose reply says
// `backend_now_ms`. The backend read its clock somewhere between the two.
struct ClockReading {
  int64_t sent_ms = 0;
  int64_t received_ms = 0;
  int64_t backend_now_ms = 0;
};

// The part of DESIGN §4's margin that covers clocks, 2 ms + 1% of (ttl +
// transition): the margin less the time a SIGKILL takes, which is no
// clock's.
int64_t clock_margin_ms(int64_t ttl_ms, int64_t transition_ms);

// "clock": the offset between this host's wall clock and the backend's,
// within the round trip. simba never compares the two (every delay is the
// backend's), but an offset says that one of them is not synchronised, and
// the day it is, it steps by about that much: a step of the backend's
// clock forward ends every running lease that much early there, which
// only the margin absorbs. ok while the offset cannot be more than half
// the margin; warn when it may be; fail when it surely exceeds the whole
// margin.
backend::Finding judge_clock(const ClockReading& r, const backend::DiagnoseOptions& o);

// "quarantine": a get() of a mutex nobody holds, as `o` shows it. ok
// without a quarantine; warn with its end while one is in force (no new
// lease before then: the backend may have lost a running one).
backend::Finding judge_quarantine(const core::Observed& o);

} // namespace simba::cli
