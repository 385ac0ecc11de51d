#pragma once
// backend/redis/: the Redis backend (DESIGN §5.2), one Redis server (or a
// Sentinel-named master, or a Redis Cluster) shared by many hosts. Leases
// live in hashes changed only by the Lua scripts of
// lua/ (run on the server's clock, embedded at build time); a release wakes
// the next waiter, or hands the mutex over to it, over pub/sub.
//
//   redis.hpp        this factory, all that open_backend() sees
//   backend.cpp      the Backend: the lease operations, forwarding the rest
//   client.*         the main connection: requests, scripts, the key layout
//   connection.*     one connection with deadlines (net/ dials, hiredis parses), TLS or not
//   server_check.*   what a connection sends first (or with its first script),
//                    the server's checks
//   sentinel.*       Redis Sentinel: asking the sentinels for the master
//   cluster_slots.*  Redis Cluster's addressing: key slots, the slot map,
//                    MOVED and ASK read (no I/O)
//   cluster_route.*  Redis Cluster: a call sent to the master of its slot,
//                    redirections followed; one connection per master
//   client_cluster.cpp  the Client's calls that a cluster routes
//   doctor.*         simba doctor: the checks of a Redis (Backend::diagnose)
//                    and --init; doctor_link.* how they reach the servers,
//                    doctor_{acl,server,topology,marker}.cpp the checks
//   reply.*          reading hiredis' replies
//   reply_objects.*  the reply objects, made without hiredis.c (and its getaddrinfo)
//   reply_bound.*    what one reply may cost (hiredis 0.14 has no limit)
//   wakeups.*        watch(): pub/sub, the waiters' queue, grants
//   listing.*        list(), inspect(), history(): the mutexes for `simba
//                    status` (holders, waiters) and `simba history`
//   lua/             the scripts (lua/common.lua: the key layout, the
//                    quarantine; lua/common_queue.lua: the waiters' queue,
//                    the hand-over, the history;
//                    lua/common_once.lua: the done records of --once-per;
//                    lua/acquire_slot.lua and common.lua "Slots": --slots)
#include "backend/backend.hpp"
#include "backend/uri.hpp"

#include <memory>

namespace simba::backend {

// Connects to the server of `uri` (uri.hpp) and checks it. Throws
// UnavailableError when the server cannot be reached, refuses the
// password, or does not speak Redis (or a Redis too old, or one that may
// evict a lease) — within the URI's timeout. Where the checks wait for the
// first call (server_check.hpp: hello_can_wait()), that call throws it.
std::unique_ptr<Backend> open_redis(RedisUri uri);

// simba doctor --init (docs/backends/redis.md "A database you know is
// new"): marks the database of `backend` (opened by open_backend() from a
// Redis URI) as new, so that its first lease waits no quarantine: the
// marker of the current server run, written only where the database holds
// no marker and no key under the URI's prefix. True when written; `why`
// is one line either way (what was marked, or why not: not a Redis
// backend, quarantine=off, simba's keys or marker already there, the
// server unreachable). Never throws for what it finds.
bool init_new_redis_database(Backend& backend, int64_t timeout_ms, std::string& why);

} // namespace simba::backend
