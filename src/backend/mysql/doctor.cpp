// simba doctor on MySQL (doctor.hpp). What is read: server variables,
// information_schema (the tables and the privileges any user may see of
// its own), one named lock taken and let go.
#include "backend/mysql/doctor.hpp"

#include "backend/mysql/connection.hpp"
#include "backend/mysql/mysql.hpp"
#include "backend/mysql/packets.hpp"
#include "backend/uri_parts.hpp"
#include "sys/clock.hpp"


#include <unistd.h>

namespace simba::backend::mysql {
namespace {

using Verdict = Finding::Verdict;

Finding finding(const char* check, Verdict v, std::string detail, std::string fix = "") {
  return Finding{check, v, std::move(detail), std::move(fix)};
}

// One row of one statement, or none.
bool one_row(Connection& conn, const std::string& sql, int64_t budget_ms, Row& row,
             std::string& why) {
  Result r = conn.query(sql, sys::boottime_ms() + budget_ms);
  if (!r.ok || r.sets.size() != 1 || r.sets[0].rows.size() != 1) {
    why = r.ok ? "an unexpected answer" : r.error;
    return false;
  }
  row = r.sets[0].rows[0];
  return true;
}

// The tables of the prefix, or the right to make them.
void check_tables(const MysqlUri& uri, Connection& conn, int64_t budget_ms, Diagnosis& found) {
  Row row;
  std::string why;
  const std::string names = "'" + uri.prefix + "leases', '" + uri.prefix + "server', '" +
                            uri.prefix + "run', '" + uri.prefix + "waiters', '" + uri.prefix +
                            "history'";
  if (!one_row(conn,
               "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
               "DATABASE() AND TABLE_NAME IN (" + names + ")), (SELECT COUNT(*) FROM "
               "information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = DATABASE() AND "
               "PRIVILEGE_TYPE = 'CREATE') + (SELECT COUNT(*) FROM "
               "information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'CREATE')",
               budget_ms, row, why)) {
    found.push_back(finding("tables", Verdict::fail, "cannot read information_schema: " + why,
                            "check the user's rights on the database"));
    return;
  }
  const std::string sql = "have an administrator run the SQL of " + setup_command(uri) +
                          " (docs/backends/mysql.md)";
  if (row[0] == "5")
    found.push_back(finding("tables", Verdict::ok, "simba's 5 tables are there (prefix " +
                                                       uri.prefix + ")"));
  else if (row[1] != "0")
    found.push_back(finding("tables", Verdict::ok,
                            "not all made yet; the user may create them: the first use does"));
  else
    found.push_back(finding("tables", Verdict::fail,
                            "simba's tables are missing and the user may not create them", sql));
}

void check_server(Connection& conn, int64_t budget_ms, Diagnosis& found) {
  Row row;
  std::string why;
  if (!one_row(conn,
               "SELECT VERSION(), @@read_only, @@log_bin, @@innodb_flush_log_at_trx_commit, "
               "@@tx_isolation",
               budget_ms, row, why) ||
      row.size() != 5) {
    found.push_back(finding("server", Verdict::fail, "cannot read the server's settings: " + why,
                            "check the connection and the user"));
    return;
  }
  found.push_back(finding("server-version", Verdict::ok, row[0]));
  if (row[1] == "1")
    found.push_back(finding("replication-role", Verdict::fail,
                            "the server is read-only (a replica?): no lease can be written",
                            "point the URI at the primary"));
  else
    found.push_back(finding("replication-role", Verdict::ok, "writable (a primary)"));
  if (row[3] != "1")
    found.push_back(finding(
        "durability", Verdict::warn,
        "innodb_flush_log_at_trx_commit=" + row[3] + ": a crash may lose the last writes",
        "keep quarantine=on (the default): no new lease after a restart for the longest lease"));
  else
    found.push_back(finding("durability", Verdict::ok, "innodb_flush_log_at_trx_commit=1"));
  found.push_back(finding("isolation", Verdict::ok,
                          "server default " + row[4] +
                              "; simba runs each call READ COMMITTED on SYSDATE(6), binlog " +
                              (row[2] == "1" ? "on" : "off")));
}

void check_hint(const MysqlUri& uri, Connection& conn, int64_t budget_ms, Diagnosis& found) {
  Row row;
  std::string why;
  const std::string name =
      wire::hex_literal("simba-doctor:" + uri.prefix + std::to_string(getpid()));
  if (one_row(conn, "SELECT GET_LOCK(" + name + ", 0) + RELEASE_LOCK(" + name + ")", budget_ms,
              row, why) &&
      row[0] == "2")
    found.push_back(finding("hand-over", Verdict::ok, "named locks (GET_LOCK) work"));
  else
    found.push_back(finding("hand-over", Verdict::warn,
                            "named locks do not work: " + (why.empty() ? row[0] : why),
                            "waiters will wake on their timers, not at a release"));
}

// TLS where it matters: not on a Unix socket; encryption without a checked
// certificate (prefer, require) lets whoever sits between answer for the
// server, and lease it.
void check_tls(const MysqlUri& uri, const Connection& conn, Diagnosis& found) {
  const bool checked = uri.tls == MysqlUri::Tls::verify_ca || uri.tls == MysqlUri::Tls::verify_full;
  const std::string fix = "tls=verify-full (and cacert=) on a network";
  if (!uri.socket.empty())
    found.push_back(finding("tls", Verdict::ok, "a Unix socket: this host only, no TLS needed"));
  else if (!conn.tls())
    found.push_back(finding("tls", Verdict::warn, "the connection is not encrypted", fix));
  else if (!checked)
    found.push_back(finding("tls", Verdict::warn,
                            "the connection is encrypted, but the server's certificate is not "
                            "checked (tls=prefer or require)",
                            fix));
  else
    found.push_back(finding("tls", Verdict::ok,
                            "the connection is encrypted, the server's certificate checked"));
}

} // namespace

std::string setup_command(const MysqlUri& uri) {
  // doctor --sql never connects: only the user, the database and the prefix
  // count, so the host is any ("localhost"). Each name percent-encoded: the
  // command is pasted into a shell, inside single quotes.
  std::string prefix = uri.prefix == "simba_" ? "" : "?prefix=" + uri.prefix;
  return "`simba doctor --sql mysql --backend 'mysql://" + uri_parts::percent_encode(uri.user, "") +
         "@localhost/" + uri_parts::percent_encode(uri.database, "") + prefix + "'`";
}

void diagnose(const MysqlUri& uri, Diagnosis& found, const DiagnoseOptions& options) {
  const int64_t budget_ms = options.timeout_ms > 0 ? options.timeout_ms : uri.timeout_ms;
  Connection conn;
  std::string why = conn.connect(uri, sys::boottime_ms() + budget_ms);
  if (!why.empty()) {
    found.push_back(finding("server", Verdict::fail, "cannot connect: " + why,
                            "check the URI, the password and the server"));
    return;
  }
  check_tls(uri, conn, found);
  check_server(conn, budget_ms, found);
  check_tables(uri, conn, budget_ms, found);
  check_hint(uri, conn, budget_ms, found);
}

} // namespace simba::backend::mysql
