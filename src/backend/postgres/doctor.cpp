// simba doctor on PostgreSQL (doctor.hpp). What is read: the server's
// version, the catalog (pg_namespace, pg_class, pg_attribute) and the
// privilege functions (has_schema_privilege, has_table_privilege), all of
// which any role may call; and one LISTEN/NOTIFY on a channel of its own.
#include "backend/postgres/doctor.hpp"

#include "backend/certificate_check.hpp"

#include "backend/postgres/connection.hpp"
#include "backend/postgres/setup_sql.hpp"
#include "backend/postgres/statements.hpp"
#include "core/duration.hpp"
#include "sys/clock.hpp"

#include <unistd.h>

#include <algorithm>
#include <set>

namespace simba::backend::pg {
namespace {

using Verdict = Finding::Verdict;

// The oldest server simba's SQL runs on: ADD COLUMN IF NOT EXISTS (9.6),
// INSERT ... ON CONFLICT (9.5). The tests run PostgreSQL 15.
constexpr int k_min_version_num = 90600;

// Where an administrator finds the SQL that makes the tables and grants
// the rights.
const std::string k_sql_hint =
    "have an administrator run the SQL of `simba doctor --sql postgres` (man simba, POSTGRESQL)";

struct Context {
  const PostgresUri& uri;
  const DiagnoseOptions& options;
  Connection& conn;
  int64_t budget_ms;
  int64_t deadline() const { return sys::boottime_ms() + budget_ms; }
};

Finding finding(const char* check, Verdict v, std::string detail, std::string fix = "") {
  return Finding{check, v, std::move(detail), std::move(fix)};
}

void check_version(Context& c, Diagnosis& found) {
  Result r = c.conn.query("SELECT current_setting('server_version_num'), "
                          "current_setting('server_version')",
                          {}, c.deadline());
  if (!r.ok || r.rows.size() != 1 || r.rows[0].size() != 2) {
    found.push_back(finding("server-version", Verdict::fail,
                            "cannot read the server's version: " + r.error,
                            "check the connection and the role"));
    return;
  }
  long num = std::strtol(r.rows[0][0].c_str(), nullptr, 10);
  const std::string& version = r.rows[0][1];
  if (num < k_min_version_num)
    found.push_back(finding("server-version", Verdict::fail,
                            "PostgreSQL " + version + " is older than simba's SQL needs (9.6)",
                            "upgrade the server (simba is tested on PostgreSQL 15)"));
  else
    found.push_back(finding("server-version", Verdict::ok,
                            "PostgreSQL " + version + " (simba needs 9.6 or later; tested on 15)"));
}

// What the catalog says of the schema, its tables and the role's rights.
struct State {
  std::string role, database;
  bool schema_exists = false, schema_usage = false, schema_create = false, database_create = false;
  // per table present: the rights it lacks ("DELETE, UPDATE"), whether the role owns it
  std::vector<std::pair<std::string, std::string>> lacking;
  std::set<std::string> tables;
  bool owns_all = true;
  std::string missing; // describe_missing()'s
};

constexpr const char* k_schema_rights = R"(SELECT current_user, current_database(),
  n.oid IS NOT NULL, coalesce(has_schema_privilege(n.oid, 'USAGE'), false),
  coalesce(has_schema_privilege(n.oid, 'CREATE'), false),
  has_database_privilege(current_database(), 'CREATE')
FROM (SELECT $1::name AS want) w LEFT JOIN pg_namespace n ON n.nspname = w.want)";

constexpr const char* k_table_rights = R"(SELECT c.relname,
  has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'),
  has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'),
  pg_has_role(c.relowner, 'USAGE')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND left(c.relname, length($2)) = $2 AND c.relkind IN ('r', 'p'))";

// The rights of `needed` ("SELECT, INSERT, UPDATE") that `row` (of
// k_table_rights) lacks, comma-separated.
std::string lacking_rights(const std::string& needed, const std::vector<std::string>& row) {
  const char* names[] = {"SELECT", "INSERT", "UPDATE", "DELETE"};
  std::string out;
  for (int i = 0; i < 4; ++i)
    if (needed.find(names[i]) != std::string::npos && row[1 + i] != "t")
      out += (out.empty() ? "" : ", ") + std::string(names[i]);
  return out;
}

