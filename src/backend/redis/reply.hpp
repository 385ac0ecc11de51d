#pragma once
// Reading what a Redis server answers: hiredis' reply objects, owned and
// taken apart, and the password scrubbed from any text shown.
#include "backend/redis/reply_objects.hpp"
#include "core/lease.hpp"
#include "core/once_per.hpp"

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace simba::backend::redis {

struct ReplyFree {
  void operator()(redisReply* r) const { free_reply(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

std::string reply_text(const redisReply* r);
bool is_error(const redisReply* r);
// An error that says the ACL user lacks a permission (NOPERM, or a command
// a script calls that the user may not run): it will not heal by itself.
bool is_permission_error(const std::string& text);
bool as_int(const redisReply* r, int64_t& v);
// A string, a status, or nil (as "").
bool as_string(const redisReply* r, std::string& s);

// A lease as the scripts return it (lua/common.lua: reply): owner,
// acquired_at, ttl_at, transition_at, token, quarantine, holding at
// elements[first .. first + k_lease_fields - 1].
constexpr size_t k_lease_fields = 7;
bool read_lease(const redisReply* r, size_t first, core::Lease& l);

// The done record of --once-per as the *_once scripts append it
// (lua/common_once.lua: once_reply): has, window, label, host, token,
// started_at, finished, exit_code, finished_at, period, offset.
constexpr size_t k_done_fields = 11;
bool read_done(const redisReply* r, size_t first, std::optional<core::DoneRecord>& d);

// Pub/sub: the confirmation of a SUBSCRIBE (SSUBSCRIBE); a message on
// `channel`; an UNSUBSCRIBE (SUNSUBSCRIBE: a cluster moved the slot away).
bool is_subscribed(const redisReply* r);
bool is_unsubscribed(const redisReply* r);
bool is_message_on(const redisReply* r, const std::string& channel);

// INFO's "name:value" line, "" when missing.
std::string info_field(const std::string& info, const std::string& name);

// Defence in depth: whatever a server or a library says, the password is
// not repeated.
std::string scrub(std::string msg, const std::string& password);

} // namespace simba::backend::redis
