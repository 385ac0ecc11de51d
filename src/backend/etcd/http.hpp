#pragma once
// HTTP/1.1 for etcd's JSON gateway, on one kept-alive connection to one
// member: a POST and its whole answer (Content-Length or chunked), or a
// POST whose chunked answer is a stream read as it comes (the watch).
// Every read and write is bounded by a deadline (net/deadline_io.hpp);
// TLS through net/tls.hpp. Nothing here knows etcd: bodies are bytes.
#include "backend/net/tls.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace simba::backend::etcd {

struct HttpAnswer {
  int status = 0;   // the HTTP status; 0: no answer
  std::string body; // the whole body, chunks joined
  std::string error; // when status is 0: why
  // When status is 0: whether any byte of the request left (it may have
  // been applied), so the caller knows whether to call it failed.
  bool sent = false;
};

struct HttpTarget {
  std::string host;
  int port = 0;
  bool tls = false;
  net::TlsOptions tls_options;
};

class HttpConnection {
public:
  explicit HttpConnection(HttpTarget target) : m_target(std::move(target)) {}
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;
  ~HttpConnection() { close(); }

  // POST `path` with `body` (JSON), `auth` as the Authorization header
  // unless empty; connects first when needed. A connection that was idle
  // and got closed by the server is opened again once (nothing was sent).
  HttpAnswer post(const std::string& path, const std::string& body, const std::string& auth,
                  int64_t deadline);

  // A POST whose answer streams (chunked): "" once the status line and
  // headers came with status 200, else why not. Then fd() is polled, and
  // read_stream() takes what came.
  std::string open_stream(const std::string& path, const std::string& body,
                          const std::string& auth, int64_t deadline);
  // The stream's complete lines (the gateway writes one JSON message a
  // line) that came since the last call, without blocking; "" or why the
  // stream is over (then close()).
  std::string read_stream(std::vector<std::string>& lines);

  // Connects unless connected: "" or why not.
  std::string open(int64_t deadline) { return m_fd >= 0 ? "" : connect(deadline); }

  int fd() const { return m_fd; }
  bool connected() const { return m_fd >= 0; }
  const HttpTarget& target() const { return m_target; }
  // Closes the connection; the next call goes to `t`.
  void retarget(HttpTarget t) {
    close();
    m_target = std::move(t);
  }
  void close();

private:
  std::string connect(int64_t deadline);
  std::string send(const std::string& out, int64_t deadline, bool& sent);
  // One read into m_in (waiting until the deadline); "" or why not.
  std::string fill(int64_t deadline);
  std::string read_head(int64_t deadline, int& status, bool& chunked, long& length,
                        bool& closes);
  std::string read_body(int64_t deadline, bool chunked, long length, std::string& body);
  // Moves complete chunks of m_in into m_stream; "" or why the stream ends.
  std::string take_chunks(bool& ended);
  std::string request(const std::string& path, const std::string& body,
                      const std::string& auth) const;

  HttpTarget m_target;
  int m_fd = -1;
  std::unique_ptr<net::TlsSession> m_tls;
  std::string m_in;     // read, not yet parsed
  std::string m_stream; // a stream's body, not yet split into lines
};

// The answers no etcd message comes near: a longer one is refused.
constexpr size_t k_max_http_body = 64 << 20;

} // namespace simba::backend::etcd