// "" or why the catalog could not be read.
std::string read_state(Context& c, State& s) {
  Result r = c.conn.query(k_schema_rights, {c.uri.schema}, c.deadline());
  if (!r.ok || r.rows.size() != 1 || r.rows[0].size() != 6) return r.error;
  const std::vector<std::string>& row = r.rows[0];
  s.role = row[0];
  s.database = row[1];
  s.schema_exists = row[2] == "t";
  s.schema_usage = row[3] == "t";
  s.schema_create = row[4] == "t";
  s.database_create = row[5] == "t";
  Result t = c.conn.query(k_table_rights, {c.uri.schema, c.uri.prefix}, c.deadline());
  if (!t.ok) return t.error;
  for (const TableRights& want : table_rights()) {
    std::string name = c.uri.prefix + want.table;
    for (const std::vector<std::string>& trow : t.rows) {
      if (trow.size() != 6 || trow[0] != name) continue;
      s.tables.insert(name);
      if (trow[5] != "t") s.owns_all = false;
      std::string lacks = lacking_rights(want.rights, trow);
      if (!lacks.empty()) s.lacking.emplace_back(name, lacks);
    }
  }
  Result cols = c.conn.query(k_columns_present, {c.uri.schema, c.uri.prefix}, c.deadline());
  if (!cols.ok) return cols.error;
  s.missing = describe_missing(required_tables(c.uri.schema, c.uri.prefix), cols.rows);
  return "";
}

// The role may make what is missing itself at its first use (the
// backend's CREATE ... IF NOT EXISTS and ALTER ... ADD COLUMN IF NOT
// EXISTS): CREATE where the tables go, and every table there its own.
bool can_make_missing(const State& s) {
  bool may_create = s.schema_exists ? s.schema_create : s.database_create;
  return may_create && s.owns_all;
}

void check_rights(Context& c, const State& s, Diagnosis& found) {
  const std::string to = " TO " + quote_identifier(s.role) + ";";
  const std::string schema = quote_identifier(c.uri.schema);
  if (s.schema_exists && !s.schema_usage) {
    found.push_back(finding("role-rights", Verdict::fail,
                            "role " + s.role + " lacks USAGE on schema " + schema,
                            "GRANT USAGE ON SCHEMA " + schema + to));
    return;
  }
  std::string detail, fix;
  for (const auto& [table, rights] : s.lacking) {
    detail += (detail.empty() ? "" : "; ") + rights + " on " + table;
    fix += (fix.empty() ? "" : " ") + std::string("GRANT ") + rights + " ON " + schema + "." +
           quote_identifier(table) + to;
  }
  if (!detail.empty()) {
    found.push_back(
        finding("role-rights", Verdict::fail, "role " + s.role + " lacks " + detail, fix));
    return;
  }
  if (s.tables.size() < table_rights().size() && !can_make_missing(s)) {
    std::string where = s.schema_exists ? "schema " + schema : "database " + s.database;
    std::string grant = s.schema_exists
                            ? "GRANT CREATE ON SCHEMA " + schema + to
                            : "GRANT CREATE ON DATABASE " + quote_identifier(s.database) + to;
    found.push_back(finding(
        "role-rights", Verdict::fail,
        "role " + s.role + " may not create simba's missing tables (no CREATE on " + where + ")",
        grant + " or " + k_sql_hint));
    return;
  }
  found.push_back(finding("role-rights", Verdict::ok,
                          "role " + s.role +
                              (s.tables.size() == table_rights().size()
                                   ? " may read and write simba's tables"
                                   : " may create simba's tables in schema " + schema)));
}

void check_tables(Context& c, const State& s, Diagnosis& found) {
  const std::string where = "in schema " + quote_identifier(c.uri.schema);
  if (s.missing.empty())
    found.push_back(
        finding("tables", Verdict::ok, "every table and column simba needs is there " + where));
  else if (can_make_missing(s))
    found.push_back(finding("tables", Verdict::ok,
                            "missing " + where + ": " + s.missing +
                                "; simba makes them at its first use (the role may)"));
  else
    found.push_back(
        finding("tables", Verdict::fail, "missing " + where + ": " + s.missing, k_sql_hint));
}

