// simba doctor (doctor.hpp): the connection, the clock offset and a
// quarantine in force, checked here for every backend; then the backend's
// own checks; then the findings, printed.
#include "cli/doctor.hpp"

#include "backend/mysql/mysql.hpp"
#include "backend/postgres/setup_sql.hpp"
#include "backend/redis/redis.hpp"
#include "backend/uri.hpp"
#include "cli/doctor_checks.hpp"
#include "cli/doctor_view.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <variant>

namespace simba::cli {
namespace {

using backend::Finding;

// Each call's budget, as status's.
constexpr int64_t k_doctor_timeout_ms = 5000;
// The mutex the shared checks read: one nobody holds, so that a quarantine
// shows (a held mutex would show its holder instead). get() writes nothing.
constexpr const char* k_probe_mutex = "simba-doctor-probe";
// More readings of the clock after the first (which may include a
// connection's set-up): the one with the shortest round trip counts.
constexpr int k_clock_readings = 3;

Finding finding(const char* check, Finding::Verdict v, std::string detail, std::string fix = "") {
  return Finding{check, v, std::move(detail), std::move(fix)};
}

// What to do when the backend cannot be opened at all; the error line
// itself says what went wrong.
std::string connection_fix(std::string uri, const std::string& error) {
  for (char& c : uri) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (uri.rfind("redis", 0) == 0)
    return "check the address, the password (SIMBA_REDIS_PASSWORD), the scheme (rediss:// for "
           "TLS) and the server (docs/backends/redis.md)";
  if (uri.rfind("postgres", 0) == 0)
    return "check the address, the role and its password (PGPASSWORD, ~/.pgpass) and the "
           "database (docs/backends/postgres.md)";
  if (uri.rfind("mysql", 0) == 0 || uri.rfind("mariadb", 0) == 0)
    return "check the address, the user and its password (SIMBA_MYSQL_PASSWORD, ~/.my.cnf), "
           "tls= and the server (docs/backends/mysql.md)";
  if (uri.rfind("etcd", 0) == 0)
    return "check the members' addresses (name them all), the scheme (etcds:// for TLS), "
           "the user and SIMBA_ETCD_PASSWORD (docs/backends/etcd.md)";
  if (error.rfind("no simba database", 0) == 0)
    return "check the path; the first simba run on it makes the database";
  return "see docs/backends/sqlite.md, \"Whose files simba trusts\" and \"Sharing a database "
         "between users\"";
}

struct Reading {
  backend::Reply reply;
  ClockReading clock;
};

Reading timed_get(backend::Backend& b) {
  Reading r;
  r.clock.sent_ms = sys::wall_ms();
  r.reply = b.get(k_probe_mutex, k_doctor_timeout_ms);
  r.clock.received_ms = sys::wall_ms();
  r.clock.backend_now_ms = r.reply.observed.now;
  return r;
}

// The clock and the quarantine, from the first reading and a few more.
void shared_checks(backend::Backend& b, const Reading& first, const backend::DiagnoseOptions& d,
                   backend::Diagnosis& found) {
  if (!first.reply.ok()) {
    std::string why = "cannot read a lease: " + first.reply.error;
    found.push_back(finding("clock", Finding::Verdict::fail, why, "see the backend's own checks"));
    found.push_back(finding("quarantine", Finding::Verdict::fail, why, "see the backend's own checks"));
    return;
  }
  Reading best = first;
  for (int i = 0; i < k_clock_readings; ++i) {
    Reading r = timed_get(b);
    if (r.reply.ok() && r.clock.received_ms - r.clock.sent_ms <
                            best.clock.received_ms - best.clock.sent_ms)
      best = r;
  }
  found.push_back(judge_clock(best.clock, d));
  found.push_back(judge_quarantine(first.reply.observed));
}

void backend_checks(backend::Backend& b, const backend::DiagnoseOptions& d,
                    backend::Diagnosis& found);

// The checks, in order; a backend that cannot be opened ends them.
backend::Diagnosis diagnose(const DoctorOptions& o, const backend::DiagnoseOptions& d,
                            std::string& shown) {
  backend::Diagnosis found;
  std::unique_ptr<backend::Backend> b;
  Reading first;
  try {
    b = open_backend(o.common, backend::Access::inspect);
    shown = b->describe();
    first = timed_get(*b); // a Redis backend may check its server with its first call
  } catch (const Error& e) {
    // A malformed URI is a usage error, as for every command.
    if (!b && e.code() == exit_code::k_usage) throw;
    if (!b) {
      found.push_back(finding("connection", Finding::Verdict::fail, e.what(),
                              connection_fix(o.common.backend, e.what())));
      return found;
    }
    // Connected, but the first read was refused (PostgreSQL without
    // simba's tables yet, a Redis whose settings simba refuses): the
    // backend's own checks say whether that is a fault and what to do.
    found.push_back(finding("connection", Finding::Verdict::ok, shown + " opened"));
    std::string why = std::string("cannot read a lease: ") + e.what();
    found.push_back(finding("clock", Finding::Verdict::warn, why, "see the checks below"));
    found.push_back(finding("quarantine", Finding::Verdict::warn, why, "see the checks below"));
    backend_checks(*b, d, found);
    return found;
  }
  found.push_back(finding("connection", Finding::Verdict::ok, shown + " opened"));
  shared_checks(*b, first, d, found);
  backend_checks(*b, d, found);
  return found;
}

// The backend's own checks (Backend::diagnose).
void backend_checks(backend::Backend& b, const backend::DiagnoseOptions& d,
                    backend::Diagnosis& found) {
  try {
    b.diagnose(found, d);
  } catch (const std::exception& e) { // diagnose() should not throw: say so, keep the rest
    found.push_back(finding("backend", Finding::Verdict::fail,
                            std::string("its checks stopped: ") + e.what(), "report this"));
  }
}

// doctor --sql postgres|mysql: the tables and GRANTs (the text the error
// of a user that may not make them names), for the URI's schema or
// database, prefix and role or user, else the defaults (public or simba,
// simba_, simba).
int print_sql(const DoctorOptions& o) {
  if (o.sql != "postgres" && o.sql != "mysql")
    throw UsageError("--sql takes postgres or mysql (the backends whose tables an administrator "
                     "may make), not " + o.sql);
  const bool pg_sql = o.sql == "postgres";
  if (o.common.backend.empty()) {
    std::cout << (pg_sql ? backend::pg::setup_sql("public", "simba_", "simba")
                         : backend::mysql_setup_sql("simba", "simba_", "simba"));
    return 0;
  }
  backend::BackendUri uri = backend::parse_backend_uri(o.common.backend);
  const auto* pg = std::get_if<backend::PostgresUri>(&uri);
  const auto* my = std::get_if<backend::MysqlUri>(&uri);
  if (pg_sql ? !pg : !my)
    throw UsageError("--sql " + o.sql + " prints the SQL of a " +
                     (pg_sql ? "PostgreSQL" : "MySQL") + " backend; " +
                     backend::redact(o.common.backend) + " is none");
  std::cout << (pg_sql ? backend::pg::setup_sql(*pg)
                       : backend::mysql_setup_sql(my->database, my->prefix, my->user));
  return 0;
}

} // namespace

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& o) {
  CLI::App* cmd = app.add_subcommand("doctor", k_doctor_description);
  cmd->footer("Usage: simba doctor [--backend URI] [--ttl D] [--transition D] [--json]\n"
              "       simba doctor --init --backend redis://...\n"
              "       simba doctor --sql postgres|mysql [--backend URI]");
  add_backend_option(*cmd, o.common);
  cmd->add_option("--ttl", o.common.ttl,
                  "The lease time to live you run with (default 10s): the clock offset is judged "
                  "against its margin");
  cmd->add_option("--transition", o.common.transition,
                  "The transition you run with (default 2s)");
  cmd->add_flag("--json", o.json, "JSON for programs");
  cmd->add_flag("--init", o.init,
                "Instead of the checks: mark a Redis database you know is new, so that its "
                "first lease waits no quarantine (refused where simba's keys are)");
  cmd->add_option("--sql", o.sql,
                  "Instead of the checks: print the SQL an administrator runs to make simba's "
                  "tables and grant their rights (postgres or mysql; with a backend URI: its "
                  "schema or database, prefix and role or user)");
  return cmd;
}

