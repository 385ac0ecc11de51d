#include "cli/run.hpp"

#include "cli/driver.hpp"
#include "cli/lease.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/lease_handle.hpp"
#include "core/names.hpp"
#include "core/slots.hpp"
#include "core/timing_limits.hpp"
#include "process/child.hpp"
#include "process/signals.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <sstream>

namespace simba::cli {

namespace {

void add_supervise_options(CLI::App& cmd, SuperviseOptions& o) {
  cmd.allow_extras(); // cli/app.cpp: refuse_extras() says what was wrong
  add_contend_options(cmd, o.common);
  cmd.add_option("--kill-signal", o.kill_signal,
                 "Signal that stops CMD (default TERM); also sent, with SIGKILL after "
                 "--kill-after, when simba gets a second INT or TERM while CMD runs");
  cmd.add_option("--kill-after", o.kill_after,
                 "SIGKILL this long after the kill signal (default: half the transition)");
  // Checked in supervise(), not by a CLI11 validator: validators cost start-up time.
  cmd.add_option("--log-format", o.log_format,
                 "text (default) or json: one JSON object per line on stderr");
}

} // namespace

core::ContenderConfig supervise_config(const SuperviseOptions& o, const char* command) {
  core::ContenderConfig config = contender_config(o.common);
  if (config.transition_ms <= 0) {
    throw UsageError(std::string("--transition must be longer than 0 for ") + command +
                     ": CMD is stopped within it");
  }
  config.kill_after_ms = o.kill_after.empty() ? config.transition_ms / 2
                                              : core::parse_duration(o.kill_after, "--kill-after");
  if (config.kill_after_ms >= config.transition_ms) {
    throw UsageError("--kill-after (" + core::format_duration(config.kill_after_ms) +
                     ") must be shorter than --transition (" +
                     core::format_duration(config.transition_ms) + ")");
  }
  core::check_timing_room(config); // no room to renew: refuse rather than spin
  config.kill_signal = process::parse_signal(o.kill_signal);
  return config;
}

namespace {

const char* mode_name(core::ContenderConfig::Mode m) {
  using Mode = core::ContenderConfig::Mode;
  switch (m) {
  case Mode::lead: return "lead";
  case Mode::schedule: return "schedule";
  case Mode::acquire: return "acquire";
  case Mode::step: return "run --lease";
  case Mode::run: break;
  }
  return "run";
}

// Validates CMD, opens the backend, refuses re-entry, and drives the core.
// `handle`: run --lease, the lease's backend must be the one opened.
Outcome supervise(core::ContenderConfig config, const SuperviseOptions& o,
                  const std::vector<std::string>& cmd, const core::LeaseHandle* handle = nullptr) {
  // Started first, while the backend is still to be opened: its start is
  // then off the path from "acquired" to "CMD runs" (a waiter's hand-over
  // above all); arming it when CMD starts is a store and a timerfd_settime,
  // no wake-up (process/watchdog.cpp). Kept for every CMD of a lead or
  // schedule.
  process::Watchdog watchdog;
  watchdog.start();
  using Mode = core::ContenderConfig::Mode;
  bool long_running = config.mode == Mode::lead || config.mode == Mode::schedule;
  Log log{o.common.quiet, o.common.verbose, long_running, parse_log_format_json(o.log_format)};
  log.redis = is_redis_uri(o.common.backend);
  Command command;
  command.path = process::resolve_command(cmd[0]); // 126/127 before any lock is taken
  command.argv = cmd;
  auto backend = open_backend(o.common);
  if (config.slots > 1 && !backend->has_slots())
    throw UsageError("--slots above 1 is not supported by " + backend->describe());
  if (handle) check_lease_backend(*handle, *backend);
  config.call_timeout_ms = backend->call_timeout_ms(); // the URI's timeout=
  backend->set_holder(this_holder(mode_name(config.mode), cmd[0], config));
  command.extra_env.push_back(std::string(k_held_env) + "=" +
                              check_reentry(config.mutex, backend->describe()));
  core::Contender contender(config, core::ContendPeriod(config.contender_id, random_uniform()));
  // lead under systemd's Type=notify: simba speaks for the service.
  std::optional<ServiceNotifier> notifier;
  if (config.mode == Mode::lead)
    if (SdNotify n = SdNotify::from_environment(); n.enabled()) notifier.emplace(std::move(n), config);
  Outcome outcome = drive(contender, config, *backend, command, log, watchdog, true,
                          notifier ? &*notifier : nullptr);
  backend->leave(); // simba exits next
  return outcome;
}

void require_command(const std::vector<std::string>& cmd) {
  if (cmd.empty()) throw UsageError("nothing to run: give the command after '--'");
}

// --once-per, --offset, --retry-failed; nullopt without --once-per.
std::optional<core::OncePer> once_per_config(const RunOptions& o) {
  if (o.once_per.empty()) {
    if (!o.offset.empty()) throw UsageError("--offset needs --once-per");
    if (o.retry_failed) throw UsageError("--retry-failed needs --once-per");
    return std::nullopt;
  }
  if (!o.min_hold.empty())
    throw UsageError("--once-per and --min-hold contradict each other: --once-per needs no hold");
  core::OncePer once;
  once.period_ms = core::parse_duration(o.once_per, "--once-per");
  if (once.period_ms < 1000) throw UsageError("--once-per must be at least 1s");
  if (!o.offset.empty()) once.offset_ms = core::parse_duration(o.offset, "--offset");
  if (once.offset_ms < 0 || once.offset_ms >= once.period_ms)
    throw UsageError("--offset must be shorter than --once-per");
  once.retry_failed = o.retry_failed;
  return once;
}

// lead --max-restarts N: a whole number, and only with a --restart that restarts.
std::optional<int> max_restarts_config(const std::string& text, core::ContenderConfig::Restart r) {
  if (text.empty()) return std::nullopt;
  bool digits = text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits)
    throw UsageError("--max-restarts must be a whole number, 0 or more, not '" + text + "'");
  if (r == core::ContenderConfig::Restart::never)
    throw UsageError("--max-restarts needs --restart on-failure or always");
  return std::stoi(text);
}

// run --lease H: a step under a lease simba acquire took. The handle
// decides the mutex, the owner id, the token, the ttl and the transition.
Outcome step_command(const RunOptions& o, const std::vector<std::string>& cmd) {
  core::LeaseHandle h = core::decode_lease_handle(o.lease);
  SuperviseOptions s = o.supervise;
  if (!s.common.mutex.empty() && s.common.mutex != h.mutex)
    throw UsageError("--mutex " + s.common.mutex + " is not the mutex of --lease (" + h.mutex +
                     ")");
  s.common.mutex = h.mutex;
  s.common.ttl = std::to_string(h.ttl_ms) + "ms";
  s.common.transition = std::to_string(h.transition_ms) + "ms";
  core::ContenderConfig config = supervise_config(s, "run --lease");
  config.mode = core::ContenderConfig::Mode::step;
  config.contender_id = h.owner_id;
  config.label = std::string(core::label_of(h.owner_id));
  config.lease_token = h.token;
  config.slots = h.slots;
  config.lease_slot = h.slot;
  return supervise(config, s, cmd, &h);
}

} // namespace

