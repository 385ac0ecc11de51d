// Authentication during start-up (connection.hpp): trust, MD5, the
// password in clear (over TLS only), SCRAM-SHA-256 with the server's
// signature always checked and its keys cached (scram.hpp,
// scram_cache.hpp); Kerberos, GSSAPI and SSPI refused.
#include "backend/net/deadline_io.hpp"
#include "backend/postgres/base64.hpp"
#include "backend/postgres/connection.hpp"
#include "backend/postgres/md5.hpp"
#include "backend/postgres/pgpass.hpp"
#include "backend/postgres/scram.hpp"
#include "backend/postgres/scram_cache.hpp"
#include "backend/postgres/sha256.hpp"

#include <sys/random.h>

namespace simba::backend::pg {
namespace {

// Start-up messages are small; an ErrorResponse longer than this is not
// from PostgreSQL.
constexpr size_t k_max_startup_body = 64 << 10;

// Authentication request codes (AuthenticationXxx messages).
enum AuthCode {
  k_ok = 0,
  k_kerberos_v5 = 2,
  k_cleartext = 3,
  k_md5 = 5,
  k_scm_credentials = 6,
  k_gss = 7,
  k_gss_continue = 8,
  k_sspi = 9,
  k_sasl = 10,
  k_sasl_continue = 11,
  k_sasl_final = 12,
};

std::string nonce() {
  unsigned char raw[18];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return base64_encode(std::string_view(reinterpret_cast<char*>(raw), sizeof raw));
}

// The salt and iteration count of a SCRAM server-first message, for the
// cache's key ("" and 0 when missing: then no cache).
void salt_and_iterations(const std::string& server_first, std::string& salt, int& iterations) {
  salt.clear();
  iterations = 0;
  size_t at = 0;
  while (at < server_first.size()) {
    size_t comma = server_first.find(',', at);
    std::string part = server_first.substr(at, comma == std::string::npos ? comma : comma - at);
    at = comma == std::string::npos ? server_first.size() : comma + 1;
    if (part.rfind("s=", 0) == 0) salt = base64_decode(part.substr(2)).value_or("");
    if (part.rfind("i=", 0) == 0 && part.size() < 12 &&
        part.find_first_not_of("0123456789", 2) == std::string::npos && part.size() > 2)
      iterations = std::stoi(part.substr(2));
  }
}

} // namespace

struct Connection::Auth {
  Auth(const Endpoint& e, const ConnInfo& c) : endpoint(e), ci(c) {}
  const Endpoint& endpoint;
  const ConnInfo& ci;
  std::string password;
  bool password_from_file = false;
  bool done = false; // AuthenticationOk
  std::unique_ptr<scram::Client> scram;
  int sasl_step = 0; // messages of the exchange received
  scram::Keys keys;
  scram_cache::CacheKey cache_key;
  bool store_keys = false;

