#include "cli/app.hpp"

#include "cli/doctor.hpp"
#include "cli/history.hpp"
#include "cli/lease.hpp"
#include "cli/run.hpp"
#include "cli/status.hpp"
#include "core/error.hpp"
#include "process/signals.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstring>
#include <iostream>

namespace simba::cli {

namespace {

// One line, whatever the message holds: a newline becomes a space, other
// control characters \xNN (a value given on the command line is echoed in
// its error: no escape sequence reaches the terminal raw), and a message
// past 4 KiB (a 100 KB --backend) keeps its start and its end.
void print_error(const std::string& message) {
  constexpr size_t k_keep = 2048;
  std::string text = message;
  if (text.size() > 2 * k_keep)
    text = text.substr(0, k_keep) + " [... " + std::to_string(text.size() - 2 * k_keep) +
           " bytes ...] " + text.substr(text.size() - k_keep);
  std::string line = "simba: error: ";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      const char* hex = "0123456789abcdef";
      line += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    } else {
      line += c;
    }
  }
  line += '\n';
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

const char* subcommand_description(const std::string& name) {
  if (name == "run") return k_run_description;
  if (name == "lead") return k_lead_description;
  if (name == "schedule") return k_schedule_description;
  if (name == "status") return k_status_description;
  if (name == "release") return k_release_description;
  if (name == "acquire") return k_acquire_description;
  if (name == "renew") return k_renew_description;
  if (name == "history") return k_history_description;
  if (name == "doctor") return k_doctor_description;
  return "";
}

bool is_subcommand(const std::string& name) { return *subcommand_description(name) != '\0'; }

// Help shows one usage line: a subcommand's own (its footer, "Usage: ..."),
// which says where CMD goes, instead of CLI11's generic "[OPTIONS]" line.
class UsageFormatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (has_own_usage(app)) return app->get_footer() + "\n";
    return CLI::Formatter::make_usage(app, std::move(name));
  }
  std::string make_footer(const CLI::App* app) const override {
    return has_own_usage(app) ? "" : CLI::Formatter::make_footer(app);
  }

private:
  static bool has_own_usage(const CLI::App* app) {
    return app->get_footer().rfind("Usage: ", 0) == 0;
  }
};

// Everything of the command is cleaned up by now (backend closed, CMD and
// the watchdog gone): end by the signal if the outcome says so.
int end(const Outcome& outcome) {
  if (outcome.signal) process::end_by_signal(outcome.signal);
  return outcome.code;
}

// The commands that run CMD take everything after "--" as CMD and let
// CLI11 keep what it did not recognise (allow_extras): a word before "--"
// is most likely CMD in the wrong place, a dash word an unknown option.
void refuse_extras(const CLI::App& cmd) {
  std::vector<std::string> extra = cmd.remaining();
  if (extra.empty()) return;
  const std::string& first = extra.front();
  std::string help = "see simba " + cmd.get_name() + " --help";
  if (first.size() > 1 && first[0] == '-')
    throw UsageError("unknown option '" + first + "' (" + help + ")");
  throw UsageError("unexpected argument '" + first + "': the command to run goes after '--' (" +
                   cmd.get_footer().substr(7) + ")");
}

// The backends compiled in: the build defines SIMBA_HAVE_REDIS when it links
// hiredis. PostgreSQL, etcd and MySQL are always in (simba's own clients).
#ifdef SIMBA_HAVE_REDIS
constexpr const char* k_backends = "sqlite, redis, postgres, etcd, mysql";
#else
constexpr const char* k_backends = "sqlite, postgres, etcd, mysql";
#endif

// Everything after the first "--" is CMD, untouched by option parsing;
// options end where it begins (`parse_argc`).
struct CommandLine {
  int parse_argc = 0;
  bool has_separator = false;
  std::vector<std::string> cmd;
  std::string wanted; // the first word that is not an option: the subcommand
};

CommandLine split_command_line(int argc, char** argv) {
  CommandLine c;
  c.parse_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      c.has_separator = true;
      c.parse_argc = i;
      c.cmd.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  for (int i = 1; i < c.parse_argc; ++i) {
    if (argv[i][0] != '-') {
      c.wanted = argv[i];
      break;
    }
  }
  return c;
}

