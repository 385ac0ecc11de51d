#pragma once
// simba doctor (doctor.hpp): how its checks reach the servers. Not through
// the main connection: that one refuses, for good, a server simba may not
// use (an allkeys-* eviction policy, server_check.hpp), and the doctor is
// there to say what such a server looks like. So with one server (or
// Sentinel's master, the one a majority of the sentinels name) the checks
// get a connection of their own, logged in (AUTH) and in the URI's database
// (SELECT) and nothing more; in a Redis Cluster they go to each master
// over the Client's own connections, which opened only if no master has
// such a policy.
#include "backend/redis/client.hpp"

#include <string>
#include <vector>

namespace simba::backend::redis {

class DoctorLink {
public:
  explicit DoctorLink(Client& client) : m_client(client) {}

  // Finds and connects the servers; "" or one line (no server to check).
  std::string open(int64_t deadline);

  // Where each server is ("host:port", a socket path); one but in a cluster.
  const std::vector<std::string>& servers() const { return m_servers; }
  bool cluster() const { return m_client.cluster(); }
  Client& client() { return m_client; }

  // Commands on server `i`.
  Exchange ask(size_t i, const std::vector<Command>& commands, int64_t deadline);

  // A script (lua/) on server `i` whose only key is the marker; its last
  // argument becomes the run of that server as simba's scripts get it
  // (lua/common.lua "The server run"; "" with quarantine=off).
  Exchange marker_script(size_t i, const lua::Script& s, std::vector<std::string> args,
                         int64_t deadline);

  // A script on the server of `keys` (in a cluster, the master of the first
  // one's slot; the marker may be among them), its args as given.
  Exchange script(const lua::Script& s, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, int64_t deadline);

  // A fresh connection to server `i` of the checks' own, logged in: for what
  // leaves a connection unusable after (SUBSCRIBE). "" or why not.
  std::string connect_fresh(size_t i, Connection& c, int64_t deadline);

private:
  std::string login(Connection& c, const RedisUri& at, const std::string& where, int64_t deadline);
  RedisUri address_of(size_t i) const;

  Client& m_client;
  Connection m_conn; // one server: the checks' own
  RedisUri m_at;     // ... and where it goes
  std::string m_run; // ... and that server's run, as Client learns it
  std::vector<std::string> m_servers;
};

} // namespace simba::backend::redis
