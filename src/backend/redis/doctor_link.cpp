// How simba doctor's checks reach the servers (doctor_link.hpp).
#include "backend/redis/doctor_link.hpp"

#include "backend/net/deadline_io.hpp"
#include "backend/redis/sentinel.hpp"

#include <cstdlib>

namespace simba::backend::redis {
namespace {

Command eval(const lua::Script& s, const std::vector<std::string>& keys,
             const std::vector<std::string>& args) {
  Command cmd{"EVAL", s.text, std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

} // namespace

std::string DoctorLink::login(Connection& c, const RedisUri& at, const std::string& where,
                              int64_t deadline) {
  std::string err = c.connect(at, deadline);
  if (!err.empty()) return scrub("cannot connect to Redis at " + where + ": " + err, at.password);
  std::vector<Command> hello;
  if (!at.password.empty())
    hello.push_back(at.user.empty() ? Command{"AUTH", at.password}
                                    : Command{"AUTH", at.user, at.password});
  if (at.db != 0) hello.push_back({"SELECT", std::to_string(at.db)});
  if (hello.empty()) return "";
  Exchange x = c.exchange(hello, deadline);
  if (!x.ok) return scrub("Redis at " + where + ": " + x.error, at.password);
  for (const ReplyPtr& r : x.replies)
    if (is_error(r.get())) {
      c.close();
      return scrub("Redis at " + where + " refused the login: " + reply_text(r.get()), at.password);
    }
  return "";
}

std::string DoctorLink::open(int64_t deadline) {
  if (m_client.cluster()) {
    std::string err;
    m_servers = m_client.listing_nodes(deadline, err);
    return err;
  }
  m_at = m_client.uri();
  if (!m_at.sentinel.nodes.empty()) {
    std::string none = ask_sentinels(m_at, deadline, [&](const SentinelAnswer& a) {
      m_at.host = a.host;
      m_at.port = a.port;
      return true;
    });
    if (!none.empty()) return none;
  }
  m_servers = {redis_where(m_at)};
  std::string err = login(m_conn, m_at, m_servers[0], deadline);
  if (!err.empty()) return err;
  // The run the Client would send its scripts (server_check.cpp): the
  // run_id, and with Sentinel the replication id after it.
  Exchange x = m_conn.exchange({{"INFO", "server"}, {"INFO", "replication"}}, deadline);
  if (!x.ok) return "Redis at " + m_servers[0] + ": " + x.error;
  std::string run = info_field(reply_text(x.replies[0].get()), "run_id");
  if (!m_at.sentinel.nodes.empty())
    run += ":" + info_field(reply_text(x.replies[1].get()), "master_replid");
  m_run = m_at.quarantine ? run : "";
  return "";
}

Exchange DoctorLink::ask(size_t i, const std::vector<Command>& commands, int64_t deadline) {
  if (m_client.cluster()) return m_client.call_on(m_servers[i], commands, deadline);
  if (!m_conn.is_open()) {
    Exchange x;
    x.error = login(m_conn, m_at, m_servers[0], deadline);
    if (!x.error.empty()) return x;
  }
  Exchange x = m_conn.exchange(commands, deadline);
  if (!x.ok && x.error == net::k_timed_out) x.error = "no answer from Redis at " + m_servers[0];
  return x;
}

Exchange DoctorLink::marker_script(size_t i, const lua::Script& s, std::vector<std::string> args,
                                   int64_t deadline) {
  if (m_client.cluster())
    return m_client.call_script_on(m_servers[i], s, {k_marker}, args, deadline);
  args.back() = m_run;
  return ask(i, {eval(s, {k_marker}, args)}, deadline);
}

Exchange DoctorLink::script(const lua::Script& s, const std::vector<std::string>& keys,
                            const std::vector<std::string>& args, int64_t deadline) {
  if (m_client.cluster()) return m_client.call_script(s, keys, args, deadline);
  return ask(0, {eval(s, keys, args)}, deadline);
}

RedisUri DoctorLink::address_of(size_t i) const {
  if (!m_client.cluster()) return m_at;
  RedisUri at = m_client.uri();
  const std::string& name = m_servers[i]; // "host:port", "[v6]:port"
  size_t colon = name.rfind(':');
  at.host = name.substr(0, colon);
  if (at.host.size() > 1 && at.host.front() == '[') at.host = at.host.substr(1, at.host.size() - 2);
  at.port = std::atoi(name.c_str() + colon + 1);
  return at;
}

std::string DoctorLink::connect_fresh(size_t i, Connection& c, int64_t deadline) {
  return login(c, address_of(i), m_servers[i], deadline);
}

} // namespace simba::backend::redis