// A NOTIFY from this connection to another one LISTENing (as a release
// wakes a waiter): through PgBouncer in transaction mode the LISTEN stays
// on a server connection that went back to the pool, and nothing comes.
void check_listen(Context& c, Diagnosis& found) {
  if (!c.uri.listen) {
    found.push_back(finding("listen", Verdict::ok,
                            "listen=off: waiters wake on their timers (when the lease ends)"));
    return;
  }
  Connection listener;
  std::string why = listener.connect(c.uri, c.deadline());
  std::string channel = "simba_doctor_" + std::to_string(getpid());
  Result r;
  if (why.empty()) r = listener.script("LISTEN " + quote_identifier(channel), c.deadline());
  if (!why.empty() || !r.ok) {
    found.push_back(finding("listen", Verdict::fail,
                            "cannot LISTEN: " + (why.empty() ? r.error : why),
                            "give listen=off in the URI (waiters then wake on their timers)"));
    return;
  }
  const int64_t start = sys::boottime_ms();
  Result sent = c.conn.query("SELECT pg_notify($1, 'doctor')", {channel}, c.deadline());
  bool came = sent.ok && listener.await_payload("doctor", c.deadline());
  listener.script("UNLISTEN " + quote_identifier(channel), c.deadline());
  if (came) {
    found.push_back(finding("listen", Verdict::ok,
                            "a NOTIFY reached a LISTENing session in " +
                                std::to_string(sys::boottime_ms() - start) + " ms"));
    return;
  }
  std::string ttl =
      c.options.ttl_ms > 0 ? core::format_duration(c.options.ttl_ms) : std::string("ttl");
  found.push_back(finding(
      "listen", Verdict::warn,
      sent.ok ? "a NOTIFY did not reach a LISTENing session within " +
                    core::format_duration(c.budget_ms) +
                    " (PgBouncer in transaction mode?): hand-overs wait for the lease's end (~" +
                    ttl + ")"
              : "cannot NOTIFY: " + sent.error,
      "connect directly or use session pooling, or give listen=off in the URI"));
}

// The server's certificate, when the connection speaks TLS: how sslmode
// had it checked, and when it ends.
void check_tls(Context& c, Diagnosis& found) {
  const net::TlsSession* tls = c.conn.tls();
  if (!tls) return;
  ConnInfo ci;
  parse_conninfo(c.uri.conninfo, {}, ci); // as connect() read it: it connected
  std::string root = ci.sslrootcert.empty() ? std::string("the system's CAs") : ci.sslrootcert;
  std::string how = ci.sslmode == "verify-full" ? "is verified (against " + root + ", and its name)"
                    : ci.sslmode == "verify-ca"
                        ? "is verified against " + root + ", but not its name (sslmode=verify-ca)"
                        : "is not verified (sslmode=" + ci.sslmode + ")";
  int64_t end = tls->peer_not_after();
  if (end < 0) {
    found.push_back(finding("tls", Verdict::fail, "cannot read the server's certificate",
                            "check the server's ssl_cert_file"));
    return;
  }
  found.push_back(certificate_finding("TLS: the server's certificate " + how, end,
                                      "ssl_cert_file", sys::wall_ms() / 1000));
}

} // namespace

void diagnose(const PostgresUri& uri, Diagnosis& found, const DiagnoseOptions& options) {
  Connection conn;
  Context c{uri, options, conn, options.timeout_ms > 0 ? options.timeout_ms : uri.timeout_ms};
  if (std::string why = conn.connect(uri, c.deadline()); !why.empty()) {
    found.push_back(finding("server-version", Verdict::fail, "cannot connect: " + why,
                            "see the connection check"));
    return;
  }
  check_version(c, found);
  check_tls(c, found);
  State s;
  if (std::string why = read_state(c, s); !why.empty()) {
    found.push_back(finding("role-rights", Verdict::fail, "cannot read the catalog: " + why,
                            "check the role's rights on the database"));
  } else {
    check_rights(c, s, found);
    check_tables(c, s, found);
  }
  check_listen(c, found);
}

} // namespace simba::backend::pg
