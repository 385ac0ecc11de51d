#pragma once
// One connection to a Redis server, every call bounded by a deadline.
//
// The socket is dialled by net/dial (the host resolved by simba's own
// resolver), commands are written here, hiredis 0.14's parser (read.c)
// reads the replies; the bytes go through net/deadline_io, polled against
// one deadline per call. That way we know whether any byte of a request left: a request
// that never left is `failed` and may be retried, one that left and got no
// answer is `indeterminate` (DESIGN §4: it may have been applied). Over
// rediss:// the same bytes go through net/tls, with the same deadlines.
#include "backend/net/tls.hpp"
#include "backend/redis/reply.hpp"
#include "backend/redis/reply_bound.hpp"
#include "backend/uri.hpp"
#include "sys/fd.hpp"

#include <hiredis/read.h>

#include <memory>
#include <string>
#include <vector>

namespace simba::backend::redis {

using Command = std::vector<std::string>;

// How far a request got before it failed.
enum class Reach {
  not_sent,  // no byte of it left: certainly not applied
  maybe_sent // some or all of it left: it may have been applied
};

struct Exchange {
  bool ok = false;
  Reach reach = Reach::not_sent;
  std::string error;
  std::vector<ReplyPtr> replies; // one per command, when ok
};

// Any failure closes the connection: after a time-out the stream may still
// carry the late answer, so it cannot be used again.
class Connection {
public:
  bool is_open() const { return m_fd.valid(); }
  int fd() const { return m_fd.get(); }
  void close() {
    m_tls.reset();
    m_reader.reset();
    m_fd.reset();
  }

  // rediss://: the TLS session (simba doctor reads the certificate's
  // expiry), else nullptr.
  const net::TlsSession* tls() const { return m_tls.get(); }

  // Connects within `deadline` (sys::boottime_ms()); "" or why not.
  std::string connect(const RedisUri& e, int64_t deadline);

  // An idle connection that is readable was closed by the server (or got
  // something nobody asked for, which is as bad): the next request should
  // go to a fresh connection instead of being lost with this one.
  bool stale();

  // Sends the commands in one write and reads one reply per command.
  Exchange exchange(const std::vector<Command>& commands, int64_t deadline);

  // Sends without waiting for replies; "" or why not (then closed).
  std::string send_only(const std::vector<Command>& commands, int64_t deadline);

  // One reply before `deadline`; "" or why not (the connection stays open:
  // the caller decides).
  std::string read_reply(int64_t deadline, ReplyPtr& reply);

  // Reads what has arrived without blocking and parses the complete replies
  // into `out`; "" or why the connection is unusable (EOF, error, protocol).
  std::string read_available(std::vector<ReplyPtr>& out);

private:
  std::string start_tls(const RedisUri& e, int64_t deadline);
  std::string send_bytes(const std::string& out, int64_t deadline, size_t& sent);
  // One recv() or all that is buffered (`all`), fed to the reply parser.
  std::string receive(bool all);
  std::string receive_tls(bool all);
  std::string take_buffered(ReplyPtr& reply);
  // Feeds `n` received bytes to the parser; "" or why not (a reply too big).
  std::string feed(const char* bytes, size_t n);

  struct ReaderFree {
    void operator()(redisReader* r) const { redisReaderFree(r); }
  };
  sys::Fd m_fd;
  std::unique_ptr<redisReader, ReaderFree> m_reader; // the reply parser
  std::unique_ptr<net::TlsSession> m_tls; // rediss://
  ReplyBudget m_budget;                   // of the reply being read (reply_bound.hpp)
};

} // namespace simba::backend::redis
