#pragma once
// The one poll loop (DESIGN §8): executes the contend state machine's actions
// with real I/O — the backend, CMD, the watchdog, signals — and feeds it the
// events: replies, timers, release notifications, CMD's exit, signals.
#include "backend/backend.hpp"
#include "cli/command.hpp"
#include "cli/log.hpp"
#include "cli/sd_notify.hpp"
#include "core/contender.hpp"
#include "process/watchdog.hpp"

#include <optional>
#include <string>
#include <vector>

namespace simba::cli {

// How simba ends: exit with `code`, or, when `signal` is not 0, by that
// signal (after every clean-up; see Contender::finish).
struct Outcome {
  int code = 0;
  int signal = 0;
  std::optional<core::action::Leased> leased; // acquire: the lease it keeps
};

// Runs `contender` to completion and returns how simba ends. The caller
// starts `watchdog` (Watchdog::start: before it opens the backend, so that
// every error path after it ends it by the Watchdog's destructor); one that
// is not running is started when a CMD is (Watchdog::set_deadline).
// `exits_after`: simba exits once it returns (not a test in its own
// process): USR1 and USR2 then stay blocked (process::SignalChannel).
// `notifier`: lead under systemd's Type=notify (sd_notify.hpp), else null.
Outcome drive(core::Contender& contender, const core::ContenderConfig& config,
              backend::Backend& backend, const Command& command, const Log& log,
              process::Watchdog& watchdog, bool exits_after = false,
              ServiceNotifier* notifier = nullptr);

} // namespace simba::cli