void add_slots_option(CLI::App& cmd, int& slots, const char* help) {
  cmd.add_option("--slots", slots, help)->transform(decimal_number());
}

int slots_config(int slots) {
  if (slots < 1 || slots > core::k_max_slots)
    throw UsageError("--slots must be 1 to " + std::to_string(core::k_max_slots) + ", not " +
                     std::to_string(slots));
  return slots;
}

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* cmd = app.add_subcommand("run", k_run_description);
  cmd->footer("Usage: simba run --mutex NAME [options] -- CMD [ARGS...]");
  add_supervise_options(*cmd, o.supervise);
  add_slots_option(*cmd, o.supervise.slots,
                   "At most N CMDs of the mutex at once (a semaphore; default 1); every "
                   "contender of the mutex must give the same N");
  cmd->add_option("--timeout", o.timeout,
                  "Give up waiting after this long (exit 75; 69 if the backend is failing or in "
                  "quarantine then)");
  cmd->add_flag("--no-wait", o.no_wait, "Do not wait: exit 75 if the mutex is held (69 in a quarantine)");
  cmd->add_option("--conflict-exit-code", o.conflict_exit_code,
                  "Exit code when not acquired (default 75)")
      ->transform(decimal_number());
  cmd->add_option("--min-hold", o.min_hold,
                  "Keep the lease until acquired_at + D after CMD exits (cron dedup)");
  cmd->add_option("--once-per", o.once_per,
                  "Run CMD at most once per window of D on the backend's clock, across hosts "
                  "(cron dedup); later contenders in the window exit 75");
  cmd->add_option("--offset", o.offset,
                  "With --once-per: windows start D after the multiples (default 0)");
  cmd->add_flag("--retry-failed", o.retry_failed,
                "With --once-per: run again in a window whose run failed (non-zero exit or "
                "lease lost)");
  cmd->add_option("--lease", o.lease,
                  "Run CMD as a step under the lease of `simba acquire` (its handle, "
                  "$SIMBA_LEASE): 76 if it is gone; the lease is kept, not released, at the end");
  return cmd;
}

