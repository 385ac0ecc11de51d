// HTTP/1.1 on one connection (http.hpp).
#include "backend/etcd/http.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/net/dial.hpp"
#include "sys/clock.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

namespace simba::backend::etcd {
namespace {

bool header_is(const std::string& line, const char* name, std::string& value) {
  size_t n = std::strlen(name);
  if (line.size() <= n || line[n] != ':' || strncasecmp(line.c_str(), name, n) != 0) return false;
  size_t from = line.find_first_not_of(" \t", n + 1);
  value = from == std::string::npos ? "" : line.substr(from);
  return true;
}

} // namespace

void HttpConnection::close() {
  m_tls.reset();
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  m_in.clear();
  m_stream.clear();
}

std::string HttpConnection::connect(int64_t deadline) {
  close();
  if (std::string why = net::dial_host(m_target.host, m_target.port, deadline, m_fd); !why.empty())
    return why;
  int one = 1; // a request is one write: no Nagle delay behind it
  ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (m_target.tls) {
    m_tls = std::make_unique<net::TlsSession>();
    if (std::string e = m_tls->start(m_fd, m_target.tls_options, deadline); !e.empty()) {
      close();
      return e;
    }
  }
  return "";
}

std::string HttpConnection::request(const std::string& path, const std::string& body,
                                    const std::string& auth) const {
  // An IPv6 address is bracketed in a Host header (RFC 9110, 7.2).
  const bool v6 = m_target.host.find(':') != std::string::npos;
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: " +
                  (v6 ? "[" + m_target.host + "]" : m_target.host) +
                  "\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n";
  if (!auth.empty()) r += "Authorization: " + auth + "\r\n";
  return r + "\r\n" + body;
}

std::string HttpConnection::send(const std::string& out, int64_t deadline, bool& sent) {
  size_t n = 0;
  std::string why = m_tls ? m_tls->send_all(m_fd, out, deadline, n)
                          : net::send_all(m_fd, out, deadline, n);
  sent = n > 0;
  return why;
}

std::string HttpConnection::fill(int64_t deadline) {
  for (;;) {
    if (m_tls) {
      bool got = false;
      if (std::string e = m_tls->receive_some(m_fd, m_in, got); !e.empty()) return e;
      if (got) return "";
    } else {
      char buf[16384];
      size_t got = 0;
      if (std::string e = net::receive_some(m_fd, buf, sizeof buf, got); !e.empty()) return e;
      if (got) {
        m_in.append(buf, got);
        return "";
      }
    }
    if (m_in.size() > k_max_http_body) return "an answer over 64 MiB";
    if (!net::wait_for(m_fd, POLLIN, deadline)) return net::k_timed_out;
  }
}

std::string HttpConnection::read_head(int64_t deadline, int& status, bool& chunked, long& length,
                                      bool& closes) {
  size_t end;
  while ((end = m_in.find("\r\n\r\n")) == std::string::npos) {
    if (m_in.size() > 65536) return "HTTP headers over 64 KiB";
    if (std::string e = fill(deadline); !e.empty()) return e;
  }
  std::string head = m_in.substr(0, end + 2);
  m_in.erase(0, end + 4);
  if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return "not an HTTP answer";
  status = std::atoi(head.c_str() + 9);
  chunked = false;
  length = -1;
  closes = head.compare(0, 8, "HTTP/1.0") == 0;
  for (size_t at = head.find("\r\n") + 2; at < head.size();) {
    size_t eol = head.find("\r\n", at);
    std::string line = head.substr(at, eol - at), value;
    at = eol + 2;
    if (header_is(line, "Transfer-Encoding", value)) chunked = strcasestr(value.c_str(), "chunked");
    if (header_is(line, "Content-Length", value)) length = std::atol(value.c_str());
    if (header_is(line, "Connection", value)) closes = strcasecmp(value.c_str(), "close") == 0;
  }
  return "";
}

std::string HttpConnection::take_chunks(bool& ended) {
  ended = false;
  for (;;) {
    size_t eol = m_in.find("\r\n");
    if (eol == std::string::npos) return m_in.size() > 32 ? "a malformed chunk" : "";
    char* stop = nullptr;
    unsigned long size = std::strtoul(m_in.c_str(), &stop, 16);
    if (stop == m_in.c_str()) return "a malformed chunk";
    if (size > k_max_http_body) return "a chunk over 64 MiB";
    if (size == 0) {
      // the last chunk, then trailers (none from etcd) and an empty line
      size_t blank = m_in.find("\r\n\r\n", eol);
      if (blank == std::string::npos) return "";
      m_in.erase(0, blank + 4);
      ended = true;
      return "";
    }
    if (m_in.size() < eol + 2 + size + 2) return "";
    // Each chunk under the bound is not enough: a server that sends them
    // without end took gigabytes before the deadline.
    if (m_stream.size() + size > k_max_http_body) return "an answer over 64 MiB";
    m_stream.append(m_in, eol + 2, size);
    m_in.erase(0, eol + 2 + size + 2);
  }
}

std::string HttpConnection::read_body(int64_t deadline, bool chunked, long length,
                                      std::string& body) {
  if (chunked) {
    m_stream.clear();
    for (bool ended = false;;) {
      if (std::string e = take_chunks(ended); !e.empty()) return e;
      if (ended) break;
      if (std::string e = fill(deadline); !e.empty()) return e;
    }
    body = std::move(m_stream);
    m_stream.clear();
    return "";
  }
  if (length < 0) return "an answer without its length";
  if (size_t(length) > k_max_http_body) return "an answer over 64 MiB";
  while (m_in.size() < size_t(length))
    if (std::string e = fill(deadline); !e.empty()) return e;
  body = m_in.substr(0, length);
  m_in.erase(0, length);
  return "";
}

HttpAnswer HttpConnection::post(const std::string& path, const std::string& body,
                                const std::string& auth, int64_t deadline) {
  HttpAnswer a;
  // An idle connection that is readable was closed by the server (or got
  // what nobody asked for): a new one, once.
  bool reused = m_fd >= 0 && !net::readable_now(m_fd);
  if (!reused) {
    if (std::string e = connect(deadline); !e.empty()) {
      a.error = e;
      return a;
    }
  }
  std::string out = request(path, body, auth);
  std::string why = send(out, deadline, a.sent);
  if (!why.empty() && reused && !a.sent) {
    if (std::string e = connect(deadline); !e.empty()) {
      a.error = e;
      return a;
    }
    why = send(out, deadline, a.sent);
  }
  int status = 0;
  bool chunked = false, closes = false;
  long length = -1;
  if (why.empty()) why = read_head(deadline, status, chunked, length, closes);
  if (why.empty()) why = read_body(deadline, chunked, length, a.body);
  if (!why.empty()) {
    close();
    a.error = why;
    a.body.clear();
    return a;
  }
  a.status = status;
  if (closes) close();
  return a;
}

std::string HttpConnection::open_stream(const std::string& path, const std::string& body,
                                        const std::string& auth, int64_t deadline) {
  if (std::string e = connect(deadline); !e.empty()) return e;
  bool sent = false;
  int status = 0;
  bool chunked = false, closes = false;
  long length = -1;
  std::string why = send(request(path, body, auth), deadline, sent);
  if (why.empty()) why = read_head(deadline, status, chunked, length, closes);
  if (why.empty() && (status != 200 || !chunked))
    why = "HTTP status " + std::to_string(status) + " for a stream";
  if (!why.empty()) close();
  return why;
}

std::string HttpConnection::read_stream(std::vector<std::string>& lines) {
  if (m_fd < 0) return "not connected";
  std::string why;
  for (;;) { // whatever the socket has, without waiting
    size_t before = m_in.size();
    if (m_tls) {
      bool got = false;
      why = m_tls->receive_some(m_fd, m_in, got);
    } else {
      char buf[16384];
      size_t got = 0;
      why = net::receive_some(m_fd, buf, sizeof buf, got);
      m_in.append(buf, got);
    }
    if (!why.empty() || m_in.size() == before || m_in.size() > k_max_http_body) break;
  }
  bool ended = false;
  std::string bad = take_chunks(ended);
  for (size_t nl; (nl = m_stream.find('\n')) != std::string::npos;) {
    if (nl > 0) lines.push_back(m_stream.substr(0, nl));
    m_stream.erase(0, nl + 1);
  }
  if (!bad.empty()) return bad;
  if (ended) return "the stream ended";
  return why;
}

} // namespace simba::backend::etcd
