// simba doctor on Redis: simba's marker of the server run (doctor.hpp:
// server-run), and --init, which writes it into a database the admin knows
// is new (lua/common.lua "The server run", docs/backends/redis.md "A
// database you know is new").
#include "backend/redis/doctor.hpp"

#include "backend/redis/doctor_checks.hpp"
#include "backend/redis/listing.hpp"
#include "sys/clock.hpp"

#include <exception>

namespace simba::backend::redis {
namespace {

constexpr const char* k_server_run = "server-run";

// A run for people: its first 12 hex digits (Sentinel's adds the
// replication id after a ':').
std::string short_run(const std::string& run) { return run.substr(0, 12); }

// The arguments every script ends with (lua/common.lua); the link sets the
// server run, the last.
std::vector<std::string> tail(const RedisUri& uri) { return {"0", std::to_string(uri.db), ""}; }

// One key of simba's under the prefix on server `i` ("" none), or false
// with `error` when the scan failed.
bool first_key(DoctorLink& link, size_t i, int64_t deadline, std::string& key, std::string& error) {
  std::string pattern = glob_escape(link.client().uri().prefix) + "{*";
  std::string cursor = "0";
  do {
    Exchange x = link.ask(i, {{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}}, deadline);
    const redisReply* r = link.client().answer(x, error);
    if (!r) return false;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !as_string(r->element[0], cursor) ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
      error = "unexpected reply to SCAN";
      return false;
    }
    if (r->element[1]->elements > 0) return as_string(r->element[1]->element[0], key);
  } while (cursor != "0");
  return true;
}

} // namespace

void check_marker(DoctorLink& link, size_t i, Diagnosis& found, int64_t deadline) {
  const RedisUri& uri = link.client().uri();
  std::string label = server_label(link, i);
  if (!uri.quarantine) {
    if (i == 0)
      found.push_back(warn_finding(
          k_server_run,
          "quarantine=off: a lease lost in a restart, a failover or a flush is not waited out",
          "drop quarantine=off from the URI, unless the server cannot lose data"));
    return;
  }
  Exchange x = link.marker_script(i, lua::k_doctor_marker, tail(uri), deadline);
  std::string error;
  const redisReply* r = link.client().answer(x, error);
  int64_t now = 0, till = 0;
  std::string marker, run;
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4 || !as_int(r->element[0], now) ||
      !as_string(r->element[1], marker) || !as_string(r->element[2], run) ||
      !as_int(r->element[3], till)) {
    found.push_back(fail_finding(
        k_server_run,
        label + "cannot read simba's marker: " + (error.empty() ? "unexpected reply" : error),
        "fix what the other checks say, then run this again"));
    return;
  }
  std::string quarantine = till > now ? "; a quarantine holds new leases back for " +
                                            std::to_string((till - now + 999) / 1000) + " s more"
                                      : "";
  if (marker.empty()) {
    found.push_back(warn_finding(
        k_server_run,
        label + "no simba marker on this database: new, restarted or flushed; the first lease "
                "waits a quarantine",
        "simba doctor --init, when you know the database is new (never on a server that may "
        "have lost a running lease)"));
  } else if (marker == run) {
    found.push_back(ok_finding(k_server_run, label + "simba's marker of the current server run (" +
                                                 short_run(run) + ")" + quarantine));
  } else {
    found.push_back(
        warn_finding(k_server_run,
                     label + "simba's marker names another server run (" + short_run(marker) +
                         ", now " + short_run(run) +
                         "): the server restarted, failed over or was replaced since simba "
                         "last used it; the next lease waits a quarantine",
                     "nothing to do: the quarantine covers a lease the server may have lost"));
  }
}

namespace {

// Why --init refuses a database whose marker names `marker` (not "").
std::string marked_already(const std::string& marker, const std::string& run) {
  return marker == run
             ? "the database already carries simba's marker of this server run: simba "
               "uses it already, nothing to do"
             : "the database carries simba's marker of another server run (" + short_run(marker) +
                   "): the server restarted or failed over since "
                   "simba used it, and may have lost a lease";
}

// The marker of server `i` (doctor_marker.lua): false with `why` when it
// cannot be read or refuses --init.
bool unmarked(DoctorLink& link, size_t i, int64_t deadline, std::string& why) {
  Exchange x = link.marker_script(i, lua::k_doctor_marker, tail(link.client().uri()), deadline);
  const redisReply* r = link.client().answer(x, why);
  std::string marker, run;
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4 || !as_string(r->element[1], marker) ||
      !as_string(r->element[2], run)) {
    if (why.empty()) why = "unexpected reply from the doctor_marker script";
    return false;
  }
  if (!marker.empty()) why = server_label(link, i) + marked_already(marker, run);
  return marker.empty();
}

bool mark(Client& client, int64_t timeout_ms, std::string& why) {
  const RedisUri& uri = client.uri();
  if (!uri.quarantine) {
    why = "the URI has quarantine=off: simba keeps no marker there";
    return false;
  }
  int64_t budget = timeout_ms > 0 ? timeout_ms : uri.timeout_ms;
  auto deadline = [budget] { return sys::boottime_ms() + budget; };
  DoctorLink link(client);
  why = link.open(deadline());
  if (!why.empty()) return false;
  // Every server first: a cluster is marked whole or not at all (but for
  // a race with a first lease, which the script refuses).
  for (size_t i = 0; i < link.servers().size(); ++i) {
    std::string key;
    if (!unmarked(link, i, deadline(), why) || !first_key(link, i, deadline(), key, why))
      return false;
    if (!key.empty()) {
      why = server_label(link, i) + "the database holds simba's keys (" + key +
            "): it is not new, and its first lease must wait the quarantine";
      return false;
    }
  }
  std::string marked;
  for (size_t i = 0; i < link.servers().size(); ++i) {
    Exchange x = link.marker_script(i, lua::k_mark_new, tail(uri), deadline());
    const redisReply* r = client.answer(x, why);
    std::string outcome, marker, run;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        !as_string(r->element[0], outcome) || !as_string(r->element[1], marker)) {
      if (why.empty()) why = "unexpected reply from the mark_new script";
      return false;
    }
    if (r->elements > 2) as_string(r->element[2], run);
    if (outcome != "marked") { // a first lease came in between
      why = server_label(link, i) + marked_already(marker, run);
      return false;
    }
    marked += (marked.empty() ? "" : ", ") + link.servers()[i] + " (run " + short_run(marker) + ")";
  }
  why = "marked database " + std::to_string(uri.db) + " at " + marked +
        " as new: its first lease waits no quarantine";
  return true;
}

} // namespace

bool mark_database_new(Client& client, int64_t timeout_ms, std::string& why) {
  try {
    return mark(client, timeout_ms, why);
  } catch (const std::exception& e) { // a cluster's calls throw what ends simba
    why = e.what();
    return false;
  }
}

} // namespace simba::backend::redis
