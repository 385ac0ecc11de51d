#include "cli/options.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"
#include "sys/clock.hpp"

#include <CLI/CLI.hpp>

#include <sys/random.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <random>

namespace simba::cli {

namespace {

uint64_t kernel_random() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v) {
    v = uint64_t(getpid()) * 0x9E3779B97F4A7C15ull ^ uint64_t(time(nullptr));
  }
  return v;
}

} // namespace

const std::string& this_host() {
  static const std::string host = [] {
    char buf[256] = "";
    gethostname(buf, sizeof buf - 1);
    return std::string(buf);
  }();
  return host;
}

long this_pid() {
  static const long pid = long(getpid());
  return pid;
}

backend::Holder this_holder(const char* via, const std::string& command,
                            const core::ContenderConfig& config) {
  backend::Holder h = this_holder(via, command);
  // The contender counts --timeout from its start, which comes next.
  if (config.wait_timeout_ms) h.gives_up_at = sys::wall_ms() + *config.wait_timeout_ms;
  return h;
}

backend::Holder this_holder(const char* via, const std::string& command) {
  return backend::Holder{via, this_pid(), this_host(), command, 0};
}

const CLI::Validator& decimal_number() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        size_t digits = value.size() - (value.rfind('-', 0) == 0 ? 1 : 0);
        if (digits == 0 || value.find_first_not_of("0123456789", value.size() - digits) !=
                               std::string::npos)
          return "a decimal number is expected, not '" + value + "'";
        size_t first = value.size() - digits;
        size_t nonzero = value.find_first_not_of('0', first);
        value.erase(first, (nonzero == std::string::npos ? value.size() - 1 : nonzero) - first);
        return {};
      },
      "");
  return check;
}

void add_backend_option(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--backend", o.backend,
                 "Backend URI: sqlite:///path.db, sqlite:rel.db, redis://[[user]:password@]"
                 "host[:port][/db], rediss://... (TLS), redis+unix:///path.sock, "
                 "redis+sentinel://s1,s2,s3/master, redis+cluster://n1,n2,n3, "
                 "postgres://[user@]host[:port]/db, mysql://user@host[:port]/db, "
                 "etcd://host[:port][,...][/prefix], etcds://... (TLS) (see man simba, "
                 "BACKENDS; default: $SIMBA_HOME/simba.db "
                 "or ~/.local/state/simba/simba.db)")
      ->envname("SIMBA_BACKEND");
}

void add_backend_options(CLI::App& cmd, CommonOptions& o, const char* quiet_help) {
  add_backend_option(cmd, o);
  cmd.add_flag("-q,--quiet", o.quiet, quiet_help);
  cmd.add_flag("-v,--verbose", o.verbose, "Log every transition on stderr");
}

void add_contend_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--mutex", o.mutex, "Name of the mutex (1-128 of [A-Za-z0-9._:/@-])")
      ->envname("SIMBA_MUTEX");
  add_backend_options(cmd, o, "Print nothing but errors");
  cmd.add_option("--ttl", o.ttl,
                 "Lease time to live; the owner renews it (default 10s; at least 250ms, and enough "
                 "that ttl + transition - margin - kill-after >= 500ms: see man simba)");
  cmd.add_option("--transition", o.transition,
                 "Buffer after the TTL before others may take over (default 2s)");
  cmd.add_option("--contender-id", o.contender_id,
                 "Label of this contender, 1-111 bytes, shown by status and history (default: "
                 "pid@host; in GitHub Actions $GITHUB_REPOSITORY#$GITHUB_RUN_ID/$GITHUB_JOB, in "
                 "GitLab CI $CI_JOB_URL); the owner id is the label plus a random instance id, "
                 "unique per process");
}

core::ContenderConfig contender_config(const CommonOptions& o) {
  if (o.mutex.empty()) throw UsageError("--mutex is required (or set SIMBA_MUTEX)");
  core::validate_mutex_name(o.mutex);
  core::ContenderConfig c;
  c.mutex = o.mutex;
  c.ttl_ms = core::parse_duration(o.ttl, "--ttl");
  c.transition_ms = core::parse_duration(o.transition, "--transition");
  if (c.ttl_ms <= 0) throw UsageError("--ttl must be longer than 0");
  if (o.contender_id.empty()) {
    c.label = core::ci_job_label([](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    });
    if (c.label.empty()) c.label = core::default_contender_label(this_pid(), this_host());
  } else {
    core::validate_contender_label(o.contender_id);
    c.label = o.contender_id;
  }
  // Never the label alone: two processes given one label must not be one
  // owner (DESIGN §9).
  c.contender_id = core::make_owner_id(c.label, kernel_random());
  // How often `run` repeats its waiting notice (default 5m); for tests, and
  // for logs that want it more or less often.
  if (const char* every = std::getenv("SIMBA_WAIT_NOTICE_EVERY"); every && *every) {
    c.notice_every_ms = core::parse_duration(every, "SIMBA_WAIT_NOTICE_EVERY");
  }
  return c;
}

bool is_redis_uri(const std::string& uri) {
  std::string scheme = uri.substr(0, 5);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "redis";
}

std::unique_ptr<backend::Backend> open_backend(const CommonOptions& o, backend::Access access) {
  return backend::open_backend(o.backend, access);
}

core::ContendPeriod::Uniform random_uniform() {
  auto engine = std::make_shared<std::mt19937_64>(kernel_random());
  return [engine](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi - 1)(*engine);
  };
}

void apply_wait_options(core::ContenderConfig& config, bool no_wait, const std::string& timeout) {
  config.no_wait = no_wait;
  if (no_wait && !timeout.empty())
    throw UsageError("--no-wait and --timeout contradict each other: --no-wait never waits");
  if (!timeout.empty()) config.wait_timeout_ms = core::parse_duration(timeout, "--timeout");
}

} // namespace simba::cli
