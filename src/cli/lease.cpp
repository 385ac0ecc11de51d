// simba acquire, renew and release --lease (lease.hpp). run --lease is run's
// (cli/run.cpp); the core's acquire and step modes are core/contender_lease.cpp.
#include "cli/lease.hpp"

#include "cli/run.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"
#include "sys/clock.hpp"
#include "sys/fd.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iostream>

namespace simba::cli {

namespace {

constexpr int64_t k_call_timeout_ms = 5000;
constexpr int k_cannot_write = 74; // EX_IOERR: the handle could not be written (lease released)

// The backend's `transition_at - now` from the local wall clock: when the
// lease surely ends, in UTC (rounded up to the second: not before it ends).
std::string utc_at(int64_t transition_at, int64_t backend_now) {
  return core::format_utc(sys::wall_ms() + (transition_at - backend_now) + 999);
}

bool holds(const backend::Reply& r, const core::LeaseHandle& h) {
  return r.ok() && core::holds_lease(r.observed, h.owner_id, h.token);
}

// Why the handle's lease is not held, for one line.
std::string not_held(const backend::Reply& r, const core::LeaseHandle& h) {
  return "the lease of " + h.mutex + " (fencing token " + std::to_string(h.token) +
         ") is no longer held: " + core::why_not_held(r.observed, h.token);
}

std::unique_ptr<backend::Backend> open_for(const CommonOptions& o, const core::LeaseHandle& h) {
  auto backend = open_backend(o);
  check_lease_backend(h, *backend);
  return backend;
}

backend::Reply checked(backend::Reply r, const backend::Backend& b, const core::LeaseHandle& h) {
  if (!r.ok())
    throw UnavailableError("cannot reach the lease of " + h.mutex + " on " + b.describe() + ": " +
                           r.error);
  return r;
}

// The lines acquire prints (or appends to --env-file): POSIX assignments
// whose values need no quoting, for eval, `set -a; . FILE` and $GITHUB_ENV.
std::string assignments(const core::LeaseHandle& h, const core::action::Leased& l) {
  std::string slot = h.slots > 1 ? "\nSIMBA_SLOT=" + std::to_string(h.slot) +
                                       "\nSIMBA_SLOTS=" + std::to_string(h.slots)
                                 : "";
  return "SIMBA_LEASE=" + core::encode_lease_handle(h) + "\nSIMBA_MUTEX=" + h.mutex +
         "\nSIMBA_FENCING_TOKEN=" + std::to_string(h.token) + slot +
         "\nSIMBA_LEASE_UNTIL=" + utc_at(l.lease.transition_at, l.backend_now) + "\n";
}

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

core::ContenderConfig acquire_config(const AcquireOptions& o) {
  if (o.common.ttl.empty())
    throw UsageError("acquire needs --ttl D: how long the lease lasts when nobody renews it "
                     "(longer than the job)");
  SuperviseOptions s;
  s.common = o.common;
  // Checked as run checks it: every step (run --lease) runs with these.
  core::ContenderConfig config = supervise_config(s, "acquire");
  config.mode = core::ContenderConfig::Mode::acquire;
  config.slots = slots_config(o.slots);
  apply_wait_options(config, o.no_wait, o.timeout);
  return config;
}

} // namespace

void check_lease_backend(const core::LeaseHandle& h, const backend::Backend& backend) {
  if (core::backend_fingerprint(backend.describe()) != h.backend)
    throw UsageError("--lease: the lease is on another backend than " + backend.describe() +
                     " (give the --backend or SIMBA_BACKEND simba acquire had)");
}

CLI::App* add_acquire_command(CLI::App& app, AcquireOptions& o) {
  CLI::App* cmd = app.add_subcommand("acquire", k_acquire_description);
  cmd->footer("Usage: simba acquire --mutex NAME --ttl D [--timeout D | --no-wait] "
              "[--env-file FILE] [options]");
  add_contend_options(*cmd, o.common);
  cmd->get_option("--ttl")->description(
      "Required: how long the lease lasts when nobody renews it (each step under it renews it); "
      "longer than the job");
  cmd->add_option("--timeout", o.timeout,
                  "Give up waiting after this long (exit 75; 69 if the backend is failing or in "
                  "quarantine then)");
  cmd->add_flag("--no-wait", o.no_wait, "Do not wait: exit 75 if the mutex is held (69 in a quarantine)");
  add_slots_option(*cmd, o.slots,
                   "Take one of N slots: at most N leases (and their steps) at once; every "
                   "contender must give the same N");
  cmd->add_option("--env-file", o.env_file,
                  "Append the assignments to FILE (e.g. $GITHUB_ENV) instead of printing them");
  return cmd;
}

namespace {

// The --env-file, opened before the wait: a file we cannot write must not
// cost a lease. One this acquire created is removed again when it ends
// without a lease written to it (a --timeout, a signal, an error): a CI
// clean-up step that tests for the file (the GitLab recipe of docs/recipes.md) must not
// find an empty one and release "".
class EnvFile {
public:
  explicit EnvFile(const std::string& path) : m_path(path) {
    if (path.empty()) return;
    m_fd.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    m_created = m_fd.valid();
    if (!m_fd && errno == EEXIST) {
      // O_NONBLOCK: a FIFO nobody reads would block here for ever (ENXIO
      // instead); the writes later block as usual.
      m_fd.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK));
      if (!m_fd && errno == ENXIO)
        throw UsageError("cannot open --env-file " + path + ": a FIFO that nobody reads");
      if (m_fd) ::fcntl(m_fd.get(), F_SETFL, O_APPEND);
    }
    if (!m_fd) throw UsageError("cannot open --env-file " + path + ": " + std::strerror(errno));
  }
  EnvFile(const EnvFile&) = delete;
  EnvFile& operator=(const EnvFile&) = delete;
  ~EnvFile() {
    if (m_created && !m_written) ::unlink(m_path.c_str());
  }