CLI::App* add_lead_command(CLI::App& app, LeadOptions& o) {
  CLI::App* cmd = app.add_subcommand("lead", k_lead_description);
  cmd->footer("Usage: simba lead --mutex NAME [options] -- CMD [ARGS...]");
  add_supervise_options(*cmd, o.supervise);
  add_slots_option(*cmd, o.supervise.slots,
                   "At most N leaders at once (default 1); every instance must give the same N");
  cmd->add_option("--restart", o.restart,
                  "What CMD's exit does while leader: never (release and exit with its status), "
                  "on-failure, always (default never)");
  cmd->add_option("--restart-delay", o.restart_delay, "Wait before restarting CMD (default 1s)");
  cmd->add_option("--max-restarts", o.max_restarts,
                  "With --restart: after N failed runs in a row (across hand-overs; an exit 0 "
                  "starts the count again), the next failure releases and exits with CMD's "
                  "status (default: no limit)");
  return cmd;
}

CLI::App* add_schedule_command(CLI::App& app, ScheduleOptions& o) {
  CLI::App* cmd = app.add_subcommand("schedule", k_schedule_description);
  cmd->footer("Usage: simba schedule --mutex NAME --every D [options] -- CMD [ARGS...]");
  add_supervise_options(*cmd, o.supervise);
  cmd->add_option("--every", o.every, "Period of the runs (required)");
  add_slots_option(*cmd, o.supervise.slots,
                   "Only 1: each tick runs once, by the one leader (lead --slots N for N active)");
  cmd->add_option("--strategy", o.strategy,
                  "fixed-rate (ticks every D; a tick during a run is skipped) or fixed-delay "
                  "(D between the end of a run and the next start); default fixed-rate");
  cmd->add_option("--initial-delay", o.initial_delay,
                  "Wait this long after becoming leader before the first run (default 0)");
  cmd->add_option("--max-runs", o.max_runs, "Release and exit after N runs (default: forever)")
      ->transform(decimal_number());
  cmd->add_flag("--align", o.align,
                "fixed-rate: ticks on multiples of --every on the backend's clock (--every 5m: "
                ":00, :05, ...), whichever host leads");
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

void refuse_with_lease(const CLI::App& run_cmd, const std::string& lease) {
  // An empty $SIMBA_LEASE (acquire failed, or the env file was not read)
  // must not turn the step into a plain run.
  if (lease.empty()) throw UsageError("--lease is empty (did simba acquire fail?)");
  for (const char* name :
       {"--ttl", "--transition", "--contender-id", "--timeout", "--no-wait", "--conflict-exit-code",
        "--min-hold", "--once-per", "--offset", "--retry-failed", "--slots"}) {
    if (run_cmd.count(name) > 0)
      throw UsageError(std::string(name) +
                       " does not go with --lease: the lease is the one simba acquire took");
  }
}

Outcome run_command(const RunOptions& o, const std::vector<std::string>& cmd) {
  require_command(cmd);
  if (!o.lease.empty()) return step_command(o, cmd);
  core::ContenderConfig config = supervise_config(o.supervise, "run");
  apply_wait_options(config, o.no_wait, o.timeout);
  if (!o.min_hold.empty()) config.min_hold_ms = core::parse_duration(o.min_hold, "--min-hold");
  // Range-checked here rather than by a CLI11 validator: building one
  // formats its description through an ostringstream on every start.
  if (o.conflict_exit_code < 0 || o.conflict_exit_code > 255)
    throw UsageError("--conflict-exit-code must be 0 to 255, not " +
                     std::to_string(o.conflict_exit_code));
  config.conflict_exit_code = o.conflict_exit_code;
  config.once = once_per_config(o);
  config.slots = slots_config(o.supervise.slots);
  if (config.slots > 1 && config.once) throw UsageError("--once-per does not go with --slots");
  return supervise(config, o.supervise, cmd);
}

Outcome lead_command(const LeadOptions& o, const std::vector<std::string>& cmd) {
  require_command(cmd);
  core::ContenderConfig config = supervise_config(o.supervise, "lead");
  config.mode = core::ContenderConfig::Mode::lead;
  using R = core::ContenderConfig::Restart;
  if (o.restart == "never") {
    config.restart = R::never;
  } else if (o.restart == "on-failure") {
    config.restart = R::on_failure;
  } else if (o.restart == "always") {
    config.restart = R::always;
  } else {
    throw UsageError("--restart must be never, on-failure or always, not '" + o.restart + "'");
  }
  config.restart_delay_ms = core::parse_duration(o.restart_delay, "--restart-delay");
  config.max_restarts = max_restarts_config(o.max_restarts, config.restart);
  config.slots = slots_config(o.supervise.slots);
  return supervise(config, o.supervise, cmd);
}

Outcome schedule_command(const ScheduleOptions& o, const std::vector<std::string>& cmd) {
  require_command(cmd);
  core::ContenderConfig config = supervise_config(o.supervise, "schedule");
  config.mode = core::ContenderConfig::Mode::schedule;
  // N leaders would run every tick N times, and share one phase record.
  if (slots_config(o.supervise.slots) > 1)
    throw UsageError("schedule does not take --slots above 1: each tick runs once, by the one "
                     "leader (lead --slots N keeps N instances active)");
  if (o.every.empty()) throw UsageError("--every is required");
  config.every_ms = core::parse_duration(o.every, "--every");
  if (config.every_ms <= 0) throw UsageError("--every must be longer than 0");
  if (o.strategy == "fixed-rate") {
    config.fixed_rate = true;
  } else if (o.strategy == "fixed-delay") {
    config.fixed_rate = false;
  } else {
    throw UsageError("--strategy must be fixed-rate or fixed-delay, not '" + o.strategy + "'");
  }
  config.initial_delay_ms = core::parse_duration(o.initial_delay, "--initial-delay");
  config.align = o.align;
  if (o.align && !config.fixed_rate)
    throw UsageError("--align needs --strategy fixed-rate: fixed-delay has no ticks to align");
  if (o.align && config.initial_delay_ms > 0)
    throw UsageError("--align and --initial-delay exclude each other: the ticks decide");
  if (o.max_runs < 0)
    throw UsageError("--max-runs must be 0 or more, not " + std::to_string(o.max_runs));
  if (o.max_runs > 0) config.max_runs = o.max_runs;
  return supervise(config, o.supervise, cmd);
}

} // namespace simba::cli
