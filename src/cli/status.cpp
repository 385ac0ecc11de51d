#include "cli/status.hpp"

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
  j["owner"] = l.owner_id.empty() || w == core::Window::idle ? nlohmann::json(nullptr)
                                                              : nlohmann::json(l.owner_id);
  j["fencing_token"] = l.fencing_token;
  bool acquired = w != core::Window::idle && w != core::Window::quarantine;
  j["acquired_at"] = acquired ? nlohmann::json(l.acquired_at) : nlohmann::json(nullptr);
  j["ttl_at"] = w == core::Window::idle ? nlohmann::json(nullptr) : nlohmann::json(l.ttl_at);
  j["transition_at"] =
    w == core::Window::idle ? nlohmann::json(nullptr) : nlohmann::json(l.transition_at);
  j["ttl_remaining_ms"] = w == core::Window::ttl ? l.ttl_at - now : 0;
  j["transition_remaining_ms"] = w == core::Window::idle ? 0 : l.transition_at - now;
  return j;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

void print_table(const std::vector<backend::MutexLease>& mutexes, int64_t now) {
  std::vector<std::vector<std::string>> rows = {
    {"MUTEX", "STATE", "OWNER", "TOKEN", "ACQUIRED", "TTL LEFT", "VALID FOR"}};
  for (const auto& m : mutexes) {
    const core::Lease& l = m.lease;
    core::Window w = core::window_at(l, now);
    bool held = w != core::Window::idle;
    rows.push_back({m.mutex, core::window_name(w), held && !l.owner_id.empty() ? l.owner_id : "-",
                    l.fencing_token ? std::to_string(l.fencing_token) : "-",
                    held && w != core::Window::quarantine ? core::format_duration(now - l.acquired_at) + " ago"
                                                          : "-",
                    w == core::Window::ttl ? core::format_duration(l.ttl_at - now) : "-",
                    held ? core::format_duration(l.transition_at - now) : "-"});
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

} // namespace

CLI::App* add_status_command(CLI::App& app, StatusOptions& o) {
  CLI::App* cmd = app.add_subcommand("status", k_status_description);
  cmd->add_option("--mutex", o.common.mutex, "Only this mutex")->envname("SIMBA_MUTEX");
  add_backend_options(*cmd, o.common);
  cmd->add_flag("--json", o.json, "JSON for programs");
  return cmd;
}

int status_command(const StatusOptions& o) {
  if (!o.common.mutex.empty()) core::validate_mutex_name(o.common.mutex);
  auto backend = open_backend(o.common);
  std::vector<backend::MutexLease> mutexes;
  int64_t now = 0;
  if (o.common.mutex.empty()) {
    backend::Listing listing = backend->list(k_admin_timeout_ms);
    if (!listing.ok) throw UnavailableError("cannot read " + backend->describe() + ": " + listing.error);
    mutexes = std::move(listing.mutexes);
    now = listing.now;
  } else {
    backend::Reply r = backend->get(o.common.mutex, k_admin_timeout_ms);
    if (!r.ok()) throw UnavailableError("cannot read " + backend->describe() + ": " + r.error);
    mutexes.push_back({o.common.mutex, r.observed.lease});
    now = r.observed.now;
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
    std::cout << j.dump() << '\n';
  } else {
    print_table(mutexes, now);
  }
  return 0;
}

CLI::App* add_release_command(CLI::App& app, ReleaseOptions& o) {
  CLI::App* cmd = app.add_subcommand("release", k_release_description);
  cmd->add_option("--mutex", o.common.mutex, "The mutex")->envname("SIMBA_MUTEX");
  add_backend_options(*cmd, o.common);
  cmd->add_flag("--force", o.force, "Required: the owner's command is then stopped");
  return cmd;
}

int release_command(const ReleaseOptions& o) {
  if (o.common.mutex.empty()) throw UsageError("--mutex is required (or set SIMBA_MUTEX)");
  core::validate_mutex_name(o.common.mutex);
  if (!o.force) {
    throw UsageError("release breaks another process's lock: say --force to do it");
  }
  auto backend = open_backend(o.common);
  backend::Reply before = backend->get(o.common.mutex, k_admin_timeout_ms);
  backend::Reply r = backend->force_release(o.common.mutex, k_admin_timeout_ms);
  if (!r.ok()) throw UnavailableError("cannot release " + o.common.mutex + ": " + r.error);
  if (!o.common.quiet) {
    if (r.changed) {
      std::string who = before.ok() && before.observed.lease.valid_at(before.observed.now)
                          ? " (was held by " + before.observed.lease.owner_id + ")"
                          : "";
      const core::Observed& after = r.observed;
      std::cerr << "simba: revoked the lease of " << o.common.mutex << who
                << "; its command is being stopped, and the mutex is free in "
                << core::format_duration(after.lease.transition_at - after.now) << '\n';
    } else {
      std::cerr << "simba: " << o.common.mutex << " was not held\n";
    }
  }
  return 0;
}

} // namespace simba::cli
