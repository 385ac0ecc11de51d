// Redis backend (DESIGN §5.2): leases in hashes of a Redis server shared by
// many hosts, changed only by Lua scripts on the server's clock, release
// notification over pub/sub.
//
// hiredis 0.14 does the connecting, the command formatting and the reply
// parsing; the bytes go through send()/recv() here, polled against one
// deadline per call. That way a call is bounded as a whole (SO_RCVTIMEO
// bounds each read() only), a write to a closed connection raises no
// SIGPIPE, and we know whether any byte of a request left: a request that
// never left is `failed` and may be retried, one that left and got no answer
// is `indeterminate` (DESIGN §4: it may have been applied).
#include "backend/redis_backend.hpp"

#include "backend/lua_scripts.hpp"
#include "backend/wakeups.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <set>
#include <sys/socket.h>
#include <sys/time.h>

namespace simba::backend {
namespace {

constexpr int64_t k_default_timeout_ms = 2000;
constexpr const char* k_default_prefix = "simba:";
constexpr int k_default_port = 6379;
constexpr const char* k_password_env = "SIMBA_REDIS_PASSWORD";
// A broken subscription is set up again at most this often.
constexpr int64_t k_resubscribe_interval_ms = 1000;
// How long watch() may block: it runs in the driver's loop, also while CMD
// runs and its guard is due. Without the subscription's confirmation a
// release just after watch() could be missed; when it is slower than this,
// drain_wakeups() takes it later.
constexpr int64_t k_subscribe_wait_ms = 250;
// Joining or leaving the queue of waiters: best effort, bounded.
constexpr int64_t k_queue_timeout_ms = 250;
constexpr const char* k_scan_count = "1000";
// The database's marker (lua/common.lua: "The server run"). One per
// database, not per prefix: a restart or a FLUSHDB loses every prefix's
// leases at once, and a first use of each prefix (every test has its own)
// need not wait a quarantine. No hash tag: Redis Cluster would need one per
// slot.
const std::string k_marker = "simba:server";
constexpr int k_min_redis_major = 5;
// The error text of a request that ran out of time (compared, not shown).
const std::string k_timed_out = "timed out";

int64_t mono_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

timeval to_timeval(int64_t ms) {
  ms = std::max<int64_t>(ms, 1);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

// ---- URI -------------------------------------------------------------------------

struct Endpoint {
  bool unix_socket = false;
  std::string host = "127.0.0.1"; // TCP
  int port = k_default_port;
  std::string path; // Unix socket
  std::string user;
  std::string password; // never printed
  long db = 0;
  std::string prefix = k_default_prefix;
  int64_t timeout_ms = k_default_timeout_ms;
  // No new lease after the server may have lost a running one (a restart,
  // a failover, a flush: lua/common.lua, quarantine_end). Off only for a
  // server that cannot lose data, or for tests that restart their own.
  bool quarantine = true;
};

[[noreturn]] void bad_uri(const std::string& shown, const std::string& why) {
  throw UsageError("invalid backend URI '" + shown + "': " + why);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes, so that a password or prefix may hold '@', '/', '&'...
std::string percent_decode(const std::string& s, const std::string& shown) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) bad_uri(shown, "a '%' is not followed by two hex digits");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string percent_encode(const std::string& s) {
  static const char* k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || std::strchr("-._~:/@", c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
  }
  return out;
}

long parse_number(const std::string& s, long max, const std::string& what, const std::string& shown) {
  if (s.empty() || s.size() > 10 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    bad_uri(shown, what + " must be a number, got '" + s + "'");
  long v = std::strtol(s.c_str(), nullptr, 10);
  if (v > max) bad_uri(shown, what + " is out of range: " + s);
  return v;
}

// "user:password", ":password" or "user" (the password then comes from
// SIMBA_REDIS_PASSWORD).
void parse_userinfo(const std::string& info, Endpoint& e, const std::string& shown) {
  auto colon = info.find(':');
  e.user = percent_decode(info.substr(0, colon), shown);
  if (colon != std::string::npos) e.password = percent_decode(info.substr(colon + 1), shown);
}

void parse_query(const std::string& query, Endpoint& e, bool& db_given, const std::string& shown) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string item = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) bad_uri(shown, "'" + item + "' has no value (name=value)");
    std::string name = item.substr(0, eq);
    std::string value = percent_decode(item.substr(eq + 1), shown);
    if (name == "prefix") {
      // A brace would move the hash tag: the keys of one mutex must share a
      // cluster slot.
      if (value.find_first_of("{}") != std::string::npos)
        bad_uri(shown, "the prefix may not contain '{' or '}'");
      e.prefix = value;
    } else if (name == "timeout") {
      e.timeout_ms = core::parse_duration(value, "timeout in the backend URI");
      if (e.timeout_ms <= 0) bad_uri(shown, "the timeout must be positive");
    } else if (name == "db") {
      long db = parse_number(value, INT_MAX, "db", shown);
      if (db_given && db != e.db) bad_uri(shown, "two different databases");
      e.db = db;
      db_given = true;
    } else if (name == "quarantine") {
      if (value != "on" && value != "off") bad_uri(shown, "quarantine is on or off");
      e.quarantine = value == "on";
    } else {
      bad_uri(shown, "unknown parameter '" + name + "' (known: prefix, timeout, db, quarantine)");
    }
  }
}

// `rest` is what follows "redis:" or "redis+unix:".
Endpoint parse_redis_uri(const std::string& scheme, const std::string& rest, const std::string& shown) {
  Endpoint e;
  e.unix_socket = scheme == "redis+unix";
  std::string s = rest;
  std::string query;
  bool db_given = false;
  if (s.rfind("//", 0) != 0) {
    if (!e.unix_socket) bad_uri(shown, "expected redis://HOST[:PORT][/DB]");
    if (s.empty() || s[0] != '/') bad_uri(shown, "expected redis+unix:///ABSOLUTE/PATH.sock");
    s = "//" + s; // redis+unix:/path.sock: an empty authority
  }
  s = s.substr(2);
  // The last '@' ends the user info: a careless password may hold '/' or
  // '@' (the same rule as the redaction of URIs in messages).
  if (auto at = s.rfind('@'); at != std::string::npos) {
    parse_userinfo(s.substr(0, at), e, shown);
    s = s.substr(at + 1);
  }
  if (auto q = s.find('?'); q != std::string::npos) {
    query = s.substr(q + 1);
    s = s.substr(0, q);
  }

  if (e.unix_socket) {
    if (s.empty() || s[0] != '/')
      bad_uri(shown, "expected redis+unix:///ABSOLUTE/PATH.sock (no host)");
    if (s.back() == '/') bad_uri(shown, "the path names a directory, not a socket");
    e.path = percent_decode(s, shown);
  } else {
    auto slash = s.find('/');
    std::string hostport = s.substr(0, slash);
    std::string path = slash == std::string::npos ? "" : s.substr(slash + 1);
    std::string port;
    if (!hostport.empty() && hostport[0] == '[') { // [IPv6]:port
      auto close = hostport.find(']');
      if (close == std::string::npos) bad_uri(shown, "an IPv6 address lacks its ']'");
      e.host = hostport.substr(1, close - 1);
      std::string after = hostport.substr(close + 1);
      if (!after.empty()) {
        if (after[0] != ':') bad_uri(shown, "expected [IPV6]:PORT");
        port = after.substr(1);
        if (port.empty()) bad_uri(shown, "an empty port");
      }
    } else {
      auto colon = hostport.rfind(':');
      if (colon != std::string::npos) {
        port = hostport.substr(colon + 1);
        if (port.empty()) bad_uri(shown, "an empty port");
        hostport = hostport.substr(0, colon);
      }
      if (!hostport.empty()) e.host = hostport;
    }
    if (e.host.empty()) bad_uri(shown, "an empty host");
    if (!port.empty()) {
      // Never echoed: "redis://admin:secret" (no "@host") puts a password here.
      if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
        bad_uri(shown, "the port must be a number (a password goes before '@host')");
      e.port = static_cast<int>(parse_number(port, 65535, "the port", shown));
      if (e.port == 0) bad_uri(shown, "port 0");
    }
    if (!path.empty()) {
      e.db = parse_number(path, INT_MAX, "the database (the path)", shown);
      db_given = true;
    }
  }
  parse_query(query, e, db_given, shown);

  if (e.password.empty()) {
    if (const char* p = std::getenv(k_password_env); p && *p) e.password = p;
  }
  if (!e.user.empty() && e.password.empty())
    bad_uri(shown, "a user name needs a password (give it in " + std::string(k_password_env) + ")");
  return e;
}

// ---- connection -------------------------------------------------------------------

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

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

std::string reply_text(const redisReply* r) {
  return r->str ? std::string(r->str, r->len) : std::string();
}

bool is_error(const redisReply* r) { return r->type == REDIS_REPLY_ERROR; }

// One connection to the server. Any failure closes it: after a time-out the
// stream may still carry the late answer, so it cannot be used again.
class Connection {
public:
  bool is_open() const { return bool(m_ctx); }
  int fd() const { return m_ctx ? m_ctx->fd : -1; }
  void close() { m_ctx.reset(); }

