// simba doctor's checks of the PostgreSQL backend (backend/postgres/
// doctor.hpp), called as the command calls them (Backend::diagnose) on the
// test server: a role that may not create and finds no tables, rights
// taken away, a column dropped, LISTEN directly and through the PgBouncer
// of scripts/test (transaction pooling). Run by conformance/postgres (every
// case) and conformance/pgbouncer (LISTEN: only PgBouncer's own role may
// log in through it).
#include "support.hpp"

#include "backend/postgres/connection.hpp"
#include "backend/postgres/setup_sql.hpp"
#include "backend/uri.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <variant>

using simba::backend::DiagnoseOptions;
using simba::backend::Diagnosis;
using simba::backend::Finding;
using namespace simba::test;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// conformance/pgbouncer: SIMBA_TEST_BACKEND is the PgBouncer's URI.
bool via_pgbouncer() {
  std::string pgb = env("SIMBA_TEST_PGBOUNCER_URI");
  std::string base = pgb.substr(0, pgb.find('?'));
  return !base.empty() && backend_uri().rfind(base, 0) == 0;
}

// The URI without simba's `listen=off` (the suite's PgBouncer URI has it).
std::string with_listen(std::string uri) {
  size_t at = uri.find("listen=off");
  if (at == std::string::npos) return uri;
  uri.erase(at, 10);
  if (at < uri.size() && uri[at] == '&') uri.erase(at, 1); // "?listen=off&x": "?x"
  if (!uri.empty() && (uri.back() == '?' || uri.back() == '&')) uri.pop_back();
  return uri;
}

Diagnosis pg_diagnosis(const std::string& uri) {
  Diagnosis found;
  DiagnoseOptions options;
  options.ttl_ms = 12000;
  simba::backend::open_backend(uri)->diagnose(found, options);
  return found;
}

// The finding of `check` (a failure when there is none). Never called
// inside a doctest message: its own failure would wait for the reporter.
Finding check(const Diagnosis& d, const std::string& name) {
  for (const Finding& f : d)
    if (f.check == name) return f;
  FAIL_CHECK("no finding " << name);
  Finding none;
  none.verdict = Finding::Verdict::fail;
  none.detail = "(none)";
  return none;
}

// The test server's administrator (SIMBA_TEST_POSTGRES_URI: its superuser).
struct Admin {
  simba::backend::pg::Connection conn;
  Admin() {
    auto uri = std::get<simba::backend::PostgresUri>(
        simba::backend::parse_backend_uri(env("SIMBA_TEST_POSTGRES_URI")));
    REQUIRE(conn.connect(uri, simba::sys::boottime_ms() + k_timeout) == "");
  }
  void sql(const std::string& s) {
    auto r = conn.script(s, simba::sys::boottime_ms() + k_timeout);
    REQUIRE_MESSAGE(r.ok, s << ": " << r.error);
  }
};

// A role of the test's own, and the tables of a prefix of its own, dropped
// at the end: its URI is the server's with this role's name and password.
struct Role {
  Admin admin;
  std::string name = "doctor_r_" + std::to_string(getpid());
  std::string prefix = "doc_" + std::to_string(getpid()) + "_";
  std::string uri;
  Role() {
    admin.sql("DROP ROLE IF EXISTS " + name + "; CREATE ROLE " + name +
              " LOGIN PASSWORD 'doctor-pw'");
    std::string server = env("SIMBA_TEST_POSTGRES_URI");
    size_t at = server.find('@');
    uri = "postgres://" + name + ":doctor-pw" + server.substr(at, server.find('?') - at) +
          "?prefix=" + prefix;
  }
  ~Role() {
    std::string drop;
    for (const char* t : {"leases", "server", "waiters", "history"})
      drop += "DROP TABLE IF EXISTS \"" + prefix + t + "\"; ";
    auto r = admin.conn.script(drop + "DROP OWNED BY " + name + "; DROP ROLE " + name,
                               simba::sys::boottime_ms() + k_timeout);
    (void)r;
  }
};

} // namespace

TEST_CASE("postgres doctor: the server's version") {
  Diagnosis d = pg_diagnosis(backend_uri());
  Finding v = check(d, "server-version");
  CHECK(v.verdict == Finding::Verdict::ok);
  CHECK_MESSAGE(v.detail.find("PostgreSQL 15") == 0, v.detail);
}

