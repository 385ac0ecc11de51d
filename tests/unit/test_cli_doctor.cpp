// simba doctor's shared judgements and its exit codes (issue 32 §2): the
// clock offset against the lease margin, a quarantine and its end.
// tests/e2e/test_doctor*.sh run the command for real.
#include "cli/doctor_checks.hpp"
#include "cli/doctor_view.hpp"

#include <doctest/doctest.h>

#include <sstream>

using namespace simba;
using namespace simba::cli;
using Verdict = backend::Finding::Verdict;

namespace {

backend::DiagnoseOptions lease(int64_t ttl, int64_t transition) {
  backend::DiagnoseOptions o;
  o.ttl_ms = ttl;
  o.transition_ms = transition;
  return o;
}

// The backend's now `offset` from ours, read in a round trip of `rtt`.
backend::Finding clock(int64_t offset, int64_t rtt, int64_t ttl = 10000, int64_t transition = 2000) {
  ClockReading r{1000000, 1000000 + rtt, 1000000 + rtt / 2 + offset};
  return judge_clock(r, lease(ttl, transition));
}

} // namespace

TEST_CASE("doctor: the clock margin is DESIGN §4's, less the kill latency") {
  CHECK(clock_margin_ms(10000, 2000) == 122);
  CHECK(clock_margin_ms(1000, 0) == 12);
}

TEST_CASE("doctor: a clock offset within half the margin is ok, up to it warns, past it fails") {
  CHECK(clock(0, 2).verdict == Verdict::ok);
  CHECK(clock(-50, 2).verdict == Verdict::ok);
  backend::Finding warn = clock(100, 2);
  CHECK(warn.verdict == Verdict::warn);
  CHECK(warn.detail.find("+100ms") != std::string::npos);
  CHECK(warn.detail.find("is 122ms") != std::string::npos);
  CHECK(!warn.fix.empty());
  backend::Finding fail = clock(-5000, 2);
  CHECK(fail.verdict == Verdict::fail);
  CHECK(fail.detail.find("-5000ms") != std::string::npos);
  // A longer lease has a larger margin: the same offset is ok.
  CHECK(clock(100, 2, 60000, 10000).verdict == Verdict::ok);
}

TEST_CASE("doctor: the round trip bounds the offset: a slow reply cannot prove a fail") {
  // 150 ms off, read in 100 ms: between 100 and 200 ms, maybe within 122.
  CHECK(clock(150, 100).verdict == Verdict::warn);
  // 40 ms off but read in 200 ms: it may be 140: warn, never ok.
  CHECK(clock(40, 200).verdict == Verdict::warn);
}

TEST_CASE("doctor: a quarantine in force warns with its end; none is ok") {
  core::Observed o;
  o.now = 1764577000000;
  CHECK(judge_quarantine(o).verdict == Verdict::ok);
  o.lease.quarantine = true;
  o.lease.transition_at = o.now + 13000;
  o.lease.ttl_at = o.now;
  backend::Finding f = judge_quarantine(o);
  CHECK(f.verdict == Verdict::warn);
  CHECK(f.detail.find("until about 2025-12-01T08:16:53Z (in 13s)") != std::string::npos);
  // A revoked lease that is not a quarantine is no finding of this check.
  o.lease.quarantine = false;
  CHECK(judge_quarantine(o).verdict == Verdict::ok);
}

TEST_CASE("doctor: exit 0 all ok, 1 any warn, 69 any fail; text and JSON") {
  backend::Diagnosis found{{"connection", Verdict::ok, "x opened", ""}};
  CHECK(doctor_exit_code(found) == 0);
  found.push_back({"clock", Verdict::warn, "off", "sync"});
  CHECK(doctor_exit_code(found) == 1);
  found.push_back({"filesystem", Verdict::fail, "nfs", "local"});
  CHECK(doctor_exit_code(found) == 69);
  std::ostringstream text;
  print_findings_text(text, found);
  CHECK(text.str() == "ok    connection  x opened\n"
                      "warn  clock       off \u2014 fix: sync\n"
                      "fail  filesystem  nfs \u2014 fix: local\n");
  std::ostringstream json;
  print_findings_json(json, "sqlite:///x", found);
  CHECK(json.str().find("\"verdict\":\"fail\"}") != std::string::npos);
  CHECK(json.str().find("{\"check\":\"connection\",\"detail\":\"x opened\",\"fix\":null,"
                        "\"verdict\":\"ok\"}") != std::string::npos);
}
