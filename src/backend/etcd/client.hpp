#pragma once
// The calls of etcd's v3 JSON gateway: a JSON body POSTed to a path, its
// JSON answer, over one kept-alive connection (http.hpp) to the first
// member that answers, the next ones tried in turn when a request could not
// be sent. With ?user= it logs in first (/v3/auth/authenticate) and sends
// the token with every call, logging in again when the token expired.
// Errors are sorted as the contender needs them (Reply::Status): not
// applied, maybe applied, refused (a permission, the login).
#include "backend/backend.hpp"
#include "backend/etcd/http.hpp"
#include "backend/uri.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace simba::backend::etcd {

struct Call {
  Reply::Status status = Reply::Status::failed;
  nlohmann::json json; // the answer, when ok
  std::string error;   // when not ok: one line
  int64_t sent_at = 0; // sys::boottime_ms() just before the request that was answered
  bool ok() const { return status == Reply::Status::ok; }
};

class Client {
public:
  explicit Client(const EtcdUri& uri);

  // POSTs `body` to `path` ("/v3/kv/txn"...) by `deadline`
  // (sys::boottime_ms()). `write`: a request that changes something, whose
  // unanswered send is indeterminate rather than failed.
  Call call(const std::string& path, const nlohmann::json& body, bool write, int64_t deadline);

  // Connects (TCP, and TLS for etcds://) to the first member that takes
  // the connection, trying each in turn, without a request: "" or why none
  // could be reached. The next call goes on that connection.
  std::string connect(int64_t deadline);

  // Where the last answered call went, and the token it carried: the watch
  // connects there too.
  HttpTarget target() const { return target_of(m_current); }
  std::string token(int64_t deadline);
  const EtcdUri& uri() const { return m_uri; }
  void close() { m_conn.close(); }

private:
  HttpTarget target_of(size_t i) const;
  // Logs in: "" or why not (`refused` when the server said no).
  std::string authenticate(int64_t deadline, bool& refused);
  Call answer_of(const HttpAnswer& a, bool write) const;
  void next_member();

  const EtcdUri& m_uri;
  size_t m_current = 0;
  HttpConnection m_conn;
  std::string m_token;
};

// gRPC's status codes the gateway reports in its error bodies.
constexpr int k_grpc_invalid_argument = 3;
constexpr int k_grpc_not_found = 5; // e.g. a put on a lease that ran out
constexpr int k_grpc_deadline_exceeded = 4;
constexpr int k_grpc_permission_denied = 7;
constexpr int k_grpc_unavailable = 14;
constexpr int k_grpc_unauthenticated = 16;

// int64 fields come as strings ("42"), sometimes as numbers; absent: 0.
int64_t number(const nlohmann::json& j, const char* key);
// JSON as parse(text, nullptr, false) reads it, but discarded unparsed
// when it nests deeper than k_max_depth (etcd's answers and simba's values
// nest a few levels: 40 MB of "[[[..." took 2.8 GB parsed) or holds more
// than k_max_values values (a 64 MiB answer of keys, about 300 bytes of
// JSON each, holds 1.5 million; 60 MB of "0," took 7.6 GB and 50 s).
// json_too_big says why ("" when neither).
constexpr int k_max_depth = 32;
constexpr size_t k_max_values = 2'000'000;
std::string json_too_big(std::string_view text);
nlohmann::json parse_json(const std::string& text);
// The others, read so that nothing throws whatever the JSON holds (an
// answer from a broken gateway, a value another program wrote in simba's
// prefix): `otherwise` (text), false (flag), null (member) when `j` is no
// object or the field is absent or of another type.
std::string text(const nlohmann::json& j, const char* key, const std::string& otherwise = "");
bool flag(const nlohmann::json& j, const char* key);
const nlohmann::json& member(const nlohmann::json& j, const char* key);

} // namespace simba::backend::etcd