// Every subcommand's options, and the CLI11 command that fills them.
struct Subcommands {
  RunOptions run;
  LeadOptions lead;
  ScheduleOptions schedule;
  StatusOptions status;
  ReleaseOptions release;
  AcquireOptions acquire;
  RenewOptions renew;
  HistoryOptions history;
  DoctorOptions doctor;
  CLI::App* run_cmd = nullptr;
  CLI::App* lead_cmd = nullptr;
  CLI::App* schedule_cmd = nullptr;
  CLI::App* status_cmd = nullptr;
  CLI::App* release_cmd = nullptr;
  CLI::App* acquire_cmd = nullptr;
  CLI::App* renew_cmd = nullptr;
  CLI::App* history_cmd = nullptr;
  CLI::App* doctor_cmd = nullptr;

  // Only the subcommand named on the command line gets its options: building
  // all of them costs a fifth of a millisecond on every start. The others
  // are listed (for help and for CLI11's errors) with their descriptions only.
  void add_to(CLI::App& app, const std::string& wanted) {
    auto build = [&](const char* name, auto add, auto& options) -> CLI::App* {
      if (!wanted.empty() && wanted != name && is_subcommand(wanted)) {
        return app.add_subcommand(name, subcommand_description(name));
      }
      return add(app, options);
    };
    run_cmd = build("run", add_run_command, run);
    lead_cmd = build("lead", add_lead_command, lead);
    schedule_cmd = build("schedule", add_schedule_command, schedule);
    status_cmd = build("status", add_status_command, status);
    release_cmd = build("release", add_release_command, release);
    acquire_cmd = build("acquire", add_acquire_command, acquire);
    renew_cmd = build("renew", add_renew_command, renew);
    history_cmd = build("history", add_history_command, history);
    doctor_cmd = build("doctor", add_doctor_command, doctor);
  }

  // The parsed subcommand's exit code.
  int run_parsed(const CommandLine& line) {
    if (line.has_separator && !run_cmd->parsed() && !lead_cmd->parsed() &&
        !schedule_cmd->parsed()) {
      throw UsageError("'--' is only for commands that run CMD");
    }
    for (CLI::App* c : {run_cmd, lead_cmd, schedule_cmd})
      if (c->parsed()) refuse_extras(*c);
    if (run_cmd->parsed() && run_cmd->count("--lease") > 0) refuse_with_lease(*run_cmd, run.lease);
    if (run_cmd->parsed()) return end(run_command(run, line.cmd));
    if (lead_cmd->parsed()) return end(lead_command(lead, line.cmd));
    if (schedule_cmd->parsed()) return end(schedule_command(schedule, line.cmd));
    if (status_cmd->parsed()) return status_command(status);
    if (release_cmd->parsed()) {
      release.lease_given = release_cmd->count("--lease") > 0;
      return release_command(release);
    }
    if (acquire_cmd->parsed()) return end(acquire_command(acquire));
    if (renew_cmd->parsed()) return renew_command(renew);
    if (history_cmd->parsed()) return history_command(history);
    if (doctor_cmd->parsed()) return doctor_command(doctor);
    throw InternalError("no subcommand");
  }
};

} // namespace

int main(int argc, char** argv) {
  CommandLine line = split_command_line(argc, argv);
  CLI::App app("simba: shell-level locking and leadership", "simba");
  app.set_version_flag("--version",
                       std::string("simba ") + SIMBA_VERSION + " (backends: " + k_backends + ")");
  app.require_subcommand(1);
  app.formatter(std::make_shared<UsageFormatter>()); // inherited by the subcommands
  Subcommands subcommands;
  subcommands.add_to(app, line.wanted);

  try {
    if (!line.wanted.empty() && !is_subcommand(line.wanted)) {
      throw UsageError("unknown command '" + line.wanted +
                       "' (commands: run, lead, schedule, status, release, acquire, renew, "
                       "history, doctor)");
    }
    try {
      app.parse(line.parse_argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      throw UsageError(e.what());
    }
    return subcommands.run_parsed(line);
  } catch (const Error& e) {
    print_error(e.what());
    return e.code();
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    return exit_code::k_internal;
  }
}

} // namespace simba::cli
