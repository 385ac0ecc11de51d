// etcd's JSON gateway: calls, members in turn, the login (client.hpp).
#include "backend/etcd/client.hpp"

#include "sys/clock.hpp"

#include <algorithm>
#include <cstdlib>

namespace simba::backend::etcd {

int64_t number(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) return std::strtoll(it->get<std::string>().c_str(), nullptr, 10);
  return 0;
}

std::string json_too_big(std::string_view text) {
  int depth = 0;
  size_t values = 0; // each ',' '[' '{' outside strings: about one value
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > k_max_depth) return "nested deeper than " + std::to_string(k_max_depth);
      ++values;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',') {
      ++values;
    }
  }
  if (values > k_max_values) return "of more than " + std::to_string(k_max_values) + " values";
  return "";
}

nlohmann::json parse_json(const std::string& text) {
  if (!json_too_big(text).empty()) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, false);
}

std::string text(const nlohmann::json& j, const char* key, const std::string& otherwise) {
  const nlohmann::json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : otherwise;
}

bool flag(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = member(j, key);
  return v.is_boolean() && v.get<bool>();
}

const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json none;
  if (!j.is_object()) return none;
  auto it = j.find(key);
  return it == j.end() ? none : *it;
}

Client::Client(const EtcdUri& uri) : m_uri(uri), m_conn(target_of(0)) {}

HttpTarget Client::target_of(size_t i) const {
  HttpTarget t;
  const EtcdUri::Node& n = m_uri.endpoints[i % m_uri.endpoints.size()];
  t.host = n.host;
  t.port = n.port;
  t.tls = m_uri.tls;
  t.tls_options.host = n.host;
  t.tls_options.ca_file = m_uri.tls_ca;
  t.tls_options.cert_file = m_uri.tls_cert;
  t.tls_options.key_file = m_uri.tls_key;
  return t;
}

// The gateway's error body: {"error": ..., "code": N, "message": ...}.
Call Client::answer_of(const HttpAnswer& a, bool write) const {
  Call c;
  nlohmann::json j = parse_json(a.body);
  if (a.status == 200 && j.is_object()) {
    c.status = Reply::Status::ok;
    c.json = std::move(j);
    return c;
  }
  int code = int(number(j, "code"));
  std::string message = j.is_object() && j.contains("message") && j["message"].is_string()
                            ? j["message"].get<std::string>()
                            : !json_too_big(a.body).empty()
                                ? "an answer " + json_too_big(a.body) + " (not etcd's gateway?)"
                                : "HTTP status " + std::to_string(a.status);
  c.error = "etcd: " + message;
  if (code == k_grpc_permission_denied ||
      (code == k_grpc_invalid_argument && message.find("user name") != std::string::npos)) {
    // A refusal ends simba with this line: what to grant, or to give.
    c.error += m_uri.user.empty()
                   ? ": the cluster has authentication on: give ?user=NAME in the URI and its "
                     "password in SIMBA_ETCD_PASSWORD"
                   : ": user " + m_uri.user + " needs readwrite on the prefix " + m_uri.prefix +
                         " (etcdctl --user root role grant-permission ROLE --prefix=true "
                         "readwrite " + m_uri.prefix + ", a role of " + m_uri.user + ")";
    c.status = Reply::Status::refused;
  }
  else if (code == k_grpc_invalid_argument || code == k_grpc_not_found ||
           code == k_grpc_unauthenticated || !write)
    c.status = Reply::Status::failed;
  else
    c.status = Reply::Status::indeterminate;
  return c;
}

std::string Client::connect(int64_t deadline) {
  std::string why;
  const size_t members = m_uri.endpoints.size();
  for (size_t tried = 0; tried < members; ++tried) {
    // Each member its share of what is left: one that drops the packets
    // (a host gone, a firewall) must not take the time of those after it.
    int64_t now = sys::boottime_ms();
    int64_t share = std::max<int64_t>(1, (deadline - now) / int64_t(members - tried));
    std::string e = m_conn.open(now + share);
    if (e.empty()) return "";
    const HttpTarget t = target_of(m_current);
    why = t.host + ":" + std::to_string(t.port) + ": " + e;
    next_member();
  }
  return why;
}

void Client::next_member() {
  m_current = (m_current + 1) % m_uri.endpoints.size();
  m_conn.retarget(target_of(m_current));
}

std::string Client::authenticate(int64_t deadline, bool& refused) {
  refused = false;
  nlohmann::json body = {{"name", m_uri.user}, {"password", m_uri.password}};
  HttpAnswer a = m_conn.post("/v3/auth/authenticate", body.dump(), "", deadline);
  if (a.status == 0) return a.error;
  Call c = answer_of(a, false);
  if (!c.ok()) {
    refused = a.status >= 400 && a.status < 500;
    return "etcd refused the login of user " + m_uri.user + ": " + c.error.substr(6) +
           (refused ? " (its password comes from SIMBA_ETCD_PASSWORD)" : "");
  }
  m_token = text(c.json, "token");
  if (m_token.empty()) return "etcd sent no token for user " + m_uri.user;
  // The token goes into a header of every call, to every member: a member
  // that sent CR, LF or other bytes outside a header's visible ASCII could
  // write headers of its own into requests to the others.
  for (unsigned char ch : m_token)
    if (ch < 0x21 || ch > 0x7e) {
      m_token.clear();
      return "etcd sent a token for user " + m_uri.user + " that no header can carry";
    }
  return "";
}

std::string Client::token(int64_t deadline) {
  bool refused = false;
  if (m_token.empty() && !m_uri.user.empty()) authenticate(deadline, refused);
  return m_token;
}

Call Client::call(const std::string& path, const nlohmann::json& body, bool write,
                  int64_t deadline) {
  const std::string text = body.dump();
  std::string last = "no etcd member answered";
  bool relogged = false;
  for (size_t tried = 0; tried < m_uri.endpoints.size() && sys::boottime_ms() < deadline;) {
    if (!m_uri.user.empty() && m_token.empty()) {
      bool refused = false;
      std::string why = authenticate(deadline, refused);
      if (refused) return Call{Reply::Status::refused, {}, why, 0};
      if (!why.empty()) {
        last = why;
        next_member();
        ++tried;
        continue;
      }
    }
    int64_t sent_at = sys::boottime_ms();
    HttpAnswer a = m_conn.post(path, text, m_token, deadline);
    if (a.status != 0) {
      Call c = answer_of(a, write);
      c.sent_at = sent_at;
      // An expired token: nothing was applied; log in again, once.
      if (!c.ok() && !relogged && !m_uri.user.empty() &&
          c.error.find("invalid auth token") != std::string::npos) {
        m_token.clear();
        relogged = true;
        continue;
      }
      // A member without a leader, or too slow to commit: the next call
      // goes to another member (a read, whose retry is harmless, at once).
      int code = c.ok() ? 0 : int(number(parse_json(a.body), "code"));
      if (code == k_grpc_unavailable || code == k_grpc_deadline_exceeded) {
        next_member();
        if (!write) {
          last = c.error;
          ++tried;
          continue;
        }
      }
      return c;
    }
    if (a.sent && write) {
      // It may have been applied; a member that took it and went silent
      // (stopped, cut off) gets no more calls for now.
      next_member();
      return Call{Reply::Status::indeterminate, {}, a.error, sent_at};
    }
    const HttpTarget t = target_of(m_current);
    last = t.host + ":" + std::to_string(t.port) + ": " + a.error;
    next_member();
    ++tried;
  }
  return Call{Reply::Status::failed, {}, last, 0};
}

} // namespace simba::backend::etcd