  // Connects within `deadline` (monotonic ms); "" or why not.
  std::string connect(const Endpoint& e, int64_t deadline) {
    close();
    timeval tv = to_timeval(deadline - mono_ms());
    redisContext* c = e.unix_socket ? redisConnectUnixWithTimeout(e.path.c_str(), tv)
                                    : redisConnectWithTimeout(e.host.c_str(), e.port, tv);
    if (!c) return "out of memory";
    ContextPtr ctx(c);
    if (c->err) return c->errstr[0] ? c->errstr : "cannot connect";
    // hiredis' connect timeout bounds the connect only. The calls below are
    // bounded by polling against their deadline; the socket timeouts are a
    // backstop for anything that would block anyway.
    redisSetTimeout(c, to_timeval(e.timeout_ms));
    // hiredis does not set close-on-exec: CMD must not inherit the sockets
    // (a leftover holding the subscription would count as a listener).
    fcntl(c->fd, F_SETFD, FD_CLOEXEC);
    m_ctx = std::move(ctx);
    return "";
  }

  // An idle connection is readable only when the server closed it (or sent
  // something nobody asked for, which is as bad): then the next request
  // goes to a fresh connection instead of being lost with this one.
  bool stale() const {
    pollfd p{fd(), POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) != 0;
  }

