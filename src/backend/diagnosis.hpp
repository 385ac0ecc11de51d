#pragma once
// simba doctor: what a backend finds when it checks that it is fit for
// simba (docs/commands.md, doctor). Each check is one Finding: ok, warn or
// fail, what was found, and for warn and fail the fix, in words an admin
// can act on. The command (cli/doctor) adds the checks every backend
// shares (connection, clock offset, quarantine) and prints them all.
#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend {

struct Finding {
  enum class Verdict { ok, warn, fail };
  std::string check;  // short and stable, for --json: "persistence", "tls-expiry"
  Verdict verdict = Verdict::ok;
  std::string detail; // what was found, one line
  std::string fix;    // warn and fail: what to do, one line; empty when ok
};

// What the checks may use: the lease settings the user runs with (the
// clock offset and the quarantine are judged against them) and the
// budget of each call.
struct DiagnoseOptions {
  int64_t ttl_ms = 0;
  int64_t transition_ms = 0;
  int64_t timeout_ms = 0;
};

using Diagnosis = std::vector<Finding>;

} // namespace simba::backend
