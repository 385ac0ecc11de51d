// etcd URIs: etcd:// and etcds:// into an EtcdUri, and back into a
// description without the password (uri.hpp). The password is never in the
// URI: it comes from SIMBA_ETCD_PASSWORD (argv is visible in ps).
#include "backend/uri.hpp"
#include "backend/uri_parts.hpp"

#include "core/duration.hpp"

#include <cstdlib>
#include <string>

namespace simba::backend {
using namespace uri_parts;

namespace {

constexpr const char* k_form = "expected etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX]";

// HOST[:PORT] or [V6]:PORT
EtcdUri::Node parse_node(const std::string& item, const std::string& shown) {
  EtcdUri::Node n;
  std::string port;
  if (!item.empty() && item[0] == '[') {
    auto close = item.find(']');
    if (close == std::string::npos) bad_uri(shown, "an IPv6 address without its ']'");
    n.host = item.substr(1, close - 1);
    if (close + 1 < item.size()) {
      if (item[close + 1] != ':') bad_uri(shown, k_form);
      port = item.substr(close + 2);
    }
  } else {
    auto colon = item.find(':');
    n.host = item.substr(0, colon);
    if (colon != std::string::npos) port = item.substr(colon + 1);
  }
  if (n.host.empty()) bad_uri(shown, std::string("an empty host: ") + k_form);
  if (!port.empty() || item.find(':') != std::string::npos) {
    long p = parse_number(port, 65535, "the port", shown);
    if (p == 0) bad_uri(shown, "the port must be 1 to 65535");
    n.port = static_cast<int>(p);
  }
  return n;
}

void parse_etcd_query(const std::string& query, EtcdUri& u, const std::string& shown) {
  for_each_query_item(
      query, shown, [&](const std::string& name, const std::string& value, const std::string&) {
        std::string* file = name == "cacert" ? &u.tls_ca
                            : name == "cert" ? &u.tls_cert
                            : name == "key"  ? &u.tls_key
                                             : nullptr;
        if (file) {
          if (!u.tls) bad_uri(shown, "'" + name + "' needs TLS: etcds://");
          if (value.empty()) bad_uri(shown, "an empty " + name + " file");
          *file = value;
        } else if (name == "timeout") {
          u.timeout_ms = core::parse_duration(value, "timeout in the backend URI");
          if (u.timeout_ms <= 0) bad_uri(shown, "the timeout must be positive");
        } else if (name == "user") {
          if (value.empty()) bad_uri(shown, "an empty user");
          u.user = value;
        } else {
          bad_uri(shown, "unknown parameter '" + name +
                             "' (etcd takes timeout, user, and with etcds:// cacert, cert, key)");
        }
      });
  if (u.tls_cert.empty() != u.tls_key.empty())
    bad_uri(shown, "a client certificate needs both cert= and key=");
}

} // namespace

namespace uri_parts {

EtcdUri parse_etcd(bool tls, const std::string& rest, const std::string& shown) {
  if (rest.rfind("//", 0) != 0) bad_uri(shown, k_form);
  EtcdUri u;
  u.tls = tls;
  std::string base = rest.substr(2), query;
  if (auto q = base.find('?'); q != std::string::npos) {
    query = base.substr(q + 1);
    base.resize(q);
  }
  std::string authority = base.substr(0, base.find('/'));
  if (authority.find('@') != std::string::npos)
    bad_uri(shown, "no user info in an etcd URI: the user is ?user=NAME, its password comes "
                   "from " + std::string(k_etcd_password_env));
  if (authority.empty()) bad_uri(shown, std::string("no member: ") + k_form);
  for (size_t from = 0;;) {
    size_t comma = authority.find(',', from);
    u.endpoints.push_back(parse_node(authority.substr(from, comma - from), shown));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (auto slash = base.find('/'); slash != std::string::npos && slash + 1 < base.size()) {
    u.prefix = percent_decode(base.substr(slash + 1), shown);
    // In every key, several times a request: etcd refuses a request over
    // 1.5 MiB ("request is too large"), which a call retries without end.
    if (u.prefix.size() > 1023) bad_uri(shown, "a prefix of at most 1023 bytes");
    if (u.prefix.back() != '/') u.prefix += '/';
  }
  parse_etcd_query(query, u, shown);
  if (!u.user.empty()) {
    const char* pw = std::getenv(k_etcd_password_env);
    if (!pw || !*pw)
      bad_uri(shown, "user " + u.user + " needs its password in " + k_etcd_password_env);
    u.password = pw;
  }
  return u;
}

} // namespace uri_parts

std::string etcd_describe(const EtcdUri& u) {
  std::string s = u.tls ? "etcds://" : "etcd://";
  for (size_t i = 0; i < u.endpoints.size(); ++i) {
    const EtcdUri::Node& n = u.endpoints[i];
    bool v6 = n.host.find(':') != std::string::npos;
    s += (i ? "," : "") + (v6 ? "[" + n.host + "]" : n.host) + ":" + std::to_string(n.port);
  }
  s += "/" + percent_encode(u.prefix);
  if (!u.user.empty()) s += "?user=" + percent_encode(u.user);
  return s;
}

} // namespace simba::backend
