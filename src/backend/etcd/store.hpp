#pragma once
// The few etcd calls the backend makes, typed: leases (grant, keep-alive,
// revoke, time to live), one read of a contender's key and its mutex's
// oldest key in one transaction, and the transactions that write them.
#include "backend/etcd/client.hpp"
#include "backend/etcd/keys.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace simba::backend::etcd {

// A lease call: `ttl_s` what etcd says the lease lasts from the call (0:
// the lease is gone), `call.sent_at` when the request left.
struct LeaseCall {
  Call call;
  std::string id;
  int64_t ttl_s = 0;
};

// What one read transaction saw.
struct Seen {
  Call call;
  std::optional<Kv> mine;   // the contender's key
  std::optional<Kv> oldest; // the mutex's owner (or revoked lease); a slot's row
                            // ("m#k"): the key that holds slot k
  int64_t revision = 0;     // the store's revision at the read
  bool pending = false;     // enqueue wrote the acquisition's event to number later
  bool mine_is_oldest() const {
    return mine && oldest && mine->create_revision == oldest->create_revision;
  }
};

// What a contender's watch starts from (wakeups.cpp), as a call that read
// or made its key `mine` saw it at `revision`: a waiter watches `key`, the
// one just before its own; an owner its own (`key` == `mine`).
struct Predecessor {
  std::string mine;
  std::string key;
  int64_t revision = 0;
};

// The store's revision an answer was given at (a write's own revision).
int64_t header_revision(const Call& c);

class Store {
public:
  explicit Store(const EtcdUri& uri) : m_client(uri) {}

  LeaseCall grant(int64_t ttl_s, int64_t deadline);
  LeaseCall keep_alive(const std::string& id, int64_t deadline);
  Call revoke(const std::string& id, int64_t deadline);
  // The seconds the lease has left (etcd rounds down; -1 when it is gone,
  // 0 when unknown) and the TTL it was granted.
  int64_t seconds_left(const std::string& id, int64_t deadline, int64_t* granted = nullptr);

  // Reads `key` (when not "") and the oldest key of `mutex` at one revision;
  // of a slot's row "m#k", the key of m that holds slot k (Kv::row).
  Seen read(const std::string& mutex, const std::string& key, int64_t deadline);
  // Creates `key` with `entry` on lease `lease` unless it exists, and reads
  // it and the oldest key of `mutex` in the same transaction (the
  // `etcdctl lock` recipe). `created` says whether it made the key; when
  // it did behind another, take_predecessor() tells that one. `event`
  // (not ""): when the mutex had no key (so ours owns it at once), the
  // acquisition's event is written under pending_prefix() in the same
  // transaction (Seen::pending).
  Seen enqueue(const std::string& mutex, const std::string& key, const Entry& entry,
               const std::string& lease, const std::string& event, bool& created,
               int64_t deadline);
  // read()'s transaction, writing `event` as enqueue() does if `key` is
  // still as made at `created` (never rewritten) and the oldest
  // (Seen::pending): a waiter at the head takes the mutex in one call.
  Seen take(const std::string& mutex, const std::string& key, int64_t created,
            const std::string& lease, const std::string& event, int64_t deadline);
  // Writes `entry` into `key` if its mod revision is still `mod_revision`,
  // keeping its lease, or moving it to `lease` when not "". False with an
  // ok call: the key changed meanwhile.
  Call rewrite(const std::string& key, int64_t mod_revision, const Entry& entry,
               const std::string& lease, bool& done, int64_t deadline);
  // Deletes `key` if its create revision is still `create_revision` and its
  // mod revision `mod_revision` (nobody rewrote it since, e.g. a forced
  // release): an owner's release in one write, its lease left to revoke.
  Call remove(const std::string& key, int64_t create_revision, int64_t mod_revision, bool& done,
              int64_t deadline);

  // What the last call that saw `mine` saw (a waiter's predecessor, or its
  // own key for an owner: `waiting`), once.
  std::optional<Predecessor> take_predecessor(const std::string& mine, bool waiting);
  void remember(Predecessor p) { m_predecessor = std::move(p); }

  Client& client() { return m_client; }
  const std::string& prefix() const { return m_client.uri().prefix; }

  // The history record of a mutex (history.cpp) as the last read or write
  // of this process saw it: read and enqueue read it in their transaction,
  // so that an event costs one write, compared on its mod revision (0:
  // none). nullopt: never seen.
  // With it, the acquisitions' events not numbered yet (enqueue's and
  // take's `event`), by token (the acquisition's: the event's own, else
  // the pending key's create revision, enqueue's key's).
  struct Pending {
    std::string key;
    uint64_t token = 0;
    std::string value;
  };
  struct Record {
    int64_t mod_revision = 0;
    std::string value;
    std::vector<Pending> pending;
  };
  std::optional<Record> record_seen(const std::string& mutex) const;
  void record_is(const std::string& mutex, std::optional<Record> r);
  // The two ranges that read the record of `mutex` and its pending events.
  nlohmann::json record_ranges(const std::string& mutex) const;
  // The record as the `at`-th and next responses of a txn answer show it
  // (record_ranges()).
  void note_record(const std::string& mutex, const nlohmann::json& txn, size_t at);
  // Reads the record: false when the call failed.
  bool read_record(const std::string& mutex, int64_t deadline);

private:

  Client m_client;
  std::map<std::string, Record> m_records; // by mutex
  std::optional<Predecessor> m_predecessor;
};

} // namespace simba::backend::etcd