namespace {

// doctor --init: 0 marked, 1 not (the line says why), 64 not Redis.
int init_database(const DoctorOptions& o) {
  std::string uri = o.common.backend;
  if (!is_redis_uri(uri))
    throw UsageError("--init marks a new Redis database; " +
                     (uri.empty() ? std::string("the default SQLite database") : backend::redact(uri)) +
                     " is none (a new SQLite or PostgreSQL database waits no quarantine)");
  std::unique_ptr<backend::Backend> b = open_backend(o.common, backend::Access::inspect);
  std::string why;
  if (backend::init_new_redis_database(*b, k_doctor_timeout_ms, why)) {
    std::cout << "simba: " << why << "\n";
    return 0;
  }
  std::cerr << "simba: error: " << why << "\n";
  return 1;
}

} // namespace

int doctor_command(const DoctorOptions& o) {
  if (o.init && !o.sql.empty()) throw UsageError("--init and --sql are two steps: one at a time");
  if (o.init) return init_database(o);
  if (!o.sql.empty()) return print_sql(o);
  backend::DiagnoseOptions d;
  d.ttl_ms = core::parse_duration(o.common.ttl, "--ttl");
  d.transition_ms = core::parse_duration(o.common.transition, "--transition");
  if (d.ttl_ms <= 0) throw UsageError("--ttl must be longer than 0");
  d.timeout_ms = k_doctor_timeout_ms;
  // The backend as the findings name it until it is open (then its own
  // describe()): the default database by its path.
  std::string shown = backend::redact(o.common.backend);
  if (shown.empty())
    shown = "sqlite://" + std::get<backend::SqliteUri>(backend::parse_backend_uri("")).path;
  backend::Diagnosis found = diagnose(o, d, shown);
  if (o.json)
    print_findings_json(std::cout, shown, found);
  else
    print_findings_text(std::cout, found);
  return doctor_exit_code(found);
}

} // namespace simba::cli
