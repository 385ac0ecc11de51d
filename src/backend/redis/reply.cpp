// Reading Redis replies (reply.hpp).
#include "backend/redis/reply.hpp"

namespace simba::backend::redis {

std::string reply_text(const redisReply* r) {
  return r->str ? std::string(r->str, r->len) : std::string();
}

bool is_error(const redisReply* r) { return r->type == REDIS_REPLY_ERROR; }

bool is_permission_error(const std::string& text) {
  // Redis 7 words a script's refused command "ERR The user executing the
  // script can't run this command or subcommand" (or "can't access at
  // least one of the keys..."): an ERR, not a NOPERM.
  return text.rfind("NOPERM", 0) == 0 ||
         text.find("user executing the script can't") != std::string::npos;
}

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

bool read_lease(const redisReply* r, size_t first, core::Lease& l) {
  int64_t token = 0, quarantine = 0, holding = 0;
  bool ok =
      as_string(r->element[first], l.owner_id) && as_int(r->element[first + 1], l.acquired_at) &&
      as_int(r->element[first + 2], l.ttl_at) && as_int(r->element[first + 3], l.transition_at) &&
      as_int(r->element[first + 4], token) && as_int(r->element[first + 5], quarantine) &&
      as_int(r->element[first + 6], holding);
  l.fencing_token = static_cast<uint64_t>(token);
  l.quarantine = quarantine != 0;
  l.holding = holding != 0;
  return ok;
}

bool read_done(const redisReply* r, size_t first, std::optional<core::DoneRecord>& d) {
  int64_t has = 0, token = 0, finished = 0, exit_code = 0;
  core::DoneRecord rec;
  bool ok = as_int(r->element[first], has) && as_int(r->element[first + 1], rec.window_start) &&
            as_string(r->element[first + 2], rec.label) &&
            as_string(r->element[first + 3], rec.host) && as_int(r->element[first + 4], token) &&
            as_int(r->element[first + 5], rec.started_at) &&
            as_int(r->element[first + 6], finished) && as_int(r->element[first + 7], exit_code) &&
            as_int(r->element[first + 8], rec.finished_at) &&
            as_int(r->element[first + 9], rec.period_ms) &&
            as_int(r->element[first + 10], rec.offset_ms);
  rec.token = static_cast<uint64_t>(token);
  rec.finished = finished != 0;
  rec.exit_code = static_cast<int>(exit_code);
  d.reset();
  if (ok && has) d = std::move(rec);
  return ok;
}

bool is_subscribed(const redisReply* r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         r->element[0]->type == REDIS_REPLY_STRING &&
         (reply_text(r->element[0]) == "subscribe" || reply_text(r->element[0]) == "ssubscribe");
}

bool is_unsubscribed(const redisReply* r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         r->element[0]->type == REDIS_REPLY_STRING &&
         (reply_text(r->element[0]) == "unsubscribe" ||
          reply_text(r->element[0]) == "sunsubscribe");
}

bool is_message_on(const redisReply* r, const std::string& channel) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
         r->element[0]->type == REDIS_REPLY_STRING &&
         (reply_text(r->element[0]) == "message" || reply_text(r->element[0]) == "smessage") &&
         r->element[1]->type == REDIS_REPLY_STRING && reply_text(r->element[1]) == channel;
}

std::string info_field(const std::string& info, const std::string& name) {
  size_t at = info.rfind(name + ":", 0) == 0 ? 0 : info.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  if (at != 0) ++at;
  at += name.size() + 1;
  return info.substr(at, info.find_first_of("\r\n", at) - at);
}

std::string scrub(std::string msg, const std::string& password) {
  if (password.empty()) return msg;
  for (size_t at; (at = msg.find(password)) != std::string::npos;)
    msg.replace(at, password.size(), "***");
  return msg;
}

} // namespace simba::backend::redis
