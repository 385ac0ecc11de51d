// The administrator's SQL of the PostgreSQL backend (backend/postgres/
// setup_sql.hpp): what it holds, what simba needs of the tables, and that
// the copies in man/simba.1 (POSTGRESQL) and docs/backends/postgres.md are
// exactly setup_sql("public", "simba_", "simba") -- a change of the tables
// that is not copied there fails here (the issue of a stale man page:
// columns missing from the SQL it printed).
#include "backend/postgres/setup_sql.hpp"

#include "backend/uri.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <variant>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace simba::backend::pg;

namespace {

std::string read_source(const std::string& path) {
  std::ifstream in(std::string(SIMBA_SOURCE_DIR) + "/" + path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines after the line `marker` from the line after `open` up to the
// line `close` (each a whole line), joined with newlines.
std::string block_after(const std::string& text, const std::string& marker, const std::string& open,
                        const std::string& close) {
  std::istringstream in(text);
  std::string line, out;
  bool found = false, inside = false;
  while (std::getline(in, line)) {
    if (!found) {
      found = line == marker;
    } else if (!inside) {
      inside = line.rfind(open, 0) == 0;
    } else if (line == close) {
      return out;
    } else {
      out += line + "\n";
    }
  }
  FAIL_CHECK("no block after " << marker);
  return "";
}

const RequiredTable* find(const std::vector<RequiredTable>& tables, const std::string& name) {
  for (const RequiredTable& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

} // namespace

TEST_SUITE("backend::postgres::setup_sql") {
  TEST_CASE("the tables and columns simba needs are read from the schema's SQL") {
    std::vector<RequiredTable> tables = required_tables("a\"b", "p_");
    REQUIRE(tables.size() == 4);
    const RequiredTable* leases = find(tables, "p_leases");
    REQUIRE(leases != nullptr);
    // CREATE TABLE's columns, then the ALTERs' (those of a simba without status).
    CHECK(leases->columns.front() == "mutex");
    CHECK(leases->columns.size() == 25);
    for (const char* c : {"owner", "once_finished_at", "holder", "acquisitions", "losses",
                          "lost_token", "lease_ms", "once_offset"})
      CHECK_MESSAGE(std::count(leases->columns.begin(), leases->columns.end(), c) == 1, c);
    REQUIRE(find(tables, "p_server") != nullptr);
    CHECK(find(tables, "p_server")->columns ==
          std::vector<std::string>{"id", "run", "until_ms", "longest"});
    REQUIRE(find(tables, "p_waiters") != nullptr);
    CHECK(find(tables, "p_waiters")->columns.back() == "holder");
    REQUIRE(find(tables, "p_history") != nullptr);
    CHECK(find(tables, "p_history")->columns.size() == 12);
    CHECK(find(tables, "p_history")->columns.back() == "by_owner");
  }

  TEST_CASE("what is missing is named: tables, then columns") {
    std::vector<RequiredTable> req = {{"p_leases", {"mutex", "losses", "reason"}},
                                      {"p_history", {"seq"}}};
    CHECK(describe_missing(req, {{"p_leases", "mutex"},
                                 {"p_leases", "losses"},
                                 {"p_leases", "reason"},
                                 {"p_history", "seq"}}) == "");
    CHECK(describe_missing(req, {{"p_leases", "mutex"}}) ==
          "tables \"p_history\"; columns \"p_leases\".losses, \"p_leases\".reason");
    CHECK(describe_missing(req, {}) == "tables \"p_leases\", \"p_history\"");
  }

  TEST_CASE("the grants: USAGE on the schema and each table's rights, every name quoted") {
    std::string sql = setup_sql("my schema", "p_", "r\"x");
    CHECK(sql.rfind("CREATE SCHEMA IF NOT EXISTS \"my schema\";\n", 0) == 0);
    CHECK(sql.find("GRANT USAGE ON SCHEMA \"my schema\" TO \"r\"\"x\";\n") != std::string::npos);
    CHECK(sql.find("GRANT SELECT, INSERT, UPDATE ON \"my schema\".\"p_leases\", \"my "
                   "schema\".\"p_server\" TO \"r\"\"x\";\n") != std::string::npos);
    CHECK(sql.find("GRANT SELECT, INSERT, UPDATE, DELETE ON \"my schema\".\"p_waiters\", \"my "
                   "schema\".\"p_history\" TO \"r\"\"x\";\n") != std::string::npos);
  }

  TEST_CASE("the role of a URI: its user, else ?user=, else $PGUSER") {
    auto uri = [](const std::string& u) {
      return std::get<simba::backend::PostgresUri>(simba::backend::parse_backend_uri(u));
    };
    CHECK(uri_role(uri("postgres://al%20ice:pw@db/x?schema=s")) == "al ice");
    CHECK(uri_role(uri("postgres://bob@db:5432/x")) == "bob");
    CHECK(uri_role(uri("postgres://db/x?user=carol&sslmode=disable")) == "carol");
    setenv("PGUSER", "dave", 1);
    CHECK(uri_role(uri("postgres://db/x")) == "dave");
    unsetenv("PGUSER");
    CHECK(!uri_role(uri("postgres://db/x")).empty());
    CHECK(setup_sql(uri("postgres://bob@db/x?schema=s&prefix=p_")) == setup_sql("s", "p_", "bob"));
  }

  TEST_CASE("man/simba.1 (POSTGRESQL) prints setup_sql() as it is") {
    std::string man =
        block_after(read_source("man/simba.1"),
                    ".\\\" setup-sql: setup_sql(\"public\", \"simba_\", \"simba\")", ".RS", ".RE");
    CHECK(man == setup_sql("public", "simba_", "simba"));
  }

  TEST_CASE("docs/backends/postgres.md prints setup_sql() as it is") {
    std::string docs = block_after(
        read_source("docs/backends/postgres.md"),
        "<!-- runnable: pg-setup-grants (tests/e2e/test_docs_postgres_setup.sh) -->", "```", "```");
    CHECK(docs == setup_sql("public", "simba_", "simba"));
  }
}
