#include "cli/run.hpp"

#include "cli/driver.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "process/child.hpp"
#include "process/signals.hpp"

#include <cstdlib>
#include <sstream>

namespace simba::cli {

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* cmd = app.add_subcommand("run", "Acquire the mutex, run CMD while owning it, release");
  cmd->footer("Usage: simba run --mutex NAME [options] -- CMD [ARGS...]");
  add_contend_options(*cmd, o.common);
  cmd->add_option("--timeout", o.timeout, "Give up waiting after this long (exit 75)");
  cmd->add_flag("--no-wait", o.no_wait, "Do not wait: exit 75 if the mutex is held");
  cmd->add_option("--conflict-exit-code", o.conflict_exit_code,
                  "Exit code when not acquired (default 75)")
    ->check(CLI::Range(0, 255));
  cmd->add_option("--min-hold", o.min_hold,
                  "Keep the lease until acquired_at + D after CMD exits (cron dedup)");
  cmd->add_option("--kill-signal", o.kill_signal, "Signal that stops CMD (default TERM)");
  cmd->add_option("--kill-after", o.kill_after,
                  "SIGKILL this long after the kill signal (default: half the transition)");
  return cmd;
}

std::string check_reentry(const std::string& mutex, const std::string& backend_id) {
  std::string entry = mutex + " " + backend_id;
  const char* held = std::getenv(k_held_env);
  std::string value = held ? held : "";
  std::istringstream lines(value);
  for (std::string line; std::getline(lines, line);) {
    if (line == entry) {
      throw UsageError("mutex '" + mutex +
                       "' is already held by an enclosing simba (simba is not reentrant)");
    }
  }
  return value.empty() ? entry : value + "\n" + entry;
}

int run_command(const RunOptions& o, const std::vector<std::string>& cmd) {
  if (cmd.empty()) throw UsageError("nothing to run: give the command after '--'");
  core::ContenderConfig config = contender_config(o.common);
  if (config.transition_ms <= 0) {
    throw UsageError("--transition must be longer than 0 for run: CMD is stopped within it");
  }
  config.kill_after_ms = o.kill_after.empty() ? config.transition_ms / 2
                                              : core::parse_duration(o.kill_after, "--kill-after");
  if (config.kill_after_ms >= config.transition_ms) {
    throw UsageError("--kill-after (" + core::format_duration(config.kill_after_ms) +
                     ") must be shorter than --transition (" +
                     core::format_duration(config.transition_ms) + ")");
  }
  config.kill_signal = process::parse_signal(o.kill_signal);
  config.no_wait = o.no_wait;
  if (!o.timeout.empty()) config.wait_timeout_ms = core::parse_duration(o.timeout, "--timeout");
  if (!o.min_hold.empty()) config.min_hold_ms = core::parse_duration(o.min_hold, "--min-hold");
  config.conflict_exit_code = o.conflict_exit_code;

  Command command;
  command.path = process::resolve_command(cmd[0]); // 126/127 before any lock is taken
  command.argv = cmd;

  Log log{o.common.quiet, o.common.verbose};
  auto backend = open_backend(o.common);
  command.extra_env.push_back(std::string(k_held_env) + "=" +
                              check_reentry(config.mutex, backend->describe()));
  core::Contender contender(config, core::ContendPeriod(config.contender_id, random_uniform()));
  return drive(contender, config, *backend, command, log);
}

} // namespace simba::cli
