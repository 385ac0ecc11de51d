// A Redis connection with deadlines (connection.hpp).
#include "backend/redis/connection.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/net/dial.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

namespace simba::backend::redis {
namespace {

// A command as RESP: an array of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n").
void append_command(std::string& out, const Command& c) {
  out += "*" + std::to_string(c.size()) + "\r\n";
  for (const std::string& a : c) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out += a;
    out += "\r\n";
  }
}

// What a reply may cost is bounded (reply_bound.hpp): a server that
// announces or sends more is refused, whatever it is.
std::string too_big() {
  return "a reply larger than " + std::to_string(k_max_reply_bytes >> 20) +
         " MiB (a broken or hostile server?)";
}

} // namespace

std::string Connection::connect(const RedisUri& e, int64_t deadline) {
  close();
  // Non-blocking and close-on-exec (CMD must not inherit the sockets: a
  // leftover holding the subscription would count as a listener).
  int fd = -1;
  std::string why = e.unix_socket ? net::dial_unix(e.path, deadline, fd)
                                  : net::dial_host(e.host, e.port, deadline, fd);
  if (fd < 0) return why;
  m_fd.reset(fd);
  if (!e.unix_socket) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  m_reader.reset(new_reader());
  if (!m_reader) {
    close();
    return "out of memory";
  }
  m_budget = ReplyBudget{};
  if (!e.tls) return "";
  std::string err = start_tls(e, deadline);
  if (!err.empty()) close();
  return err;
}

std::string Connection::start_tls(const RedisUri& e, int64_t deadline) {
  net::TlsOptions o;
  o.host = e.host;
  o.ca_file = e.tls_ca;
  o.cert_file = e.tls_cert;
  o.key_file = e.tls_key;
  o.insecure = e.tls_insecure;
  m_tls = std::make_unique<net::TlsSession>();
  std::string err = m_tls->start(fd(), o, deadline);
  // A plain Redis waits for the end of a line that a handshake never sends.
  if (err == net::k_timed_out)
    err = "timed out: no TLS handshake from the server (if that port is plain Redis, not TLS, "
          "use redis://)";
  return err;
}

bool Connection::stale() {
  if (!net::readable_now(fd())) return false;
  if (!m_tls) return true;
  // A TLS 1.3 server sends its session tickets after the handshake: records
  // for OpenSSL, nothing for us. Only data, an EOF or an error make it stale.
  std::string plain;
  bool got = false;
  return !m_tls->receive_some(fd(), plain, got).empty() || !plain.empty();
}

std::string Connection::send_bytes(const std::string& out, int64_t deadline, size_t& sent) {
  return m_tls ? m_tls->send_all(fd(), out, deadline, sent)
               : net::send_all(fd(), out, deadline, sent);
}

Exchange Connection::exchange(const std::vector<Command>& commands, int64_t deadline) {
  Exchange x;
  std::string out;
  for (const Command& c : commands) append_command(out, c);
  size_t sent = 0;
  x.error = send_bytes(out, deadline, sent);
  if (!x.error.empty()) {
    x.reach = sent == 0 ? Reach::not_sent : Reach::maybe_sent;
    close();
    return x;
  }
  x.reach = Reach::maybe_sent;
  while (x.replies.size() < commands.size()) {
    ReplyPtr r;
    x.error = read_reply(deadline, r);
    if (!x.error.empty()) {
      x.replies.clear();
      close();
      return x;
    }
    x.replies.push_back(std::move(r));
  }
  x.ok = true;
  return x;
}

std::string Connection::send_only(const std::vector<Command>& commands, int64_t deadline) {
  std::string out;
  for (const Command& c : commands) append_command(out, c);
  size_t sent = 0;
  std::string err = send_bytes(out, deadline, sent);
  if (!err.empty()) close();
  return err;
}

std::string Connection::read_reply(int64_t deadline, ReplyPtr& reply) {
  for (;;) {
    std::string err = take_buffered(reply);
    if (!err.empty() || reply) return err;
    if (!net::wait_for(fd(), POLLIN, deadline)) return net::k_timed_out;
    err = receive(false);
    if (!err.empty()) return err;
  }
}

std::string Connection::read_available(std::vector<ReplyPtr>& out) {
  std::string err = receive(true);
  for (;;) {
    ReplyPtr r;
    std::string perr = take_buffered(r);
    if (!perr.empty()) return perr;
    if (!r) break;
    out.push_back(std::move(r));
  }
  return err;
}

std::string Connection::receive(bool all) {
  if (m_tls) return receive_tls(all);
  char buf[16384];
  for (;;) {
    size_t got = 0;
    std::string err = net::receive_some(fd(), buf, sizeof buf, got);
    if (!err.empty() || got == 0) return err;
    err = feed(buf, got);
    if (!err.empty() || !all) return err;
  }
}

std::string Connection::receive_tls(bool all) {
  for (;;) {
    std::string plain;
    bool got = false;
    std::string err = m_tls->receive_some(fd(), plain, got);
    std::string fed = plain.empty() ? "" : feed(plain.data(), plain.size());
    if (!fed.empty()) return fed;
    if (!err.empty() || !got || !all) return err;
  }
}

std::string Connection::feed(const char* bytes, size_t n) {
  if (!may_feed(m_reader.get(), m_budget, n)) return too_big();
  if (redisReaderFeed(m_reader.get(), bytes, n) != REDIS_OK) return "out of memory";
  return "";
}

std::string Connection::take_buffered(ReplyPtr& reply) {
  void* r = nullptr;
  bound_replies(m_reader.get(), &m_budget);
  if (redisReaderGetReply(m_reader.get(), &r) != REDIS_OK) {
    if (m_budget.exceeded) return too_big();
    std::string why = m_reader->errstr[0] ? m_reader->errstr : "protocol error";
    return "not the Redis protocol (" + why + ")";
  }
  if (r) m_budget.used = 0; // a whole reply: the next one starts afresh
  reply.reset(static_cast<redisReply*>(r));
  return "";
}

} // namespace simba::backend::redis