  int fd() const { return m_fd ? m_fd.get() : 1; } // none: stdout
  // Writes the assignments; false (errno set) if they may not all be there.
  bool write(const std::string& text) {
    bool ok = write_all(fd(), text);
    int err = errno;
    if (m_fd && !m_fd.close() && ok) {
      ok = false;
      err = errno;
    }
    m_written = ok;
    errno = err;
    return ok;
  }

private:
  std::string m_path;
  sys::Fd m_fd;
  bool m_created = false;
  bool m_written = false;
};

} // namespace

Outcome acquire_command(const AcquireOptions& o) {
  core::ContenderConfig config = acquire_config(o);
  EnvFile env(o.env_file);
  Log log{o.common.quiet, o.common.verbose, false, false};
  log.redis = is_redis_uri(o.common.backend);
  auto backend = open_backend(o.common);
  if (config.slots > 1 && !backend->has_slots())
    throw UsageError("--slots above 1 is not supported by " + backend->describe());
  config.call_timeout_ms = backend->call_timeout_ms(); // the URI's timeout=
  backend->set_holder(this_holder("acquire", "", config));
  Command none; // acquire starts no CMD
  process::Watchdog watchdog;
  core::Contender contender(config, core::ContendPeriod(config.contender_id, random_uniform()));
  Outcome out = drive(contender, config, *backend, none, log, watchdog, true);
  if (out.code != 0 || !out.leased) return out;
  core::LeaseHandle h{core::backend_fingerprint(backend->describe()),
                      config.mutex,
                      config.contender_id,
                      out.leased->lease.fencing_token,
                      config.ttl_ms,
                      config.transition_ms,
                      out.leased->lease.slot,
                      config.slots};
  if (!env.write(assignments(h, *out.leased))) {
    int err = errno;
    // Nobody could use or release it: give it back now.
    backend->release(core::lease_name(h), config.contender_id, h.token, k_call_timeout_ms);
    throw Error(k_cannot_write, "cannot write the lease handle" +
                                    (o.env_file.empty() ? std::string() : " to " + o.env_file) +
                                    ": " + std::strerror(err) + "; the lease was released");
  }
  return out;
}

CLI::App* add_renew_command(CLI::App& app, RenewOptions& o) {
  CLI::App* cmd = app.add_subcommand("renew", k_renew_description);
  cmd->footer("Usage: simba renew --lease H [--ttl D] [--backend URI]");
  cmd->add_option("--lease", o.lease, "The handle simba acquire printed ($SIMBA_LEASE)");
  cmd->add_option("--ttl", o.ttl, "This renewal's ttl (default: the one acquire was given)");
  add_backend_options(*cmd, o.common, "Print nothing but errors");
  return cmd;
}

backend::Reply renew_lease(backend::Backend& backend, const core::LeaseHandle& h, int64_t ttl_ms) {
  return checked(backend.extend(core::lease_name(h), h.owner_id, h.token, ttl_ms, h.transition_ms,
                                k_call_timeout_ms),
                 backend, h);
}

int renew_command(const RenewOptions& o) {
  core::LeaseHandle h = core::decode_lease_handle(o.lease);
  int64_t ttl = h.ttl_ms;
  if (!o.ttl.empty()) ttl = core::parse_duration(o.ttl, "--ttl");
  if (ttl <= 0) throw UsageError("--ttl must be longer than 0");
  auto backend = open_for(o.common, h);
  backend::Reply r = renew_lease(*backend, h, ttl);
  if (!holds(r, h)) {
    std::cerr << "simba: " << not_held(r, h) << '\n';
    return exit_code::k_lost;
  }
  if (!o.common.quiet)
    std::cout << "SIMBA_LEASE_UNTIL=" << utc_at(r.observed.lease.transition_at, r.observed.now)
              << '\n';
  return 0;
}

// Ends the handle's lease, and only it, in one call: release_lease (a
// release when only held, backend.hpp) with the
// handle's fencing token (a token names one lease of a mutex: tokens are
// never reused, so the owner id needs no comparing). It frees a lease
// nothing runs under at once (handing it to the next waiter) and revokes
// one a step still runs under (the step stops; the next owner waits until
// its command is surely stopped, DESIGN §4); which one, force_release
// decides atomically from the lease's mark.
int release_lease_command(const CommonOptions& o, const std::string& lease) {
  core::LeaseHandle h = core::decode_lease_handle(lease);
  auto backend = open_for(o, h);
  backend::Reply r =
      checked(backend->release_lease(core::lease_name(h), h.token, k_call_timeout_ms), *backend, h);
  if (!r.changed) {
    if (!o.quiet) std::cerr << "simba: " << not_held(r, h) << "; nothing released\n";
    return k_release_not_held;
  }
  const core::Observed& after = r.observed;
  if (after.lease.revoked_at(after.now)) {
    if (!o.quiet)
      std::cerr << "simba: the lease of " << h.mutex
                << " was in use by a step (run --lease): revoked; the step is being stopped, and "
                   "the mutex is free in "
                << core::format_duration(after.lease.transition_at - after.now) << '\n';
  } else if (o.verbose) {
    std::cerr << "simba: released " << h.mutex << '\n';
  }
  return 0;
}

} // namespace simba::cli