  // Sends the commands in one write and reads one reply per command.
  Exchange exchange(const std::vector<Command>& commands, int64_t deadline) {
    Exchange x;
    std::string out;
    for (const Command& c : commands) append_command(out, c);
    size_t sent = 0;
    x.error = send_all(out, deadline, sent);
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

  // Sends without waiting for replies; "" or why not (then closed).
  std::string send_only(const std::vector<Command>& commands, int64_t deadline) {
    std::string out;
    for (const Command& c : commands) append_command(out, c);
    size_t sent = 0;
    std::string err = send_all(out, deadline, sent);
    if (!err.empty()) close();
    return err;
  }

  // One reply before `deadline`; "" or why not (the connection stays open:
  // the caller decides).
  std::string read_reply(int64_t deadline, ReplyPtr& reply) {
    for (;;) {
      std::string err = take_buffered(reply);
      if (!err.empty() || reply) return err;
      if (!wait_for(POLLIN, deadline)) return k_timed_out;
      err = receive(false);
      if (!err.empty()) return err;
    }
  }

  // Reads what has arrived without blocking and parses the complete replies
  // into `out`; "" or why the connection is unusable (EOF, error, protocol).
  std::string read_available(std::vector<ReplyPtr>& out) {
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

private:
  static void append_command(std::string& out, const Command& c) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : c) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    char* cmd = nullptr;
    int len = redisFormatCommandArgv(&cmd, static_cast<int>(c.size()), argv.data(), lens.data());
    std::unique_ptr<char, void (*)(char*)> owned(cmd, redisFreeCommand);
    if (len < 0 || !cmd) throw std::bad_alloc();
    out.append(cmd, static_cast<size_t>(len));
  }

  // Waits until the socket is ready for `events`; false at the deadline.
  bool wait_for(short events, int64_t deadline) const {
    for (;;) {
      int64_t left = deadline - mono_ms();
      if (left <= 0) return false;
      pollfd p{fd(), events, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
      if (n > 0) return true; // ready, or an error that the next I/O reports
      if (n < 0 && errno != EINTR) return false;
    }
  }

  std::string send_all(const std::string& out, int64_t deadline, size_t& sent) {
    while (sent < out.size()) {
      ssize_t n = ::send(fd(), out.data() + sent, out.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (wait_for(POLLOUT, deadline)) continue;
        return k_timed_out;
      }
      return n < 0 ? std::strerror(errno) : "cannot send";
    }
    return "";
  }

  // One recv() (non-blocking: MSG_DONTWAIT) or all that is buffered
  // (`all`), fed to the reply parser.
  std::string receive(bool all) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(fd(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        if (redisReaderFeed(m_ctx->reader, buf, static_cast<size_t>(n)) != REDIS_OK)
          return "out of memory";
        if (!all) return "";
        continue;
      }
      if (n == 0) return "the server closed the connection";
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return "";
      return std::strerror(errno);
    }
  }

  std::string take_buffered(ReplyPtr& reply) {
    void* r = nullptr;
    if (redisReaderGetReply(m_ctx->reader, &r) != REDIS_OK) {
      std::string why = m_ctx->reader->errstr[0] ? m_ctx->reader->errstr : "protocol error";
      return "not the Redis protocol (" + why + ")";
    }
    reply.reset(static_cast<redisReply*>(r));
    return "";
  }

  ContextPtr m_ctx;
};

// ---- replies ----------------------------------------------------------------------

bool as_int(const redisReply* r, int64_t& v) {
  if (r->type != REDIS_REPLY_INTEGER) return false;
  v = r->integer;
  return true;
}

bool as_string(const redisReply* r, std::string& s) {
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) {
    s = reply_text(r);
    return true;
  }
  if (r->type == REDIS_REPLY_NIL) {
    s.clear();
    return true;
  }
  return false;
}