TEST_CASE("postgres doctor: a role without CREATE and no tables fails, naming the GRANT; the "
          "administrator's SQL makes it pass; a right taken away or a column dropped fails") {
  if (via_pgbouncer()) return; // only PgBouncer's own role logs in through it
  Role role;
  Diagnosis d = pg_diagnosis(role.uri);
  Finding rights = check(d, "role-rights");
  CHECK(rights.verdict == Finding::Verdict::fail);
  CHECK_MESSAGE(rights.fix.find("GRANT CREATE ON SCHEMA \"public\" TO \"" + role.name + "\";") == 0,
                rights.fix);
  CHECK_MESSAGE(rights.fix.find("simba doctor --sql postgres") != std::string::npos, rights.fix);
  Finding tables = check(d, "tables");
  CHECK(tables.verdict == Finding::Verdict::fail);
  CHECK_MESSAGE(tables.detail.find("tables \"" + role.prefix + "leases\"") != std::string::npos,
                tables.detail);
  CHECK_MESSAGE(tables.fix.find("simba doctor --sql postgres") != std::string::npos, tables.fix);

  role.admin.sql(simba::backend::pg::setup_sql("public", role.prefix, role.name));
  d = pg_diagnosis(role.uri);
  rights = check(d, "role-rights");
  tables = check(d, "tables");
  CHECK_MESSAGE(rights.verdict == Finding::Verdict::ok, rights.detail);
  CHECK_MESSAGE(tables.verdict == Finding::Verdict::ok, tables.detail);

  role.admin.sql("REVOKE DELETE ON \"" + role.prefix + "waiters\" FROM " + role.name);
  rights = check(pg_diagnosis(role.uri), "role-rights");
  CHECK(rights.verdict == Finding::Verdict::fail);
  CHECK_MESSAGE(rights.detail.find("DELETE on " + role.prefix + "waiters") != std::string::npos,
                rights.detail);
  CHECK(rights.fix ==
        "GRANT DELETE ON \"public\".\"" + role.prefix + "waiters\" TO \"" + role.name + "\";");

  role.admin.sql("ALTER TABLE \"" + role.prefix + "leases\" DROP COLUMN losses");
  tables = check(pg_diagnosis(role.uri), "tables");
  CHECK(tables.verdict == Finding::Verdict::fail);
  CHECK_MESSAGE(tables.detail.find("columns \"" + role.prefix + "leases\".losses") !=
                    std::string::npos,
                tables.detail);
}

TEST_CASE("postgres doctor: a role that may create finds the tables it has not made yet ok") {
  if (via_pgbouncer()) return;
  Role role;
  role.admin.sql("GRANT CREATE ON SCHEMA public TO " + role.name);
  Diagnosis d = pg_diagnosis(role.uri);
  Finding rights = check(d, "role-rights");
  CHECK_MESSAGE(rights.verdict == Finding::Verdict::ok, rights.detail);
  Finding tables = check(d, "tables");
  CHECK_MESSAGE(tables.verdict == Finding::Verdict::ok, tables.detail);
  CHECK(tables.detail.find("simba makes them at its first use") != std::string::npos);
  role.admin.sql("REVOKE CREATE ON SCHEMA public FROM " + role.name);
}

TEST_CASE("postgres doctor: LISTEN works directly, not through PgBouncer in transaction mode") {
  Diagnosis d = pg_diagnosis(with_listen(backend_uri()));
  Finding listen = check(d, "listen");
  if (via_pgbouncer()) {
    CHECK(listen.verdict == Finding::Verdict::warn);
    CHECK_MESSAGE(listen.detail.find("hand-overs wait for the lease's end (~12s)") !=
                      std::string::npos,
                  listen.detail);
    CHECK_MESSAGE(listen.fix.find("session pooling") != std::string::npos, listen.fix);
    // listen=off, as the docs advise there: nothing to warn of.
    Finding off = check(pg_diagnosis(backend_uri()), "listen");
    CHECK(off.verdict == Finding::Verdict::ok);
  } else {
    CHECK_MESSAGE(listen.verdict == Finding::Verdict::ok, listen.detail);
  }
}
