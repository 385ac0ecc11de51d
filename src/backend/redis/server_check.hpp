#pragma once
// What a fresh connection sends first, and the checks of the server it
// talks to: the password (AUTH), the database (SELECT), and on the main
// connection the server's run (INFO server: run_id, for the quarantine of
// lua/common.lua), its version (5 or newer: see learn_server()) and its
// eviction policy (INFO memory: none that may evict a lease); when simba
// starts as an ACL user, that its ACL lets it run the scripts and publish;
// with Sentinel, that the server is the master (ROLE) and its replication id
// (INFO replication, sentinel.hpp). All in one write: no round trip of its own.
#include "backend/redis/connection.hpp"
#include "backend/uri.hpp"

#include <cstdint>
#include <string>

namespace simba::backend::redis {

// The oldest Redis the scripts run on (learn_server() says why).
constexpr int k_min_redis_major = 5;

// Sends AUTH when there is a password, SELECT when `select` and the
// database is not 0, and with `select` INFO server and INFO memory (setting
// `run_id`). Their replies prove that a Redis answers; with none of them,
// `verify` sends a PING for that (only when simba starts: a reconnect in a
// call needs no proof). "" or one line for the user (then `c` is closed);
// `for_now`, when given, says whether that refusal is one of the server's
// passing states (refused_for_now()).
std::string check_server(Connection& c, const RedisUri& uri, const std::string& where,
                         int64_t deadline, bool select, bool verify, std::string& run_id,
                         bool* for_now = nullptr);

// LOADING (a dataset being loaded), BUSY (a script past its time limit),
// MASTERDOWN (a replica without its master), TRYAGAIN (a slot in
// migration): the server refuses for a while, before running anything. The
// backend is unavailable for now, not for good: a call that meets one
// fails and is retried (until --timeout, then 69), even in the checks when
// simba starts.
bool refused_for_now(const std::string& error_reply);

// The hello of the main connection may wait for the first script, and go in
// its write (Client::call(), docs/benchmarks.md: one round trip less per run),
// when nothing in it may refuse while the script still runs: no password
// (a wrong one would leave the script to the default user), database 0 (a
// refused SELECT would leave it to database 0), no Sentinel (ROLE first),
// the quarantine on (the script then learns the server's run itself, and
// refuses before any write a server that may evict a lease: lua/common.lua
// "The first script of a connection").
bool hello_can_wait(const RedisUri& uri);

// The main connection's hello (INFO server, INFO memory) when it waits.
std::vector<Command> main_hello(const RedisUri& uri);

// check_server() of the answers to `hello`, the first replies of `x`.
std::string check_hello(Connection& c, const RedisUri& uri, const std::string& where,
                        const std::vector<Command>& hello, const Exchange& x, std::string& run_id,
                        bool* for_now = nullptr);

} // namespace simba::backend::redis