  // The password: the URI's or PGPASSWORD, else the password file's line
  // for this host; "" and `why` when there is none.
  std::string find_password(std::string& why);
};

std::string Connection::handshake(const Endpoint& e, const ConnInfo& ci, int64_t deadline) {
  Auth a(e, ci);
  for (;;) {
    wire::Message m;
    std::string why = read_message(m, k_max_startup_body, deadline);
    if (!why.empty()) return why;
    switch (m.type) {
    case 'R':
      why = answer_auth(m, a, deadline);
      if (!why.empty()) return why;
      break;
    case 'E': {
      wire::ServerError err = wire::parse_error(m.body);
      why = wire::error_text(err);
      if (a.password_from_file && err.sqlstate == "28P01")
        why += " (the password came from " + ci.passfile + ")";
      return why;
    }
    case 'K': {
      wire::Reader r(m.body);
      m_pid = r.i32();
      m_secret = r.i32();
      break;
    }
    case 'v': break; // NegotiateProtocolVersion: 3.0 it is
    case 'Z':
      if (!a.done) return "the server said ready before authentication (not PostgreSQL?)";
      return "";
    default: return "an unexpected message during start-up (not PostgreSQL, or a broken server?)";
    }
  }
}

std::string Connection::send_password_message(const std::string& body, int64_t deadline) {
  std::string out;
  size_t at = wire::begin(out, 'p');
  out += body;
  wire::end(out, at);
  size_t sent = 0;
  return send(out, deadline, sent);
}

std::string Connection::answer_auth(const wire::Message& m, Auth& a, int64_t deadline) {
  wire::Reader r(m.body);
  int32_t code = r.i32();
  if (!r.ok()) return "a truncated authentication request from the server";
  if (a.done) return "an authentication request after authentication (a broken server?)";
  std::string why, password;
  switch (code) {
  case k_ok:
    if (a.scram && a.sasl_step < 2)
      return "the server ended SCRAM authentication without proving that it knows the password "
             "(no server signature): refused";
    if (a.store_keys) scram_cache::store(a.cache_key, a.keys);
    a.done = true;
    return "";
  case k_cleartext:
    if (!m_tls)
      return "the server asks for the password in clear text on a connection without TLS: refused "
             "(use sslmode=require, or scram-sha-256 in pg_hba.conf)";
    password = a.find_password(why);
    if (password.empty()) return why;
    return send_password_message(password + '\0', deadline);
  case k_md5: {
    std::string salt = r.bytes(4);
    if (!r.ok()) return "a truncated MD5 authentication request from the server";
    password = a.find_password(why);
    if (password.empty()) return why;
    return send_password_message(md5_password(password, a.ci.user, salt) + '\0', deadline);
  }
  case k_sasl:
  case k_sasl_continue:
  case k_sasl_final: return answer_sasl(code, r, a, deadline);
  case k_kerberos_v5:
  case k_gss:
  case k_gss_continue:
  case k_sspi:
    return "the server asks for Kerberos/GSSAPI/SSPI authentication, which simba does not "
           "support (use scram-sha-256 in pg_hba.conf)";
  case k_scm_credentials:
    return "the server asks for SCM credentials authentication, which simba does not support";
  default:
    return "an unknown authentication request (code " + std::to_string(code) + ") from the server";
  }
}

// SCRAM-SHA-256: the mechanism's choice and client-first, client-final,
// then the server's signature checked.
std::string Connection::answer_sasl(int code, wire::Reader& r, Auth& a, int64_t deadline) {
  std::string why;
  if (code == k_sasl) {
    if (a.scram) return "a second SASL request from the server";
    std::string offered, mechanism;
    for (std::string m = r.str(); r.ok() && !m.empty(); m = r.str()) {
      offered += (offered.empty() ? "" : ", ") + m;
      if (m == "SCRAM-SHA-256") mechanism = m;
    }
    if (!r.ok()) return "a truncated SASL request from the server";
    if (mechanism.empty())
      return "the server offers SASL mechanisms simba does not support (" + offered + ")";
    std::string password = a.find_password(why);
    if (password.empty()) return why;
    a.scram = std::make_unique<scram::Client>(password, nonce());
    std::string first = a.scram->client_first(), body = mechanism;
    body.push_back('\0');
    wire::put_i32(body, static_cast<int32_t>(first.size()));
    return send_password_message(body + first, deadline);
  }
  std::string data = r.bytes(r.left());
  if (!a.scram || a.sasl_step != (code == k_sasl_continue ? 0 : 1))
    return "a SASL message out of order from the server";
  ++a.sasl_step;
  if (code == k_sasl_final) {
    if (!a.scram->verify_server_final(data, why)) return "SCRAM authentication failed: " + why;
    return "";
  }
  std::string out;
  bool cached = false;
  if (a.ci.scram_cache) {
    salt_and_iterations(data, a.cache_key.salt, a.cache_key.iterations);
    a.cache_key.host = a.endpoint.host;
    a.cache_key.port = a.endpoint.port;
    // The user's key holds the password's digest too: cached keys stand
    // for the password they came from, never for another one given later.
    Digest pw = Sha256::of(a.cache_key.salt + '\0' + a.password);
    a.cache_key.user = a.ci.user + '\0' + base64_encode(as_bytes(pw));
    if (auto keys = scram_cache::load(a.cache_key)) a.keys = *keys, cached = true;
  }
  if (!a.scram->client_final(data, out, why, &a.keys, cached)) return "SCRAM: " + why;
  a.store_keys = a.ci.scram_cache && !cached && a.cache_key.iterations > 0;
  return send_password_message(out, deadline);
}

std::string Connection::Auth::find_password(std::string& why) {
  if (!password.empty()) return password;
  password = ci.password;
  if (password.empty()) {
    PassfileLookup p =
        passfile_password(ci.passfile, endpoint.host, endpoint.port, ci.dbname, ci.user);
    password = p.password;
    password_from_file = !p.password.empty();
    if (password.empty())
      why = "no password supplied" +
            (p.ignored_for_mode ? " (the password file " + ci.passfile +
                                      " was ignored: group or others may read it; chmod 600 it)"
                                : std::string());
  }
  return password;
}

} // namespace simba::backend::pg
