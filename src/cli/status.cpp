#include "cli/status.hpp"

#include "core/slots.hpp"

#include "cli/lease.hpp"
#include "cli/status_table.hpp"
#include "cli/status_view.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace simba::cli {

namespace {

constexpr int64_t k_admin_timeout_ms = 5000;

// --token: a fencing token as status shows it; 0 when not given.
uint64_t parse_token(const std::string& text) {
  if (text.empty()) return 0;
  bool digits = text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t token = digits ? std::stoull(text) : 0;
  if (token == 0)
    throw UsageError("--token must be a fencing token (a positive number), not '" + text + "'");
  return token;
}

// --once-per: the mutex's done record, for people.
std::string describe_done(const core::DoneRecord& d) {
  std::string outcome =
      d.finished ? "exit " + std::to_string(d.exit_code) + " at " + core::format_utc(d.finished_at)
                 : "not finished (running, or its lease was lost)";
  std::string late = core::lateness(d) > 0 ? " (" + core::late_note(d) + ")" : "";
  return "last --once-per run: window from " + core::format_utc(d.window_start) + ", started " +
         core::format_utc(d.started_at) + late + " on " + core::escape_control(d.host) + " by " +
         core::escape_control(d.label) + ", " + outcome;
}

// The --once-per done records to show: --mutex its own, --all each
// listed mutex's (one read each, all within the admin budget: a mutex
// past it is shown without); none otherwise, so that a plain status stays
// one read.
DoneRecords read_done_records(backend::Backend& b, const backend::Listing& l,
                              const StatusOptions& o) {
  DoneRecords out;
  if (!o.common.mutex.empty()) {
    backend::Reply r = b.done_record(o.common.mutex, k_admin_timeout_ms);
    if (r.ok() && r.done)
      out.emplace(l.mutexes.empty() ? o.common.mutex : l.mutexes.front().mutex, *r.done);
    return out;
  }
  if (!o.all) return out;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_admin_timeout_ms);
  for (const auto& m : l.mutexes) {
    int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                       until - std::chrono::steady_clock::now())
                       .count();
    if (left <= 0) break;
    backend::Reply r = b.done_record(m.mutex, left);
    if (r.ok() && r.done) out.emplace(m.mutex, *r.done);
  }
  return out;
}

} // namespace

CLI::App* add_status_command(CLI::App& app, StatusOptions& o) {
  CLI::App* cmd = app.add_subcommand("status", k_status_description);
  cmd->footer("Usage: simba status [--mutex NAME | --all] [--wide | --json | --format F | -q] "
              "[--backend URI]");
  // Never from SIMBA_MUTEX: inside a job that variable names the job's own
  // lock, and status would quietly show only that one.
  cmd->add_option("--mutex", o.common.mutex, "Only this mutex (shown held or free)");
  cmd->add_flag("--all", o.all,
                "Free mutexes too (by default only those not free), and each one's last "
                "run under once-per");
  add_backend_options(
      *cmd, o.common,
      "Print nothing; exit 0 if a mutex shown is held, 1 if none is (a test for scripts)");
  cmd->add_flag("--json", o.json, "JSON for programs (the same as --format json)");
  cmd->add_flag("--wide", o.wide,
                "The table's fields whole on a terminal too (piped, they always are)");
  cmd->add_option("--format", o.format, "table (default), json, openmetrics or prometheus (text 0.0.4: node_exporter's "
                  "textfile collector)");
  return cmd;
}

namespace {

enum class Format { table, json, openmetrics, prometheus };

Format parse_format(const StatusOptions& o) {
  if (o.json && !o.format.empty() && o.format != "json")
    throw UsageError("--json and --format " + o.format + " contradict each other");
  if (o.json || o.format == "json") return Format::json;
  if (o.format.empty() || o.format == "table") return Format::table;
  if (o.format == "openmetrics") return Format::openmetrics;
  if (o.format == "prometheus") return Format::prometheus;
  throw UsageError("--format must be table, json, openmetrics or prometheus, not '" + o.format +
                   "'");
}

// status lists what is not free (or has waiters), unless --all or --mutex.
void keep_shown(backend::Listing& l, const StatusOptions& o) {
  if (o.all || !o.common.mutex.empty()) return;
  auto idle = [&](const backend::MutexLease& m) {
    return m.lease.free_at(l.now) && m.waiters.empty();
  };
  l.mutexes.erase(std::remove_if(l.mutexes.begin(), l.mutexes.end(), idle), l.mutexes.end());
}

} // namespace

int status_command(const StatusOptions& o) {
  if (!o.common.mutex.empty()) core::validate_mutex_name(o.common.mutex);
  if (o.all && !o.common.mutex.empty()) throw UsageError("--all and --mutex contradict each other");
  Format format = parse_format(o);
  auto backend = open_backend(o.common, backend::Access::inspect);
  backend::Listing listing = backend->inspect(o.common.mutex, k_admin_timeout_ms);
  if (!listing.ok)
    throw UnavailableError("cannot read " + backend->describe() + ": " + listing.error);
  keep_shown(listing, o);
  DoneRecords done = read_done_records(*backend, listing, o);
  bool any_held = false;
  // held: not free to acquire (owned, or revoked and not yet over)
  for (const auto& m : listing.mutexes) any_held = any_held || !m.lease.free_at(listing.now);
  if (o.common.quiet) return any_held ? 0 : 1;
  if (format == Format::json) {
    print_status_json(std::cout, listing, done);
  } else if (format == Format::openmetrics || format == Format::prometheus) {
    print_status_openmetrics(std::cout, listing, format == Format::prometheus);
  } else {
    size_t width = output_width(o.wide);
    print_status_table(std::cout, listing, width);
    // --mutex: one line as before; --all: each, after its mutex's name.
    for (const auto& [name, d] : done)
      print_fitted(std::cout, (o.all ? core::escape_control(name) + ": " : "") + describe_done(d),
                   width);
  }
  return 0;
}

