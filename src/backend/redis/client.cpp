// The backend's requests on the main connection (client.hpp).
#include "backend/redis/client.hpp"

#include "backend/history.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/redis/cluster_route.hpp"
#include "backend/redis/sentinel.hpp"
#include "backend/redis/server_check.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <algorithm>

namespace simba::backend::redis {

const std::string k_marker = "simba:server";

namespace {

// READONLY (a replica), MASTERDOWN (a replica that lost its master),
// NOREPLICAS (a master that lost its replicas: min-replicas-to-write):
// the server refused before running anything, and may not be the master.
bool refused_by_replica(const Exchange& x) {
  for (const ReplyPtr& r : x.replies) {
    if (!is_error(r.get())) continue;
    std::string text = reply_text(r.get());
    for (const char* code : {"READONLY", "MASTERDOWN", "NOREPLICAS"})
      if (text.rfind(code, 0) == 0) return true;
  }
  return false;
}

} // namespace

Client::Client(RedisUri uri)
    : m_uri(std::move(uri)), m_where(redis_where(m_uri)),
      m_history_limit(std::to_string(history_limit())) {
  if (!m_uri.cluster.seeds.empty()) m_cluster = std::make_unique<ClusterRoute>(m_uri);
}

Client::~Client() = default;

void Client::open() {
  int64_t deadline = sys::boottime_ms() + m_uri.timeout_ms;
  std::string err;
  if (m_cluster) {
    err = m_cluster->open(deadline); // each master's hello on its own connection
  } else if (hello_can_wait(m_uri)) {
    err = m_conn.connect(m_uri, deadline);
    if (!err.empty()) err = scrub("cannot connect to Redis at " + m_where + ": " + err);
    m_hello_waits = err.empty();
  } else {
    err = connect(m_conn, deadline, true, true);
    // A server in a passing state (refused_for_now()): the first call
    // checks it again, and fails (retried) until it is ready.
    m_checks_wait = !err.empty() && m_refused_for_now;
    if (m_checks_wait) return;
  }
  if (!err.empty()) throw UnavailableError(err);
}

// The first call after open() left the hello to it (hello_can_wait()). A
// script goes in the same write and learns the server's run itself ("?",
// lua/common.lua); any other request waits for the hello's answers first.
// What the hello refuses ends simba as open() would have (the script
// refused it too, before any write), and so does a hello without an answer
// (RedisBackend's users release whatever an unanswered acquire took, as
// for any error they let through).
// A hello refused for now (refused_for_now()) is a failed call, and the
// next call sends it again: on a new connection (check_hello() closed
// this one). The script that went with it ran only if its own reply is no
// error (the server became ready in between): then its outcome is unknown.
Exchange Client::call_with_hello(std::vector<Command> commands, int64_t deadline, bool script) {
  Exchange refused;
  if (!m_conn.is_open()) {
    refused.error = m_conn.connect(m_uri, deadline);
    if (!refused.error.empty()) {
      refused.error = describe_failure(refused.error);
      return refused; // not sent; m_hello_waits stays
    }
  }
  m_hello_waits = false;
  std::vector<Command> hello = main_hello(m_uri);
  bool for_now = false;
  if (!script) {
    std::string err = check_hello(m_conn, m_uri, m_where, hello,
                                  m_conn.exchange(hello, deadline), m_run_id, &for_now);
    if (!err.empty() && !for_now) throw UnavailableError(err);
    m_hello_waits = for_now;
    if (!for_now) return call(std::move(commands), deadline, script);
    refused.error = err;
    return refused;
  }
  commands.back().back() = "?";
  commands.insert(commands.begin(), hello.begin(), hello.end());
  Exchange x = m_conn.exchange(commands, deadline);
  std::string err = check_hello(m_conn, m_uri, m_where, hello, x, m_run_id, &for_now);
  if (!err.empty() && for_now) {
    m_hello_waits = true;
    refused.error = err;
    if (!is_error(x.replies.back().get())) refused.reach = Reach::maybe_sent;
    return refused;
  }
  if (!err.empty()) throw UnavailableError(err);
  x.replies.erase(x.replies.begin(), x.replies.begin() + static_cast<long>(hello.size()));
  return x;
}

std::string Client::connect(Connection& c, int64_t deadline, bool select, bool verify) {
  return sentinel() ? connect_master(c, deadline, select, verify)
                    : connect_to(c, deadline, select, verify);
}

std::string Client::connect_to(Connection& c, int64_t deadline, bool select, bool verify) {
  m_checks_refused = m_refused_for_now = false;
  std::string err = c.connect(m_uri, deadline);
  if (!err.empty()) return scrub("cannot connect to Redis at " + m_where + ": " + err);
  err = check_server(c, m_uri, m_where, deadline, select, verify, m_run_id, &m_refused_for_now);
  m_checks_refused = !err.empty();
  return err;
}

// Sentinel: the master found last, else (or when it is no longer the
// master: check_server() asks its ROLE) the one a majority of the
// sentinels name, when it answers as the master.
std::string Client::connect_master(Connection& c, int64_t deadline, bool select, bool verify) {
  if (m_master_known) {
    std::string err = connect_to(c, deadline, select, verify);
    if (err.empty()) return "";
    m_master_known = false;
  }
  std::string master_error;
  int64_t asked_at = sys::boottime_ms(); // (not when the answers came: sentinel.hpp)
  std::string none = ask_sentinels(m_uri, deadline, [&](const SentinelAnswer& a) {
    m_uri.host = a.host;
    m_uri.port = a.port;
    m_where = redis_where(m_uri);
    master_error = connect_to(c, deadline, select, verify);
    if (!master_error.empty()) return false;
    m_master_known = true;
    m_confirmed_at = asked_at;
    return true;
  });
  if (none.empty()) return "";
  return !master_error.empty() ? master_error : none;
}

std::string Client::confirm_master(int64_t deadline) {
  if (!sentinel()) return "";
  int64_t asked_at = sys::boottime_ms(); // (not when the answers came: sentinel.hpp)
  return ask_sentinels(m_uri, deadline, [&](const SentinelAnswer& a) {
    if (!m_master_known || a.host != m_uri.host || a.port != m_uri.port) {
      m_conn.close(); // the next call connects to it and checks its ROLE
      m_uri.host = a.host;
      m_uri.port = a.port;
      m_where = redis_where(m_uri);
      m_master_known = true;
    }
    m_confirmed_at = asked_at;
    return true;
  });
}

int64_t Client::call_deadline(int64_t timeout_ms) {
  m_budget_ms = std::max<int64_t>(1, std::min(timeout_ms, m_uri.timeout_ms));
  return sys::boottime_ms() + m_budget_ms;
}

Exchange Client::call(std::vector<Command> commands, int64_t deadline, bool script) {
  if (sentinel() && sys::boottime_ms() - m_confirmed_at > k_sentinel_confirm_ms) {
    Exchange x;
    x.error = confirm_master(deadline);
    if (!x.error.empty()) return x; // Reach::not_sent
  }
  if (m_hello_waits) return call_with_hello(std::move(commands), deadline, script);
  if (m_checks_wait) { // open()'s checks, refused for now: again, in full
    Exchange x;
    x.error = connect(m_conn, deadline, true, true);
    // Refused for good, as open() would have been: the end (69).
    if (m_checks_refused && !m_refused_for_now) throw UnavailableError(x.error);
    if (!x.error.empty()) return x; // Reach::not_sent: retried
    m_checks_wait = false;
  }
  for (int attempt = 0;; ++attempt) {
    if (m_conn.is_open() && m_conn.stale()) m_conn.close();
    if (!m_conn.is_open()) {
      Exchange x;
      x.error = connect(m_conn, deadline, true, false);
      if (!x.error.empty()) return x; // Reach::not_sent
    }
    if (script) commands.back().back() = server_run();
    Exchange x = m_conn.exchange(commands, deadline);
    // Sentinel: after a failure, or READONLY from a master demoted to a
    // replica, the next connect asks the sentinels. READONLY refuses the
    // request before anything was applied: it may go again, to the master.
    bool readonly = x.ok && sentinel() && refused_by_replica(x);
    if (!x.ok || readonly) m_master_known = false;
    if (readonly) {
      m_conn.close();
      if (attempt == 0 && sys::boottime_ms() < deadline) continue;
    }
    if (x.ok || x.reach != Reach::not_sent || attempt > 0 || sys::boottime_ms() >= deadline) {
      if (!x.ok) x.error = describe_failure(x.error);
      return x;
    }
  }
}

std::string Client::describe_failure(const std::string& err) const {
  if (err == net::k_timed_out)
    return "no answer from Redis at " + m_where + " within " + core::format_duration(m_budget_ms);
  return scrub("Redis at " + m_where + ": " + err);
}

Exchange Client::call_script(const lua::Script& s, const std::vector<std::string>& keys,
                             const std::vector<std::string>& args, int64_t deadline,
                             bool ping_first) {
  if (m_cluster) return cluster_script(s, keys, args, deadline, ping_first);
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

namespace {

// acquire_slot's reply: the slot, and the N that refused (0: none).
bool read_slot(const redisReply* r, size_t first, Reply& out) {
  int64_t slot = 0, recorded = 0;
  if (!as_int(r->element[first], slot) || !as_int(r->element[first + 1], recorded)) return false;
  out.observed.lease.slot = int(slot);
  out.slots_recorded = int(recorded);
  return true;
}

} // namespace

Reply Client::run(const lua::Script& s, const std::string& mutex,
                  const std::vector<std::string>& args, int64_t timeout_ms, bool ping_first,
                  Extra extra) {
  // A slot's row "m#k" (core/slots.hpp) is the hash "<prefix>{m}#k": the
  // mutex's hash tag and fence.
  size_t slot = mutex.find('#');
  std::string hash = hash_key(slot == std::string::npos ? mutex : mutex.substr(0, slot));
  std::string fence = hash + ":fence";
  if (slot != std::string::npos) hash.append(mutex, slot, std::string::npos);
  Exchange x = call_script(s, {hash, fence, k_marker}, script_args(args), call_deadline(timeout_ms),
                           ping_first);
  if (!x.ok) {
    return Reply::failure(
        x.reach == Reach::not_sent ? Reply::Status::failed : Reply::Status::indeterminate, x.error);
  }
  const redisReply* r = x.replies[0].get();
  // Every refusal (LOADING, BUSY, NOAUTH, OOM, READONLY...) comes before
  // the script runs; the scripts check everything before they write.
  if (is_error(r)) {
    std::string text = reply_text(r);
    return Reply::failure(
        is_permission_error(text) ? Reply::Status::refused : Reply::Status::failed, scrub(text));
  }
  Reply out;
  int64_t changed = 0;
  size_t extra_fields = extra == Extra::done       ? k_done_fields
                        : extra == Extra::last_run ? 1
                        : extra == Extra::slot     ? 2
                                                   : 0;
  size_t first_extra = 2 + k_lease_fields;
  int64_t last_run = -1;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != first_extra + extra_fields ||
      !as_int(r->element[0], out.observed.now) || !as_int(r->element[1], changed) ||
      !read_lease(r, 2, out.observed.lease) ||
      (extra == Extra::done && !read_done(r, first_extra, out.done)) ||
      (extra == Extra::last_run && !as_int(r->element[first_extra], last_run)) ||
      (extra == Extra::slot && !read_slot(r, first_extra, out)))
    return Reply::failure(Reply::Status::failed,
                          std::string("unexpected reply from the ") + s.name + " script");
  if (last_run >= 0) out.last_run_at = last_run;
  out.status = Reply::Status::ok;
  out.changed = changed != 0;
  return out;
}

const redisReply* Client::answer(const Exchange& x, std::string& error) const {
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

std::vector<std::string> Client::script_args(std::vector<std::string> args) const {
  args.push_back(m_history_limit);
  args.push_back(std::to_string(m_uri.db));
  args.push_back(server_run());
  return args;
}

} // namespace simba::backend::redis