// owner, acquired_at, ttl_at, transition_at, token, quarantine, holding at
// elements[first..first+6]
constexpr size_t k_lease_fields = 7;
bool read_lease(const redisReply* r, size_t first, core::Lease& l) {
  int64_t token = 0, quarantine = 0, holding = 0;
  bool ok = as_string(r->element[first], l.owner_id) && as_int(r->element[first + 1], l.acquired_at) &&
            as_int(r->element[first + 2], l.ttl_at) &&
            as_int(r->element[first + 3], l.transition_at) && as_int(r->element[first + 4], token) &&
            as_int(r->element[first + 5], quarantine) && as_int(r->element[first + 6], holding);
  l.fencing_token = static_cast<uint64_t>(token);
  l.quarantine = quarantine != 0;
  l.holding = holding != 0;
  return ok;
}

// ---- the backend ------------------------------------------------------------------

class RedisBackend final : public Backend, public QueueWakeups {
public:
  explicit RedisBackend(Endpoint e) : m_ep(std::move(e)) {
    m_where = m_ep.unix_socket ? m_ep.path
                               : (m_ep.host.find(':') != std::string::npos ? "[" + m_ep.host + "]"
                                                                            : m_ep.host) +
                                     ":" + std::to_string(m_ep.port);
    std::string user = m_ep.user.empty() ? "" : percent_encode(m_ep.user) + "@";
    std::string prefix = "prefix=" + percent_encode(m_ep.prefix);
    m_describe = m_ep.unix_socket
                     ? "redis+unix://" + user + m_ep.path + "?db=" + std::to_string(m_ep.db) + "&" + prefix
                     : "redis://" + user + m_where + "/" + std::to_string(m_ep.db) + "?" + prefix;
    if (!m_ep.quarantine) m_describe += "&quarantine=off";
  }

  // Connects and checks that a Redis answers (and accepts the password)
  // before anything else happens: a wrong password, a server that is down,
  // or a port where no Redis speaks end simba at once (exit 69).
  void open() {
    int64_t deadline = mono_ms() + m_ep.timeout_ms;
    std::string err = connect(m_conn, deadline, true, true);
    if (!err.empty()) throw UnavailableError(err);
  }

  Reply acquire(const std::string& mutex, const std::string& contender, int64_t ttl_ms,
                int64_t transition_ms, int64_t timeout_ms) override {
    Reply r = run(lua::k_acquire, mutex, {contender, std::to_string(ttl_ms), std::to_string(transition_ms)},
                  timeout_ms);
    // The script took the new owner out of the queue: no dequeue call.
    if (r.ok() && r.changed && mutex == m_queued && contender == m_queued_as) m_queued.clear();
    // The terms a release hands the mutex over on, should we queue.
    m_terms = {std::to_string(ttl_ms), std::to_string(transition_ms)};
    return r;
  }

  Reply guard(const std::string& mutex, const std::string& contender, uint64_t token,
              int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) override {
    return run(lua::k_guard, mutex,
               {contender, std::to_string(ttl_ms), std::to_string(transition_ms),
                std::to_string(token)},
               timeout_ms);
  }

  Reply hold(const std::string& mutex, const std::string& contender, uint64_t token,
             int64_t hold_ms, int64_t timeout_ms) override {
    return run(lua::k_guard, mutex, {contender, std::to_string(hold_ms), "0", std::to_string(token), "1"},
               timeout_ms);
  }

  // A PING goes first, in the same write: Redis sends its pending answers
  // in the reverse order of the clients' first pending answer, so with the
  // PING's answer pending before the script runs, the message handing the
  // mutex over goes out before our answer. Without it, our answer went
  // first, woke us, and on a busy CPU our exit ran before the server could
  // send the next owner its message (traced: a tenth of a millisecond).
  Reply release(const std::string& mutex, const std::string& contender, uint64_t token,
                int64_t timeout_ms) override {
    return run(lua::k_release, mutex, {contender, std::to_string(token)}, timeout_ms, true);
  }

  Reply force_release(const std::string& mutex, uint64_t token, int64_t timeout_ms) override {
    return run(lua::k_force_release, mutex, {std::to_string(token)}, timeout_ms);
  }

  Reply get(const std::string& mutex, int64_t timeout_ms) override {
    return run(lua::k_get, mutex, {}, timeout_ms);
  }

  // The names come from SCAN over the fence counters, not from a set of
  // names kept by acquire: a set would be one more write on every
  // acquisition, to a key outside the mutex's hash slot. The counters never
  // expire, so every mutex ever acquired is found (like the rows SQLite
  // keeps). SCAN walks the whole keyspace, which is fine for `status`.
  // The reply of a finished exchange, or nullptr with `error` set (the call
  // failed, or the server answered with an error).
  const redisReply* answer(const Exchange& x, std::string& error) const {
    if (!x.ok) {
      error = x.error;
      return nullptr;
    }
    const redisReply* r = x.replies[0].get();
    if (is_error(r)) {
      error = scrub(reply_text(r));
      return nullptr;
    }
    return r;
  }

