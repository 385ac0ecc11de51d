#pragma once
// The backend's requests: the main connection to the server, reconnected
// when needed, the key layout (lua/common.lua), and the Lua scripts run on
// it with their replies read into a Reply.
#include "backend/backend.hpp"
#include "backend/redis/connection.hpp"
#include "backend/redis/lua_scripts.hpp"
#include "backend/uri.hpp"

#include <memory>
#include <string>
#include <vector>

namespace simba::backend::redis {

class ClusterRoute;

// The database's marker (lua/common.lua: "The server run"). One per
// database, not per prefix: a restart or a FLUSHDB loses every prefix's
// leases at once, and a first use of each prefix (every test has its own)
// need not wait a quarantine. No hash tag: in a Redis Cluster each master
// has its own marker instead, and this name stands for it in a script's
// keys (cluster_route.hpp).
extern const std::string k_marker;

class Client {
public:
  explicit Client(RedisUri uri);
  ~Client();

  const RedisUri& uri() const { return m_uri; }
  const std::string& where() const { return m_where; } // host:port or socket path

  // Connects and checks that a Redis answers (and accepts the password)
  // before anything else happens: a wrong password, a server that is down,
  // or a port where no Redis speaks end simba at once (exit 69). Where
  // hello_can_wait() (server_check.hpp), the checks go with the first call,
  // which then throws UnavailableError as open() would have.
  void open();

  // Connects `c` and checks the server (server_check.hpp). `select`: the
  // main connection (SELECT, and what it learns of the server); `verify`:
  // prove that a Redis answers even when nothing else is sent. "" or one
  // line for the user.
  std::string connect(Connection& c, int64_t deadline, bool select, bool verify);

  // Sentinel: asks the sentinels which server a majority of them name as
  // the master now, and moves to it when that is not the one this client
  // talks to; call() does it first when the last answer is older than
  // k_sentinel_confirm_ms (sentinel.hpp says why). "" when no Sentinel, or
  // one line when no majority names a master before `deadline` (the call
  // then fails: nobody can tell which server holds the leases).
  std::string confirm_master(int64_t deadline);

  // A call's whole deadline: its own timeout, capped by the URI's.
  int64_t call_deadline(int64_t timeout_ms);

  // One request on the main connection: reconnects first when needed, and
  // once more when a dead connection refused the request before any byte
  // of it left. `script`: the last command is a script, whose last
  // argument is the server run (script_args()); it is set for the
  // connection it goes on, which may be a new one (a restarted server has
  // another run).
  Exchange call(std::vector<Command> commands, int64_t deadline, bool script = false);

  // EVALSHA, and EVAL when the server does not know the script yet (it was
  // restarted, or SCRIPT FLUSHed): NOSCRIPT means nothing ran.
  // `ping_first`: a PING in the same write, before the script; its answer
  // is dropped (see RedisBackend::release()).
  Exchange call_script(const lua::Script& s, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, int64_t deadline,
                       bool ping_first = false);

  // A lease script on `mutex`'s keys, its answer as a Reply.
  // What a script appends to the lease: `done`, the done record
  // (lua/common_once.lua), read into Reply::done; `last_run`, one number
  // (lua/guard_mark.lua), read into Reply::last_run_at.
  enum class Extra { none, done, last_run, slot };
  Reply run(const lua::Script& s, const std::string& mutex, const std::vector<std::string>& args,
            int64_t timeout_ms, bool ping_first = false, Extra extra = Extra::none);

  // The reply of a finished exchange, or nullptr with `error` set (the call
  // failed, or the server answered with an error).
  const redisReply* answer(const Exchange& x, std::string& error) const;

  // "<prefix>{NAME}": the mutex's hash; its fence counter adds ":fence".
  std::string hash_key(const std::string& mutex) const { return m_uri.prefix + "{" + mutex + "}"; }

  // What lua/common.lua takes off the end of every script's arguments: the
  // database, and the run of the server this connection talks to ("": no
  // quarantine).
  std::vector<std::string> script_args(std::vector<std::string> args) const;

  std::string scrub(std::string msg) const { return redis::scrub(std::move(msg), m_uri.password); }

  // Redis Cluster (client_cluster.cpp, cluster_route.hpp); with one server
  // each of these is the plain call above.
  bool cluster() const { return bool(m_cluster); }
  // Where a listing reads: {""} (the server) or the name of every master.
  std::vector<std::string> listing_nodes(int64_t deadline, std::string& error);
  Exchange call_on(const std::string& node, std::vector<Command> commands, int64_t deadline);
  // A script there reading `keys` of that node (the listing scripts).
  Exchange call_script_on(const std::string& node, const lua::Script& s,
                          const std::vector<std::string>& keys,
                          const std::vector<std::string>& args, int64_t deadline);
  // The subscription of `mutex`'s channels: connects `c` where its
  // messages are published (the master of its slot), `where` set to that.
  std::string connect_subscriber(Connection& c, const std::string& mutex, int64_t deadline,
                                 std::string& where);
  // Where a subscription for `mutex` belongs now (a failover, a resharding
  // moves it).
  std::string where_of(const std::string& mutex) const;
  // A cluster's MOVED to a subscription: the slot map learns it (the next
  // subscription goes there).
  void learn_redirect(const std::string& error_text);
  // SSUBSCRIBE in a cluster (sharded pub/sub: lua/common.lua, PUBLISH).
  const char* subscribe_command() const { return m_cluster ? "SSUBSCRIBE" : "SUBSCRIBE"; }

private:
  Exchange cluster_script(const lua::Script& s, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args, int64_t deadline, bool ping_first);
  std::string server_run() const { return m_uri.quarantine ? m_run_id : ""; }
  std::string describe_failure(const std::string& err) const;
  // connect() to the URI's server; with Sentinel, to the master it names.
  std::string connect_to(Connection& c, int64_t deadline, bool select, bool verify);
  std::string connect_master(Connection& c, int64_t deadline, bool select, bool verify);
  bool sentinel() const { return !m_uri.sentinel.nodes.empty(); }
  Exchange call_with_hello(std::vector<Command> commands, int64_t deadline, bool script);

  RedisUri m_uri;
  std::string m_where;
  std::string m_history_limit; // SIMBA_HISTORY_LIMIT, sent with every script (lua/common.lua)
  Connection m_conn;
  std::string m_run_id;                    // of the server m_conn talks to (INFO at connect)
  int64_t m_budget_ms = 0;                 // of the current call, for messages
  bool m_master_known = false;             // Sentinel: m_uri's host and port are the master's
  int64_t m_confirmed_at = 0;              // Sentinel: when the asking that named it began (boottime)
  bool m_hello_waits = false;              // open() connected and left the hello to the first call
  bool m_checks_wait = false;              // open()'s checks were refused for now: the next call's
  bool m_checks_refused = false;           // the last connect's checks refused (it connected)
  bool m_refused_for_now = false;          // ... and the refusal was refused_for_now()
  std::unique_ptr<ClusterRoute> m_cluster; // redis+cluster://
};

} // namespace simba::backend::redis
