// The administrator's SQL and the tables simba needs (setup_sql.hpp).
#include "backend/postgres/setup_sql.hpp"

#include "backend/accounts.hpp"

#include "backend/postgres/statements.hpp"
#include "backend/uri_parts.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <utility>

namespace simba::backend::pg {
namespace {

// A token of the schema's SQL: a word (keywords upper-cased), a quoted
// identifier (unquoted, `quoted` set), or one character of punctuation.
// String literals are skipped.
struct Token {
  std::string text;
  bool quoted = false;
};

std::vector<Token> tokens(const std::string& sql) {
  std::vector<Token> out;
  for (size_t i = 0; i < sql.size();) {
    char c = sql[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '"' || c == '\'') {
      std::string text;
      for (++i; i < sql.size(); ++i) {
        if (sql[i] == c && i + 1 < sql.size() && sql[i + 1] == c) {
          text += c;
          ++i;
        } else if (sql[i] == c) {
          break;
        } else {
          text += sql[i];
        }
      }
      ++i;
      if (c == '"') out.push_back({text, true});
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < sql.size() &&
             (std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_'))
        ++end;
      out.push_back({sql.substr(i, end - i), false});
      i = end;
    } else {
      out.push_back({std::string(1, c), false});
      ++i;
    }
  }
  return out;
}

bool is_word(const Token& t, const char* word) {
  if (t.quoted || t.text.size() != std::char_traits<char>::length(word)) return false;
  return std::equal(t.text.begin(), t.text.end(), word, [](char a, char b) {
    return std::toupper(static_cast<unsigned char>(a)) == b;
  });
}

// The words `seq` (upper case) at `at`.
bool words_at(const std::vector<Token>& t, size_t at, std::initializer_list<const char*> seq) {
  for (const char* w : seq)
    if (at >= t.size() || !is_word(t[at++], w)) return false;
  return true;
}

// schema.table at `at`: the table's name; `at` moves past it.
std::string table_at(const std::vector<Token>& t, size_t& at) {
  std::string name = at < t.size() ? t[at++].text : "";
  while (at + 1 < t.size() && t[at].text == "." && !t[at].quoted) {
    name = t[at + 1].text;
    at += 2;
  }
  return name;
}

bool is_constraint(const Token& t) {
  for (const char* w : {"PRIMARY", "CHECK", "UNIQUE", "CONSTRAINT", "FOREIGN", "EXCLUDE"})
    if (is_word(t, w)) return true;
  return false;
}

// The columns of CREATE TABLE's list, `at` on its "(": the first token of
// each item at depth 1 that is no constraint.
void columns_of_create(const std::vector<Token>& t, size_t at, std::vector<std::string>& out) {
  int depth = 0;
  bool item_start = false;
  for (; at < t.size(); ++at) {
    const Token& k = t[at];
    if (!k.quoted && k.text == "(") {
      if (++depth == 1) item_start = true;
      continue;
    }
    if (!k.quoted && k.text == ")") {
      if (--depth == 0) return;
      continue;
    }
    if (depth == 1 && !k.quoted && k.text == ",") {
      item_start = true;
      continue;
    }
    if (item_start && depth == 1 && !is_constraint(k)) out.push_back(k.text);
    item_start = false;
  }
}

RequiredTable& entry(std::vector<RequiredTable>& tables, const std::string& name) {
  for (RequiredTable& t : tables)
    if (t.name == name) return t;
  tables.push_back({name, {}});
  return tables.back();
}

} // namespace

const std::vector<TableRights>& table_rights() {
  static const std::vector<TableRights> rights = {
      {"leases", "SELECT, INSERT, UPDATE"},
      {"server", "SELECT, INSERT, UPDATE"},
      {"waiters", "SELECT, INSERT, UPDATE, DELETE"},
      {"history", "SELECT, INSERT, UPDATE, DELETE"},
  };
  return rights;
}

std::string setup_sql(const std::string& schema, const std::string& prefix,
                      const std::string& role) {
  Statements s = make_statements(schema, prefix);
  std::string sql = s.create_schema() + s.schema() + "\n";
  const std::string to = " TO " + quote_identifier(role) + ";\n";
  sql += "GRANT USAGE ON SCHEMA " + quote_identifier(schema) + to;
  // One GRANT per set of rights, its tables together.
  std::vector<std::pair<std::string, std::string>> grants; // rights, tables
  for (const TableRights& r : table_rights()) {
    std::string table = quote_identifier(schema) + "." + quote_identifier(prefix + r.table);
    auto same = std::find_if(grants.begin(), grants.end(),
                             [&](const auto& g) { return g.first == r.rights; });
    if (same == grants.end())
      grants.emplace_back(r.rights, table);
    else
      same->second += ", " + table;
  }
  for (const auto& [rights, tables] : grants) sql += "GRANT " + rights + " ON " + tables + to;
  return sql;
}

std::string uri_role(const PostgresUri& uri) {
  const std::string& c = uri.conninfo;
  size_t start = c.find("://");
  if (start != std::string::npos) {
    start += 3;
    size_t end = c.find_first_of("/?", start);
    std::string authority = c.substr(start, end == std::string::npos ? end : end - start);
    if (size_t at = authority.rfind('@'); at != std::string::npos) {
      std::string user = authority.substr(0, std::min(at, authority.find(':')));
      if (!user.empty()) return uri_parts::percent_decode(user, uri.shown);
    }
    if (size_t q = c.find('?'); q != std::string::npos) {
      std::string role;
      uri_parts::for_each_query_item(
          c.substr(q + 1), uri.shown,
          [&](const std::string& name, const std::string& value, const std::string&) {
            if (name == "user") role = value;
          });
      if (!role.empty()) return role;
    }
  }
  if (const char* env = std::getenv("PGUSER"); env && *env) return env;
  std::string me = accounts::effective_user_name();
  return me.empty() ? "simba" : me;
}

std::vector<RequiredTable> required_tables(const std::string& schema, const std::string& prefix) {
  return required_tables_in(make_statements(schema, prefix).schema());
}

std::vector<RequiredTable> required_tables_in(const std::string& schema_sql) {
  const std::vector<Token> t = tokens(schema_sql);
  std::vector<RequiredTable> tables;
  for (size_t at = 0; at < t.size(); ++at) {
    if (words_at(t, at, {"CREATE", "TABLE", "IF", "NOT", "EXISTS"})) {
      size_t name_at = at + 5;
      RequiredTable& table = entry(tables, table_at(t, name_at));
      columns_of_create(t, name_at, table.columns);
    } else if (words_at(t, at, {"ALTER", "TABLE"})) {
      size_t name_at = at + 2;
      RequiredTable& table = entry(tables, table_at(t, name_at));
      for (at = name_at; at < t.size() && t[at].text != ";"; ++at)
        if (words_at(t, at, {"ADD", "COLUMN", "IF", "NOT", "EXISTS"}) && at + 5 < t.size())
          table.columns.push_back(t[at + 5].text);
    }
  }
  return tables;
}

std::string probe_sql(const std::string& schema, const std::vector<RequiredTable>& tables) {
  std::string columns, from;
  for (size_t i = 0; i < tables.size(); ++i) {
    std::string alias = "t" + std::to_string(i);
    for (const std::string& c : tables[i].columns)
      columns += (columns.empty() ? "" : ", ") + alias + "." + quote_identifier(c);
    from += (from.empty() ? "" : ", ") + quote_identifier(schema) + "." +
            quote_identifier(tables[i].name) + " " + alias;
  }
  return "SELECT 1 FROM (SELECT " + columns + " FROM " + from + " LIMIT 0) t";
}

std::string describe_missing(const std::vector<RequiredTable>& required,
                             const std::vector<std::vector<std::string>>& present) {
  std::set<std::string> tables;
  std::set<std::pair<std::string, std::string>> columns;
  for (const std::vector<std::string>& row : present) {
    if (row.size() < 2) continue;
    tables.insert(row[0]);
    columns.emplace(row[0], row[1]);
  }
  std::string missing_tables, missing_columns;
  for (const RequiredTable& t : required) {
    if (!tables.count(t.name)) {
      missing_tables += (missing_tables.empty() ? "" : ", ") + quote_identifier(t.name);
      continue;
    }
    for (const std::string& c : t.columns)
      if (!columns.count({t.name, c}))
        missing_columns +=
            (missing_columns.empty() ? "" : ", ") + quote_identifier(t.name) + "." + c;
  }
  std::string out;
  if (!missing_tables.empty()) out = "tables " + missing_tables;
  if (!missing_columns.empty())
    out += (out.empty() ? "" : "; ") + std::string("columns ") + missing_columns;
  return out;
}

const char* const k_columns_present = R"(SELECT c.relname, coalesce(a.attname, '')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = $1 AND left(c.relname, length($2)) = $2 AND c.relkind IN ('r', 'p'))";

} // namespace simba::backend::pg