  Listing list(int64_t timeout_ms) override {
    Listing out;
    int64_t deadline = call_deadline(timeout_ms);
    std::set<std::string> names; // SCAN may return a key twice
    std::string pattern = glob_escape(m_ep.prefix) + "{*}:fence";
    std::string cursor = "0";
    do {
      Exchange x = call({{"SCAN", cursor, "MATCH", pattern, "COUNT", k_scan_count}}, deadline);
      const redisReply* r = answer(x, out.error);
      if (!r) return out;
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          !as_string(r->element[0], cursor) || r->element[1]->type != REDIS_REPLY_ARRAY) {
        out.error = "unexpected reply to SCAN";
        return out;
      }
      for (size_t i = 0; i < r->element[1]->elements; ++i) {
        std::string key;
        if (!as_string(r->element[1]->element[i], key)) continue;
        std::string name = mutex_of_fence(key);
        if (!name.empty()) names.insert(name);
      }
    } while (cursor != "0");

    std::vector<std::string> keys{k_marker};
    for (const std::string& n : names) {
      keys.push_back(hash_key(n));
      keys.push_back(hash_key(n) + ":fence");
    }
    Exchange x = call_script(lua::k_list, keys, script_args({}), deadline);
    const redisReply* r = answer(x, out.error);
    if (!r) return out;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 + k_lease_fields * names.size() ||
        !as_int(r->element[0], out.now)) {
      out.error = "unexpected reply from the list script";
      return out;
    }
    size_t i = 1;
    for (const std::string& n : names) {
      MutexLease ml;
      ml.mutex = n;
      if (!read_lease(r, i, ml.lease)) {
        out.error = "unexpected reply from the list script";
        out.mutexes.clear();
        return out;
      }
      i += k_lease_fields;
      out.mutexes.push_back(std::move(ml));
    }
    out.ok = true; // std::set: sorted by name already
    return out;
  }

  Wakeups& wakeups(const std::string& mutex, const std::string& contender) override {
    target(mutex, contender);
    return *this;
  }

  // A second connection, subscribed to the mutex's channels. Set up when
  // first asked for (only waiters and long-running owners need it), and
  // again at most once a second after it broke. Two channels: the mutex's own (a forced release tells the owner) and
  // the contender's wake-up channel, on which a release wakes the first of
  // the queued waiters (lua/common.lua).
  int watch(const std::string& mutex, const std::string& contender, bool waiting) override {
    std::string channel = channel_name(mutex, "released");
    if (channel != m_channel) {
      leave_queue();
      m_sub.close();
      m_channel = channel;
      m_wake_channel = channel_name(mutex, "wake:" + contender);
      m_sub_mutex = mutex;
      m_sub_contender = contender;
      m_resubscribe_at = 0;
    }
    if (m_sub.is_open() || subscribe()) {
      // Queue only once subscribed: a release then always finds us listening.
      if (waiting && m_queued.empty()) {
        std::vector<std::string> args{contender};
        args.insert(args.end(), m_terms.begin(), m_terms.end());
        Reply r = run(lua::k_enqueue, mutex, args, k_queue_timeout_ms);
        if (r.ok()) m_queued = mutex;
        m_queued_as = contender;
        m_queued_terms = m_terms;
        // The script read the lease once we were queued.
        m_look = !held_by_other(r, contender);
      } else if (!waiting) {
        leave_queue();
      }
      return m_sub.fd();
    }
    return -1;
  }

  ~RedisBackend() override { leave_queue(); }

  bool look_after_queueing() const override { return m_look; }

  void leave_queue() {
    if (m_queued.empty()) return;
    std::string mutex = std::move(m_queued);
    m_queued.clear();
    std::vector<std::string> args{m_queued_as};
    args.insert(args.end(), m_queued_terms.begin(), m_queued_terms.end());
    run(lua::k_dequeue, mutex, args, k_queue_timeout_ms); // best effort
  }

  bool subscribe() {
    int64_t now = mono_ms();
    if (now < m_resubscribe_at) return false;
    m_resubscribe_at = now + k_resubscribe_interval_ms;

    int64_t deadline = now + std::min(m_ep.timeout_ms, k_subscribe_wait_ms);
    // Channels are server-wide (SELECT does not matter to them): their
    // names carry the database (channel_name()).
    if (!connect(m_sub, deadline, false, false).empty()) return false;
    // A message that comes after the confirmations was published after the
    // server handled the SUBSCRIBE, so after this moment: a hand-over's
    // lease is counted from here (see take_grant()).
    int64_t sent_at = sys::boottime_ms(); // the driver's clock
    if (!m_sub.send_only({{"SUBSCRIBE", m_channel, m_wake_channel}}, deadline).empty()) return false;
    // Wait for the confirmations, so that a release right after this call is
    // not missed.
    for (int i = 0; i < 2; ++i) {
      ReplyPtr r;
      std::string err = m_sub.read_reply(deadline, r);
      // Unconfirmed, a release could find nobody listening and drop us from
      // the queue: try again later (the timed wake-up covers the meantime).
      if (!err.empty() || is_error(r.get()) || !is_subscribed(r.get())) {
        m_sub.close();
        return false;
      }
    }
    m_subscribed_at = sent_at;
    return true;
  }

  bool drain_wakeups() override {
    if (!m_sub.is_open()) return false;
    std::vector<ReplyPtr> replies;
    std::string err = m_sub.read_available(replies);
    bool ours = false;
    for (const ReplyPtr& r : replies) {
      if (is_error(r.get())) err = reply_text(r.get());
      if (is_message_on(r.get(), m_channel)) ours = true;
      if (is_message_on(r.get(), m_wake_channel)) {
        ours = true;
        take_grant_message(reply_text(r->element[2]));
      }
    }
    if (!err.empty()) {
      // A release may have been missed: wake up and look. The next watch()
      // subscribes again (not at once: a server that is down would be
      // hammered).
      m_sub.close();
      m_resubscribe_at = mono_ms() + k_resubscribe_interval_ms;
      // Not listening, a release may have dropped us from the queue (or the
      // server lost it): queue again once subscribed again.
      m_queued.clear();
      return true;
    }
    return ours;
  }

  std::optional<Grant> take_grant() override {
    std::optional<Grant> g = std::move(m_grant);
    m_grant.reset();
    return g;
  }

  std::string describe() const override { return m_describe; }