CLI::App* add_release_command(CLI::App& app, ReleaseOptions& o) {
  CLI::App* cmd = app.add_subcommand("release", k_release_description);
  cmd->footer("Usage: simba release --mutex NAME --force [--token N] [--backend URI] | "
              "simba release --lease H [--backend URI]");
  // Never from SIMBA_MUTEX: inside a job a bare `simba release --force`
  // would revoke the job's own lock.
  cmd->add_option("--mutex", o.common.mutex, "The mutex (required)");
  add_backend_options(*cmd, o.common, "Print nothing but errors");
  cmd->add_flag("--force", o.force, "Required: the owner's command is then stopped");
  cmd->add_option("--token", o.token,
                  "Revoke only the lease with this fencing token (as status shows it)");
  cmd->add_option("--lease", o.lease,
                  "End the lease of simba acquire with this handle ($SIMBA_LEASE): exit 0 "
                  "released, 76 it was no longer held (nothing changed)");
  return cmd;
}

// Any mutex status shows can be released, also one whose stored name is not
// valid (written by another tool): its name as the table shows it, escapes
// and all, or as it is.
constexpr size_t k_max_stored_name = 1024;

// release --force of a mutex with slots (core/slots.hpp): each slot's
// lease is revoked (with --token, only the one with that token), as a
// mutex's is; the marker follows the slots. One line per slot revoked.
int release_slots(backend::Backend& backend, const std::string& mutex, int slots, uint64_t token,
                  bool quiet) {
  int revoked = 0;
  for (int k = 0; k < slots; ++k) {
    backend::Reply r = backend.force_release(core::slot_row(mutex, k), token, k_admin_timeout_ms);
    if (!r.ok())
      throw UnavailableError("cannot release " + core::escape_control(mutex) + " slot " +
                             std::to_string(k) + ": " + r.error);
    if (!r.changed) continue;
    ++revoked;
    if (!quiet)
      std::cerr << "simba: revoked slot " << k << " of " << core::escape_control(mutex)
                << "; its command is being stopped\n";
  }
  if (!quiet && revoked == 0)
    std::cerr << "simba: " << core::escape_control(mutex) << " has no slot lease"
              << (token ? " with that fencing token" : "") << ": nothing revoked\n";
  return 0;
}

int release_command(const ReleaseOptions& o) {
  if (o.lease_given) {
    if (o.force || !o.token.empty() || !o.common.mutex.empty())
      throw UsageError("--lease does not go with --mutex, --force or --token: the handle names "
                       "the lease");
    return release_lease_command(o.common, o.lease);
  }
  if (o.common.mutex.empty())
    throw UsageError("release needs --mutex NAME (it never takes SIMBA_MUTEX)");
  const std::string mutex = core::unescape_control(o.common.mutex);
  if (mutex.empty() || mutex.size() > k_max_stored_name)
    throw UsageError("--mutex must be 1 to " + std::to_string(k_max_stored_name) + " bytes");
  if (!o.force) {
    throw UsageError("release breaks another process's lock: say --force to do it");
  }
  uint64_t token = parse_token(o.token);
  auto backend = open_backend(o.common, backend::Access::inspect);
  backend->set_holder(this_holder("release --force", "")); // who forced it, for the history
  backend::Reply before = backend->get(mutex, k_admin_timeout_ms);
  if (int slots = core::slots_of_owner(before.observed.lease.owner_id);
      before.ok() && slots > 1 && !before.observed.lease.free_at(before.observed.now))
    return release_slots(*backend, mutex, slots, token, o.common.quiet);
  backend::Reply r = backend->force_release(mutex, token, k_admin_timeout_ms);
  if (!r.ok())
    throw UnavailableError("cannot release " + core::escape_control(mutex) + ": " + r.error);
  if (!o.common.quiet) {
    const core::Observed& after = r.observed;
    std::string who =
        before.ok() && before.observed.lease.valid_at(before.observed.now)
            ? " (was held by " + core::escape_control(before.observed.lease.owner_id) + ")"
            : "";
    if (r.changed && !after.lease.revoked_at(after.now)) {
      // Free, or handed to a waiter: the lease was only held for --min-hold
      // (its command had ended), nothing to stop.
      std::cerr
          << "simba: released " << core::escape_control(mutex) << who
          << ": it was only held for --min-hold (its command had ended); the mutex is free now\n";
    } else if (r.changed) {
      std::cerr << "simba: revoked the lease of " << core::escape_control(mutex) << who
                << "; its command is being stopped, and the mutex is free in "
                << core::format_duration(after.lease.transition_at - after.now) << '\n';
    } else if (token != 0 && r.observed.lease.valid_at(r.observed.now)) {
      std::cerr << "simba: " << core::escape_control(mutex) << " has another lease (fencing token "
                << r.observed.lease.fencing_token << ", held by "
                << core::escape_control(r.observed.lease.owner_id) << "): nothing revoked\n";
    } else {
      std::cerr << "simba: " << core::escape_control(mutex) << " was not held\n";
    }
  }
  return 0;
}

} // namespace simba::cli
