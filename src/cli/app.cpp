#include "cli/app.hpp"

#include "cli/run.hpp"
#include "cli/status.hpp"
#include "core/error.hpp"

#include <unistd.h>

#include <cstring>
#include <iostream>

namespace simba::cli {

namespace {

void print_error(const std::string& message) {
  std::string line = "simba: error: " + message;
  // one line, whatever the message holds
  for (char& c : line)
    if (c == '\n') c = ' ';
  line += '\n';
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

} // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is CMD, untouched by option parsing.
  std::vector<std::string> cmd;
  bool has_separator = false;
  int parse_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      has_separator = true;
      parse_argc = i;
      cmd.assign(argv + i + 1, argv + argc);
      break;
    }
  }

  CLI::App app("simba: shell-level locking and leadership", "simba");
  app.set_version_flag("--version", std::string("simba ") + SIMBA_VERSION + " (backends: sqlite)");
  app.require_subcommand(1);
  RunOptions run;
  CLI::App* run_cmd = add_run_command(app, run);
  LeadOptions lead;
  CLI::App* lead_cmd = add_lead_command(app, lead);
  ScheduleOptions schedule;
  CLI::App* schedule_cmd = add_schedule_command(app, schedule);
  StatusOptions status;
  CLI::App* status_cmd = add_status_command(app, status);
  ReleaseOptions release;
  CLI::App* release_cmd = add_release_command(app, release);

  try {
    try {
      app.parse(parse_argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      throw UsageError(e.what());
    }
    if (has_separator && !run_cmd->parsed() && !lead_cmd->parsed() && !schedule_cmd->parsed()) {
      throw UsageError("'--' is only for commands that run CMD");
    }
    if (run_cmd->parsed()) return run_command(run, cmd);
    if (lead_cmd->parsed()) return lead_command(lead, cmd);
    if (schedule_cmd->parsed()) return schedule_command(schedule, cmd);
    if (status_cmd->parsed()) return status_command(status);
    if (release_cmd->parsed()) return release_command(release);
    throw InternalError("no subcommand");
  } catch (const Error& e) {
    print_error(e.what());
    return e.code();
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    return exit_code::k_internal;
  }
}

} // namespace simba::cli