private:
  // "grant <now> <acquired_at> <ttl_at> <transition_at> <token>" on our wake
  // channel: a release made us the owner (lua/common.lua: hand_over). The
  // reply our acquire would have got, sent when we sent the SUBSCRIBE whose
  // confirmation came before the message. The release took us out of the
  // queue: no dequeue (which would end the lease). "1": only woken.
  void take_grant_message(const std::string& text) {
    long long f[5];
    char tail;
    if (std::sscanf(text.c_str(), "grant %lld %lld %lld %lld %lld%c", &f[0], &f[1], &f[2], &f[3], &f[4],
                    &tail) != 5)
      return;
    Grant g;
    g.reply.status = Reply::Status::ok;
    g.reply.changed = true;
    g.reply.observed.now = f[0];
    g.reply.observed.lease.owner_id = m_sub_contender;
    g.reply.observed.lease.acquired_at = f[1];
    g.reply.observed.lease.ttl_at = f[2];
    g.reply.observed.lease.transition_at = f[3];
    g.reply.observed.lease.fencing_token = f[4];
    g.sent_at_ms = m_subscribed_at;
    m_grant = std::move(g);
    if (m_queued == m_sub_mutex) m_queued.clear();
  }

  std::string hash_key(const std::string& mutex) const { return m_ep.prefix + "{" + mutex + "}"; }

  // lua/common.lua: channel()
  std::string channel_name(const std::string& mutex, const std::string& suffix) const {
    return hash_key(mutex) + ":db" + std::to_string(m_ep.db) + ":" + suffix;
  }

  // What lua/common.lua takes off the end of every script's arguments: the
  // database, and the run of the server this connection talks to ("": no
  // quarantine).
  std::vector<std::string> script_args(std::vector<std::string> args) const {
    args.push_back(std::to_string(m_ep.db));
    args.push_back(server_run());
    return args;
  }

  std::string server_run() const { return m_ep.quarantine ? m_server.run_id : ""; }

  // "<prefix>{NAME}:fence" -> NAME, "" if the key is not one of ours.
  std::string mutex_of_fence(const std::string& key) const {
    static const std::string k_tail = "}:fence";
    size_t head = m_ep.prefix.size() + 1;
    if (key.size() <= head + k_tail.size() || key.compare(0, m_ep.prefix.size(), m_ep.prefix) != 0 ||
        key[head - 1] != '{' || key.compare(key.size() - k_tail.size(), k_tail.size(), k_tail) != 0)
      return "";
    std::string name = key.substr(head, key.size() - head - k_tail.size());
    return name.find_first_of("{}") == std::string::npos ? name : "";
  }

  static std::string glob_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (std::strchr("*?[]\\", c)) out += '\\';
      out += c;
    }
    return out;
  }

  static bool is_subscribed(const redisReply* r) {
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           r->element[0]->type == REDIS_REPLY_STRING && reply_text(r->element[0]) == "subscribe";
  }

  static bool is_message_on(const redisReply* r, const std::string& channel) {
    return r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
           r->element[0]->type == REDIS_REPLY_STRING && reply_text(r->element[0]) == "message" &&
           r->element[1]->type == REDIS_REPLY_STRING && reply_text(r->element[1]) == channel;
  }

  // Defence in depth: whatever a server or a library says, the password is
  // not repeated.
  std::string scrub(std::string msg) const {
    const std::string& p = m_ep.password;
    if (p.empty()) return msg;
    for (size_t at; (at = msg.find(p)) != std::string::npos;) msg.replace(at, p.size(), "***");
    return msg;
  }

  // A call's whole budget: its own timeout, capped by the URI's.
  int64_t call_deadline(int64_t timeout_ms) {
    m_budget_ms = std::max<int64_t>(1, std::min(timeout_ms, m_ep.timeout_ms));
    return mono_ms() + m_budget_ms;
  }

  // Connects `c` and sends what a connection needs first: AUTH when there
  // is a password, SELECT when the database is not 0. Their replies prove
  // that a Redis answers; with neither, `verify` sends a PING for that
  // (only when simba starts: a reconnect in a call needs no proof). Returns
  // "" or one line for the user.
  std::string connect(Connection& c, int64_t deadline, bool select, bool verify) {
    std::string err = c.connect(m_ep, deadline);
    if (!err.empty()) return scrub("cannot connect to Redis at " + m_where + ": " + err);
    std::vector<Command> hello;
    if (!m_ep.password.empty()) {
      if (m_ep.user.empty())
        hello.push_back({"AUTH", m_ep.password});
      else
        hello.push_back({"AUTH", m_ep.user, m_ep.password});
    }
    if (select && m_ep.db != 0) hello.push_back({"SELECT", std::to_string(m_ep.db)});
    // The main connection learns which server run it talks to, and whether
    // that server may evict a lease, in the same write: no round trip of
    // its own (its answer also proves that a Redis answers).
    if (select) {
      hello.push_back({"INFO", "server"});
      hello.push_back({"INFO", "memory"});
    }
    if (hello.empty() && verify) hello.push_back({"PING"});
    if (hello.empty()) return "";
    Exchange x = c.exchange(hello, deadline);
    if (!x.ok) {
      if (x.error == k_timed_out)
        return "no answer from Redis at " + m_where + " within " +
               core::format_duration(m_ep.timeout_ms) + " (is a Redis server listening there?)";
      return scrub("cannot talk to Redis at " + m_where + ": " + x.error);
    }
    for (size_t i = 0; i < hello.size(); ++i) {
      const redisReply* r = x.replies[i].get();
      const std::string& cmd = hello[i][0];
      std::string text = scrub(reply_text(r));
      if (is_error(r)) {
        c.close();
        if (text.rfind("NOAUTH", 0) == 0)
          return "Redis at " + m_where + " requires a password: give it in " + k_password_env;
        if (cmd == "AUTH") return "Redis at " + m_where + " refused the password: " + text;
        if (cmd == "SELECT") return "Redis at " + m_where + " refused database " + std::to_string(m_ep.db) + ": " + text;
        return "Redis at " + m_where + ": " + text;
      }
      if (cmd == "PING" && text != "PONG") {
        c.close();
        return m_where + " does not answer like a Redis server";
      }
      if (cmd == "INFO") {
        std::string why = hello[i][1] == "server" ? learn_server(text) : check_eviction(text);
        if (!why.empty()) {
          c.close();
          return why;
        }
      }
    }
    return "";
  }

  // INFO's "name:value" line, "" when missing.
  static std::string info_field(const std::string& info, const std::string& name) {
    size_t at = info.rfind(name + ":", 0) == 0 ? 0 : info.find("\n" + name + ":");
    if (at == std::string::npos) return "";
    if (at != 0) ++at;
    at += name.size() + 1;
    return info.substr(at, info.find_first_of("\r\n", at) - at);
  }

  // INFO server: the run_id the scripts compare with the database's marker
  // (lua/common.lua: quarantine_end), and the version the scripts need.
  std::string learn_server(const std::string& info) {
    std::string run_id = info_field(info, "run_id");
    std::string version = info_field(info, "redis_version");
    if (run_id.empty() || version.empty()) return m_where + " does not answer like a Redis server";
    // Scripts that read TIME and then write need effects replication, the
    // default from Redis 5.
    if (std::atoi(version.c_str()) < k_min_redis_major)
      return "Redis at " + m_where + " is version " + version + ": simba needs Redis " +
             std::to_string(k_min_redis_major) + ".0 or newer";
    m_server.run_id = run_id;
    return "";
  }

  // INFO memory: an allkeys-* policy may evict a running lease (any key
  // may go), and nothing would tell. The volatile-* policies take only keys
  // with a TTL, and simba's leases have none.
  std::string check_eviction(const std::string& info) const {
    std::string policy = info_field(info, "maxmemory_policy");
    if (policy.rfind("allkeys-", 0) == 0)
      return "Redis at " + m_where + " has maxmemory-policy " + policy +
             ", which may evict a running lease: use noeviction or a volatile-* policy";
    return "";
  }

  // One request on the main connection: reconnects first when needed, and
  // once more when a dead connection refused the request before any byte
  // of it left.
  // `script`: the last command is a script, whose last argument is the
  // server run (script_args()); it is set for the connection it goes on,
  // which may be a new one (a restarted server has another run).
  Exchange call(std::vector<Command> commands, int64_t deadline, bool script = false) {
    for (int attempt = 0;; ++attempt) {
      if (m_conn.is_open() && m_conn.stale()) m_conn.close();
      if (!m_conn.is_open()) {
        Exchange x;
        x.error = connect(m_conn, deadline, true, false);
        if (!x.error.empty()) return x; // Reach::not_sent
      }
      if (script) commands.back().back() = server_run();
      Exchange x = m_conn.exchange(commands, deadline);
      if (x.ok || x.reach != Reach::not_sent || attempt > 0 || mono_ms() >= deadline) {
        if (!x.ok) x.error = describe_failure(x.error);
        return x;
      }
    }
  }

  std::string describe_failure(const std::string& err) const {
    if (err == k_timed_out)
      return "no answer from Redis at " + m_where + " within " + core::format_duration(m_budget_ms);
    return scrub("Redis at " + m_where + ": " + err);
  }

  // EVALSHA, and EVAL when the server does not know the script yet (it was
  // restarted, or SCRIPT FLUSHed): NOSCRIPT means nothing ran.
  // `ping_first`: a PING in the same write, before the script; its answer
  // is dropped (see release()).
  Exchange call_script(const lua::Script& s, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, int64_t deadline, bool ping_first = false) {
    Command cmd{"EVALSHA", s.sha1, std::to_string(keys.size())};
    cmd.insert(cmd.end(), keys.begin(), keys.end());
    cmd.insert(cmd.end(), args.begin(), args.end());
    Exchange x = ping_first ? call({{"PING"}, cmd}, deadline, true) : call({cmd}, deadline, true);
    if (ping_first && x.ok) {
      // A refusal of the PING (NOAUTH...) is the answer; else the script's.
      x.replies.erase(x.replies.begin() + (is_error(x.replies[0].get()) ? 1 : 0));
    }
    if (x.ok && is_error(x.replies[0].get()) &&
        reply_text(x.replies[0].get()).rfind("NOSCRIPT", 0) == 0) {
      cmd[0] = "EVAL";
      cmd[1] = s.text;
      x = call({cmd}, deadline, true);
    }
    return x;
  }

  Reply run(const lua::Script& s, const std::string& mutex, const std::vector<std::string>& args,
            int64_t timeout_ms, bool ping_first = false) {
    std::string hash = hash_key(mutex);
    Exchange x = call_script(s, {hash, hash + ":fence", k_marker}, script_args(args),
                             call_deadline(timeout_ms), ping_first);
    if (!x.ok) {
      return Reply::failure(x.reach == Reach::not_sent ? Reply::Status::failed
                                                      : Reply::Status::indeterminate,
                            x.error);
    }
    const redisReply* r = x.replies[0].get();
    // Every refusal (LOADING, BUSY, NOAUTH, OOM, READONLY...) comes before
    // the script runs; the scripts check everything before they write.
    if (is_error(r)) return Reply::failure(Reply::Status::failed, scrub(reply_text(r)));
    Reply out;
    int64_t changed = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 + k_lease_fields ||
        !as_int(r->element[0], out.observed.now) ||
        !as_int(r->element[1], changed) || !read_lease(r, 2, out.observed.lease))
      return Reply::failure(Reply::Status::failed,
                            std::string("unexpected reply from the ") + s.name + " script");
    out.status = Reply::Status::ok;
    out.changed = changed != 0;
    return out;
  }

  Endpoint m_ep;
  std::string m_where;    // host:port or socket path, for messages
  std::string m_describe; // the URI without the password
  Connection m_conn;      // requests
  Connection m_sub;       // the subscription of watch()
  struct {
    std::string run_id; // of the server m_conn talks to (INFO at connect)
  } m_server;
  std::string m_channel;      // <hash>:db<N>:released
  std::string m_wake_channel; // <hash>:db<N>:wake:<contender>
  std::string m_queued;       // the mutex whose queue we are in, if any
  std::string m_queued_as;
  std::string m_sub_mutex;      // the mutex and contender of the subscription
  std::string m_sub_contender;
  int64_t m_subscribed_at = 0;  // CLOCK_BOOTTIME ms: when the SUBSCRIBE was sent
  std::vector<std::string> m_terms; // ttl and transition of our last acquire
  std::vector<std::string> m_queued_terms; // those we queued with
  std::optional<Grant> m_grant;     // see take_grant()
  int64_t m_resubscribe_at = 0; // monotonic ms
  bool m_look = true;           // see look_after_queueing()
  int64_t m_budget_ms = 0;      // of the current call, for messages
};

} // namespace

std::unique_ptr<Backend> open_redis(const std::string& scheme, const std::string& rest,
                                    const std::string& shown) {
  auto backend = std::make_unique<RedisBackend>(parse_redis_uri(scheme, rest, shown));
  backend->open();
  return backend;
}

} // namespace simba::backend
