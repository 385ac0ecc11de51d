#pragma once
// The commands that run CMD under the mutex: run, lead, schedule. They share
// the contend options, the kill sequence, and one way to drive the core.
#include "cli/driver.hpp"
#include "cli/log.hpp"
#include "cli/options.hpp"

namespace simba::cli {

struct SuperviseOptions {
  CommonOptions common;
  std::string kill_signal = "TERM";
  std::string kill_after;
  std::string log_format = "text";
  int slots = 1; // run, lead: --slots N (core/slots.hpp)
};

struct RunOptions {
  SuperviseOptions supervise;
  std::string timeout;
  bool no_wait = false;
  int conflict_exit_code = 75;
  std::string min_hold;
  std::string once_per; // --once-per D
  std::string offset;   // --offset D (with --once-per)
  bool retry_failed = false;
  std::string lease; // --lease H: a step under the lease of simba acquire (cli/lease.cpp)
};

struct LeadOptions {
  SuperviseOptions supervise;
  std::string restart = "never";
  std::string restart_delay = "1s";
  std::string max_restarts; // empty: no limit
};

struct ScheduleOptions {
  SuperviseOptions supervise;
  std::string every;
  std::string strategy = "fixed-rate";
  std::string initial_delay = "0";
  int max_runs = 0;
  bool align = false;
};

constexpr const char* k_run_description = "Acquire the mutex, run CMD while owning it, release";
constexpr const char* k_lead_description =
    "Contend forever; run CMD while leader, stop it on loss, start it anew when re-elected";
constexpr const char* k_schedule_description =
    "While leader, run CMD every D; never two runs at once";

CLI::App* add_run_command(CLI::App& app, RunOptions& o);
CLI::App* add_lead_command(CLI::App& app, LeadOptions& o);
CLI::App* add_schedule_command(CLI::App& app, ScheduleOptions& o);
// `cmd`: everything after "--".
Outcome run_command(const RunOptions& o, const std::vector<std::string>& cmd);
Outcome lead_command(const LeadOptions& o, const std::vector<std::string>& cmd);
Outcome schedule_command(const ScheduleOptions& o, const std::vector<std::string>& cmd);
// run --lease: an empty handle, and the options of run that the handle
// decides, are refused.
void refuse_with_lease(const CLI::App& run_cmd, const std::string& lease);

// The contend options and the kill sequence, checked (as run, lead and
// schedule check them) into a configuration; `command` names it in errors.
core::ContenderConfig supervise_config(const SuperviseOptions& o, const char* command);

// --slots N (core/slots.hpp): the option, and its value checked (1 to
// k_max_slots, else UsageError).
void add_slots_option(CLI::App& cmd, int& slots, const char* help);
int slots_config(int slots);

// The environment variable through which a simba tells the simbas it starts
// which mutexes it holds: lines of "<mutex> <backend>". Re-entry is refused.
constexpr const char* k_held_env = "SIMBA_HELD";
// Throws UsageError if an ancestor simba holds `mutex` on `backend_id`;
// returns the SIMBA_HELD value to pass on.
std::string check_reentry(const std::string& mutex, const std::string& backend_id);

} // namespace simba::cli
