#pragma once
// Redis Sentinel (RedisUri::sentinel): which server is the master. The
// sentinels are asked in the URI's order (SENTINEL get-master-addr-by-name),
// each within its share of the time left, until a majority names one
// address; the Client then connects to it and confirms with ROLE that it
// is the master (server_check.cpp). A call that fails by a
// refused connection, a timeout or a READONLY answer makes the next connect
// ask the sentinels again (client.cpp).
//
// The quarantine after a failover (lua/common.lua, "The server run"): with
// Sentinel the run a script compares is the run_id and the master_replid
// (INFO replication). A promoted replica has a run_id of its own, and every
// promotion takes a new replication id: even an old master promoted again
// without a restart, whose data is now what the replica had, counts as a
// server that may have lost a lease.
//
// Sentinel's split brain: after a failover the old master goes on taking
// writes until Sentinel turns it into a replica (some 10 s with Debian's
// defaults, longer when it is cut off), and a client connected to it would
// renew or grant leases there while the new master grants the mutex again.
// The sentinels do not switch to the new master at one moment either: the
// leader first, the others when its hello reaches them (up to seconds
// later). So a master is taken only when a majority of the URI's
// sentinels name it, and a call first asks again when the last answer is
// older than k_sentinel_confirm_ms. Two majorities share a sentinel, and a
// sentinel names the new master only after it stopped naming the old one:
// a client that reaches the new master does so after every answer that
// named the old one, and a client writes to the old master at most
// k_sentinel_confirm_ms after such an answer (counted from the moment it
// began asking: the answers of a majority may take most of a call's
// timeout to come, longer than the slack) -- also a request executed
// late by a paused old master, since its sender counts its lease from the
// moment it was sent. The new master grants nothing for the quarantine
// (longest lease + 1 s) after its first request, so a lease granted or
// renewed on the old master ends first, as long as k_sentinel_confirm_ms
// stays within the quarantine's 1 s slack and every host lists the same
// sentinels (in any order; docs/backends/redis.md "Redis Sentinel").
#include "backend/uri.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace simba::backend::redis {

constexpr int64_t k_sentinel_confirm_ms = 500;

// The master's address as one sentinel sees it.
struct SentinelAnswer {
  bool reached = false; // the sentinel answered (else `error` says why not)
  bool known = false;   // it knows the master's name
  std::string host;
  int port = 0;
  std::string error;
};

// Asks sentinel `node` for the address of `uri`'s master, before `deadline`.
SentinelAnswer ask_sentinel(const RedisUri& uri, const RedisSentinels::Node& node,
                            int64_t deadline);

// Asks the sentinels of `uri` in the URI's order, each within its share of
// the time left before `deadline` (one that does not answer leaves time
// for the next), until a majority of them (more than half of those the URI
// lists) name one master, and hands it to `take`: "" when `take` returns
// true. Else why no master was taken: one line for the user
// (no_master_message, or that no majority names one), or "refused" when
// `take` refused the majority's master (the caller knows why). `uri` is
// read once, before the first sentinel is asked.
std::string ask_sentinels(const RedisUri& uri, int64_t deadline,
                          const std::function<bool(const SentinelAnswer&)>& take);

// One line for the user when no sentinel named a master: `unknown` when one
// that answered did not know the name; `first_error`, the first sentinel
// that failed.
std::string no_master_message(const RedisUri& uri, bool unknown, const std::string& first_error);

} // namespace simba::backend::redis
