#pragma once
#include "cli/options.hpp"

namespace simba::cli {

struct RunOptions {
  CommonOptions common;
  std::string timeout;
  bool no_wait = false;
  int conflict_exit_code = 75;
  std::string min_hold;
  std::string kill_signal = "TERM";
  std::string kill_after;
};

CLI::App* add_run_command(CLI::App& app, RunOptions& o);
// `cmd`: everything after "--".
int run_command(const RunOptions& o, const std::vector<std::string>& cmd);

// The environment variable through which a simba tells the simbas it starts
// which mutexes it holds: lines of "<mutex> <backend>". Re-entry is refused.
constexpr const char* k_held_env = "SIMBA_HELD";
// Throws UsageError if an ancestor simba holds `mutex` on `backend_id`;
// returns the SIMBA_HELD value to pass on.
std::string check_reentry(const std::string& mutex, const std::string& backend_id);

} // namespace simba::cli
