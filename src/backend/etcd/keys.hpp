#pragma once
// The keys simba writes in etcd and what they hold, and the JSON of the
// requests that read and write them (no I/O).
//
// A contender's place in a mutex's queue is one key,
// "<prefix><mutex>|<owner id>" ('|' is in no mutex name, so one mutex's
// keys are exactly those from "<prefix><mutex>|" up to "<prefix><mutex>}"),
// attached to a lease of the contender's own. Its create revision orders the
// queue: the lowest is the owner, and is the fencing token. Its value
// (Entry) says who the contender is, and whether the lease was revoked
// (simba release --force) or is only held (--min-hold).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simba::backend::etcd {

struct Entry {
  std::string owner;  // the owner id
  std::string holder; // holder.hpp's encoding, "" when not given
  int64_t since = 0;      // epoch ms (the writer's wall clock): it queued
  int64_t gives_up = 0;   // epoch ms: its --timeout ends; 0: never
  int64_t length_ms = 0;  // the lease it asked for (ttl + transition, or a hold)
  bool revoked = false;   // simba release --force: nobody owns it, CMD is being stopped
  bool holding = false;   // only held (Lease::holding)
  // The lease as its owner last counted it (acquired_at, ttl_at,
  // transition_at on the owner's backend clock: README.md "Timing"),
  // published with each acquisition and renewal so that others see it;
  // 0: not published (a waiter's key).
  int64_t acquired = 0;
  int64_t ttl_at = 0;
  int64_t until = 0;
  // --slots N (slots.cpp): the N of the contender (0: a plain one), and
  // the slot its key was given once among the N lowest (-1: none yet).
  int slots = 0;
  int slot = -1;
};

// One key as a range answer shows it.
struct Kv {
  std::string key;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  std::string lease; // the lease's id as etcd writes it (decimal), "0": none
  Entry entry;
  // Read as the row of one slot ("m#k": the key that holds slot k), not as
  // its mutex's oldest key (which, with slots, shows the marker).
  bool row = false;
};

std::string queue_key(const std::string& prefix, const std::string& mutex,
                      const std::string& owner);
// The history record of `mutex` (history.cpp): '!' begins no mutex name.
std::string record_key(const std::string& prefix, const std::string& mutex);
// Where an acquisition's event waits for its number (history.cpp), by
// the acquisition's lease id: "<prefix>!p/<mutex>|<lease>" (mutex "": every
// mutex's).
std::string pending_prefix(const std::string& prefix, const std::string& mutex);
// The mutex a queue key belongs to ("" when it is not one).
std::string mutex_of_key(const std::string& prefix, const std::string& key);

std::string encode_entry(const Entry& e);
Entry decode_entry(const std::string& value);

std::string base64(const std::string& bytes);
std::string unbase64(const std::string& text);

// Request parts, as the gateway's JSON takes them.
nlohmann::json range_one(const std::string& key);
// Every key that starts with `from`.
nlohmann::json range_prefix(const std::string& from);
// The compare of a txn that `mutex` has no key (nobody owns or waits).
nlohmann::json mutex_is_free(const std::string& prefix, const std::string& mutex);
// The compare of a txn that no key of `mutex` is older than
// `create_revision` (made before it).
nlohmann::json no_key_before(const std::string& prefix, const std::string& mutex,
                             int64_t create_revision);
// The oldest key (lowest create revision) of `mutex`: its owner.
nlohmann::json range_oldest(const std::string& prefix, const std::string& mutex);
// Every key of `mutex` (mutex "": every mutex's), in create-revision order.
nlohmann::json range_all(const std::string& prefix, const std::string& mutex);
// The `n` oldest keys of `mutex` (with slots: the N that own them).
nlohmann::json range_lowest(const std::string& prefix, const std::string& mutex, int n);
// The `n` newest keys of `mutex`, newest first, without their values.
nlohmann::json range_newest(const std::string& prefix, const std::string& mutex, int n);
// The key of `mutex` just before create revision `revision`: whom a waiter watches.
nlohmann::json range_before(const std::string& prefix, const std::string& mutex,
                            int64_t revision);

// The compares of a txn that `key` is still the one made at
// `create_revision` and last written at `mod_revision`.
nlohmann::json key_unchanged(const std::string& key, int64_t create_revision,
                             int64_t mod_revision);

// The keys of a range answer (of a txn's response_range too).
std::vector<Kv> kvs_of(const nlohmann::json& range_response);

} // namespace simba::backend::etcd
