// simba doctor: the checks every backend shares, judged (doctor_checks.hpp).
#include "cli/doctor_checks.hpp"

#include "core/contend_period.hpp"
#include "core/duration.hpp"

#include <cstdlib>

namespace simba::cli {

using backend::Finding;

namespace {

// "+5003ms", "-12ms", "0ms": an offset keeps its sign.
std::string signed_ms(int64_t ms) { return (ms > 0 ? "+" : "") + std::to_string(ms) + "ms"; }

// "1s" for 0 too (format_duration says nothing for 0).
std::string duration(int64_t ms) { return ms > 0 ? core::format_duration(ms) : "0ms"; }

} // namespace

int64_t clock_margin_ms(int64_t ttl_ms, int64_t transition_ms) {
  return core::safety_margin(ttl_ms, transition_ms) - core::k_kill_latency_ms;
}

Finding judge_clock(const ClockReading& r, const backend::DiagnoseOptions& o) {
  // The backend read its clock between send and receive: this host's
  // clock read it at the midpoint, give or take half the round trip.
  int64_t round_trip = std::max<int64_t>(0, r.received_ms - r.sent_ms);
  int64_t offset = r.backend_now_ms - (r.sent_ms + round_trip / 2);
  int64_t within = (round_trip + 1) / 2;
  int64_t least = std::max<int64_t>(0, std::llabs(offset) - within);
  int64_t most = std::llabs(offset) + within;
  int64_t margin = clock_margin_ms(o.ttl_ms, o.transition_ms);
  Finding f;
  f.check = "clock";
  f.detail = "the backend's clock is " + signed_ms(offset) + " from this host's (within " +
             duration(within) + "); the margin for clocks with --ttl " + duration(o.ttl_ms) +
             " --transition " + duration(o.transition_ms) + " is " + duration(margin);
  const char* fix = "synchronise both clocks with NTP, slewing rather than stepping once the "
                    "backend runs (docs/safety.md, \"Clocks that step\")";
  if (least > margin) {
    f.verdict = Finding::Verdict::fail;
    f.detail += ": a step that corrects it would end running leases early";
    f.fix = fix;
  } else if (most > margin / 2) {
    f.verdict = Finding::Verdict::warn;
    f.detail += ": a step that corrects it would take up to " +
                std::to_string(margin > 0 ? most * 100 / margin : 100) + "% of it";
    f.fix = fix;
  }
  return f;
}

Finding judge_quarantine(const core::Observed& o) {
  Finding f;
  f.check = "quarantine";
  const core::Lease& l = o.lease;
  if (!(l.quarantine && l.revoked_at(o.now))) {
    f.detail = "none in force";
    return f;
  }
  int64_t left = l.transition_at - o.now;
  f.verdict = Finding::Verdict::warn;
  // Whole seconds, rounded up, as the waiters' notice says it.
  int64_t shown = left >= 1000 ? (left + 999) / 1000 * 1000 : left;
  f.detail = "in force until about " + core::format_utc(l.transition_at) + " (in " +
             duration(shown) +
             "): no new lease before then, the backend may have lost a running one (a restart, "
             "a failover, a flush)";
  // A server run that granted nothing yet shows a quarantine of the
  // slack alone, always a second away: the first lease asked starts the
  // real one (lua/common.lua, quarantine_seen).
  if (left <= 1000)
    f.detail += "; if no lease was granted since the server started, the first one asked starts a "
                "quarantine of its ttl + transition + 1s";
  f.fix = "none needed after a restart or failover: it ends by itself; a database you know is new "
          "can be marked so before its first lease (docs/backends/, your backend's quarantine)";
  return f;
}

} // namespace simba::cli
