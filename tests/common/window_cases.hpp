#pragma once
// --once-per's window rule at its boundaries: one table, run against each
// of its three implementations -- core::window_start (C++, SQLite's:
// tests/unit/test_core_once_per.cpp), window_start in
// src/backend/redis/lua/common_once.lua (on the test Redis) and
// pg::window_start_sql (on the test PostgreSQL; both
// tests/backend/conformance_window.cpp). The rule: the window holding
// `now` starts at floor((now - offset) / period) * period + offset, now
// included (a window starts at its boundary), times before the epoch
// floored, not truncated. The expected starts were worked out with exact
// integers (Python's //), not with any of the three.
#include <cstdint>

namespace simba::test {

struct WindowCase {
  const char* what;
  int64_t now, period, offset;
  int64_t start; // the window's start
};

// 2026-12-01T00:00:00Z is 1796083200000, a multiple of a day but not of 7
// minutes (1796082960000 is, the one before it).
inline constexpr WindowCase k_window_cases[] = {
    {"1-day period, exact midnight", 1796083200000, 86400000, 0, 1796083200000},
    {"1-day period, 1 ms before midnight", 1796083199999, 86400000, 0, 1795996800000},
    {"1-day period, 1 ms after midnight", 1796083200001, 86400000, 0, 1796083200000},
    {"1-day period, the day's last ms", 1796169599999, 86400000, 0, 1796083200000},
    {"5 minutes, exact boundary", 1796083500000, 300000, 0, 1796083500000},
    {"5 minutes, 1 ms before", 1796083499999, 300000, 0, 1796083200000},
    {"1 day, offset 2 h, exact boundary", 1796090400000, 86400000, 7200000, 1796090400000},
    {"1 day, offset 2 h, 1 ms before", 1796090399999, 86400000, 7200000, 1796004000000},
    {"5 minutes, offset 30 s, exact boundary", 1796083530000, 300000, 30000, 1796083530000},
    {"5 minutes, offset 30 s, 1 ms before", 1796083529999, 300000, 30000, 1796083230000},
    {"offset period - 1, exact boundary", 1796169599999, 86400000, 86399999, 1796169599999},
    {"offset period - 1, 1 ms before", 1796169599998, 86400000, 86399999, 1796083199999},
    {"7 minutes, midnight (no boundary)", 1796083200000, 420000, 0, 1796082960000},
    {"7 minutes, exact boundary", 1796082960000, 420000, 0, 1796082960000},
    {"7 minutes, 1 ms before", 1796082959999, 420000, 0, 1796082540000},
    {"7 minutes, the window's last ms", 1796083379999, 420000, 0, 1796082960000},
    {"7 minutes, next boundary", 1796083380000, 420000, 0, 1796083380000},
    {"7 minutes, offset to midnight, exact", 1796083200000, 420000, 240000, 1796083200000},
    {"1 ms period", 1796083200123, 1, 0, 1796083200123},
    {"the epoch itself", 0, 86400000, 0, 0},
    {"before the epoch: -1 ms", -1, 1000, 0, -1000},
    {"before the epoch: exact boundary", -1000, 1000, 0, -1000},
    {"before the epoch: 1 ms before a boundary", -1001, 1000, 0, -2000},
    {"before the epoch, offset 1: exact boundary", -999, 1000, 1, -999},
    {"before the epoch, offset 1: 1 ms before", -1000, 1000, 1, -1999},
    {"before the epoch, 7 minutes, exact", -420000, 420000, 0, -420000},
    {"before the epoch, 7 minutes, 1 ms before", -420001, 420000, 0, -840000},
    {"before the epoch, 1 day, the day before's midnight", -86400000, 86400000, 0, -86400000},
    {"before the epoch, 1 day, 1 ms before the epoch", -1, 86400000, 0, -86400000},
    // Near 2^53 a double's quotient rounds: Lua's floor must be corrected.
    {"far future (below 2^53), 1 day", 9007199254740000, 86400000, 0, 9007199222400000},
    {"far future, 1 day, exact midnight", 9007199222400000, 86400000, 0, 9007199222400000},
    {"far future, 7 minutes, exact", 9007199254620000, 420000, 0, 9007199254620000},
    {"far future, 7 minutes, 1 ms before", 9007199254619999, 420000, 0, 9007199254200000},
};

// Which window a contender is judged in (issue 31 §1): its own, the window
// of the backend's now when it first reached the backend, not the one in
// which its acquire finally comes (core::judge_window with
// OncePer::window). Windows are counted in periods from the window of the
// backend's now (0; -1 the one before it). Run by the unit test of
// core::judge_window and, on every backend, by tests/backend/conformance_once.cpp
// (the record made by a run of `record` that exited `record_exit`).
inline constexpr int k_no_record = -99;
inline constexpr int k_window_of_now = 99; // the contender passes window 0

struct JudgeCase {
  const char* what;
  int record;      // the recorded run's window, or k_no_record
  int record_exit; // its exit status
  int contender;   // the contender's window, or k_window_of_now
  bool retry_failed;
  bool runs; // the contender takes the mutex (and records its window)
};

inline constexpr JudgeCase k_judge_cases[] = {
    {"no record: the window of now runs", k_no_record, 0, k_window_of_now, false, true},
    {"no record: an earlier window runs, late", k_no_record, 0, -1, false, true},
    {"the window before's record: ours runs", -1, 0, 0, false, true},
    {"the window before's record: the window of now runs", -1, 0, k_window_of_now, false, true},
    {"an older window's record: ours runs, late", -2, 0, -1, false, true},
    {"our window ran: refused", -1, 0, -1, false, false},
    {"our window ran, --retry-failed: refused", -1, 0, -1, true, false},
    {"our window failed: refused", -1, 3, -1, false, false},
    {"our window failed, --retry-failed: runs again, late", -1, 3, -1, true, true},
    {"the window of now ran: refused", 0, 0, k_window_of_now, false, false},
    {"a later window ran: ours was passed over", 0, 0, -1, false, false},
    {"a later window failed, --retry-failed: ours was still passed over", 0, 3, -1, true, false},
    {"two windows later ran: passed over", 0, 0, -2, false, false},
    {"a record of a window after now's: the window of now is passed over", 1, 0, k_window_of_now,
     false, false},
};

} // namespace simba::test
