#include "cli/status.hpp"

#include "cli/lease.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace simba::cli {

namespace {

constexpr int64_t k_admin_timeout_ms = 5000;

nlohmann::json to_json(const backend::MutexLease& m, int64_t now) {
  const core::Lease& l = m.lease;
  core::Window w = core::window_at(l, now);
  nlohmann::json j;
  j["mutex"] = m.mutex;
  j["state"] = core::window_name(w);
  bool owned = !l.owner_id.empty() && w != core::Window::idle;
  j["owner"] = owned ? nlohmann::json(l.owner_id) : nlohmann::json(nullptr);
  // the --contender-id the owner was given (the owner id without its instance)
  j["label"] =
      owned ? nlohmann::json(std::string(core::label_of(l.owner_id))) : nlohmann::json(nullptr);
  j["fencing_token"] = l.fencing_token;
  bool acquired = w != core::Window::idle && w != core::Window::quarantine;
  j["acquired_at"] = acquired ? nlohmann::json(l.acquired_at) : nlohmann::json(nullptr);
  j["ttl_at"] = w == core::Window::idle ? nlohmann::json(nullptr) : nlohmann::json(l.ttl_at);
  j["transition_at"] =
      w == core::Window::idle ? nlohmann::json(nullptr) : nlohmann::json(l.transition_at);
  j["ttl_remaining_ms"] = w == core::Window::ttl ? l.ttl_at - now : 0;
  j["transition_remaining_ms"] = w == core::Window::idle ? 0 : l.transition_at - now;
  // false: no simba process guards it (simba acquire's lease between
  // steps, or --min-hold after CMD): nothing runs under it.
  j["guarded"] = owned ? nlohmann::json(!l.holding) : nlohmann::json(nullptr);
  return j;
}

// --token: a fencing token as status shows it; 0 when not given.
uint64_t parse_token(const std::string& text) {
  if (text.empty()) return 0;
  bool digits = text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t token = digits ? std::stoull(text) : 0;
  if (token == 0)
    throw UsageError("--token must be a fencing token (a positive number), not '" + text + "'");
  return token;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

void print_table(const std::vector<backend::MutexLease>& mutexes, int64_t now) {
  std::vector<std::vector<std::string>> rows = {
      {"MUTEX", "STATE", "OWNER", "TOKEN", "ACQUIRED", "TTL LEFT", "VALID FOR", "GUARDED"}};
  for (const auto& m : mutexes) {
    const core::Lease& l = m.lease;
    core::Window w = core::window_at(l, now);
    bool held = w != core::Window::idle;
    // Escaped: a row written by someone else must not drive the terminal.
    rows.push_back({core::escape_control(m.mutex), core::window_name(w),
                    held && !l.owner_id.empty() ? core::escape_control(l.owner_id) : "-",
                    l.fencing_token ? std::to_string(l.fencing_token) : "-",
                    held && w != core::Window::quarantine
                        ? core::format_duration(now - l.acquired_at) + " ago"
                        : "-",
                    w == core::Window::ttl ? core::format_duration(l.ttl_at - now) : "-",
                    held ? core::format_duration(l.transition_at - now) : "-",
                    !held || l.owner_id.empty() ? "-"
                    : l.holding                 ? "no"
                                                : "yes"});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += i + 1 < r.size() ? pad(r[i], width[i] + 2) : r[i];
    }
    std::cout << line << '\n';
  }
}

// --once-per: the mutex's done record, for people.
std::string describe_done(const core::DoneRecord& d) {
  std::string outcome =
      d.finished ? "exit " + std::to_string(d.exit_code) + " at " + core::format_utc(d.finished_at)
                 : "not finished (running, or its lease was lost)";
  return "last --once-per run: window from " + core::format_utc(d.window_start) + ", started " +
         core::format_utc(d.started_at) + " on " + core::escape_control(d.host) + " by " +
         core::escape_control(d.label) + ", " + outcome;
}

nlohmann::json done_json(const core::DoneRecord& d) {
  nlohmann::json j;
  j["window_start"] = d.window_start;
  j["label"] = d.label;
  j["host"] = d.host;
  j["fencing_token"] = d.token;
  j["started_at"] = d.started_at;
  j["finished_at"] = d.finished ? nlohmann::json(d.finished_at) : nlohmann::json(nullptr);
  j["exit_code"] = d.finished ? nlohmann::json(d.exit_code) : nlohmann::json(nullptr);
  return j;
}

} // namespace

CLI::App* add_status_command(CLI::App& app, StatusOptions& o) {
  CLI::App* cmd = app.add_subcommand("status", k_status_description);
  cmd->footer("Usage: simba status [--mutex NAME] [--json | -q] [--backend URI]");
  // Never from SIMBA_MUTEX: inside a job that variable names the job's own
  // lock, and status would quietly show only that one.
  cmd->add_option("--mutex", o.common.mutex, "Only this mutex");
  add_backend_options(
      *cmd, o.common,
      "Print nothing; exit 0 if a mutex shown is held, 1 if none is (a test for scripts)");
  cmd->add_flag("--json", o.json, "JSON for programs");
  return cmd;
}

int status_command(const StatusOptions& o) {
  if (!o.common.mutex.empty()) core::validate_mutex_name(o.common.mutex);
  auto backend = open_backend(o.common, backend::Access::inspect);
  std::vector<backend::MutexLease> mutexes;
  int64_t now = 0;
  std::optional<core::DoneRecord> done; // --mutex: its --once-per record
  if (o.common.mutex.empty()) {
    backend::Listing listing = backend->list(k_admin_timeout_ms);
    if (!listing.ok)
      throw UnavailableError("cannot read " + backend->describe() + ": " + listing.error);
    mutexes = std::move(listing.mutexes);
    now = listing.now;
  } else {
    // The lease and, for --once-per, the done record, in one call.
    backend::Reply r = backend->done_record(o.common.mutex, k_admin_timeout_ms);
    if (!r.ok()) r = backend->get(o.common.mutex, k_admin_timeout_ms);
    if (!r.ok()) throw UnavailableError("cannot read " + backend->describe() + ": " + r.error);
    mutexes.push_back({o.common.mutex, r.observed.lease});
    now = r.observed.now;
    done = r.done;
  }
  bool any_held = false;
  // held: not free to acquire (owned, or revoked and not yet over)
  for (const auto& m : mutexes) any_held = any_held || !m.lease.free_at(now);
  if (o.common.quiet) return any_held ? 0 : 1;
  if (o.json) {
    nlohmann::json j;
    j["backend_now"] = now;
    j["mutexes"] = nlohmann::json::array();
    for (const auto& m : mutexes) j["mutexes"].push_back(to_json(m, now));
    if (done) j["mutexes"][0]["last_once_per_run"] = done_json(*done);
    std::cout << j.dump() << '\n';
  } else {
    print_table(mutexes, now);
    if (done) std::cout << describe_done(*done) << '\n';
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
  backend::Reply before = backend->get(mutex, k_admin_timeout_ms);
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
