#pragma once
// simba doctor on Redis (Backend::diagnose, backend/diagnosis.hpp; issue 32
// §2): what makes a Redis fit for simba, one Finding per check, and the
// admin step that marks a new database (--init). The checks, by stable name:
//
//   acl               the connected user may run every command simba sends
//                     and its scripts call, on its keys and channels
//                     (doctor_acl.cpp)
//   persistence       AOF or RDB, or nothing: a restart then loses every
//                     lease (doctor_server.cpp)
//   maxmemory-policy  no policy that may evict a lease (doctor_server.cpp)
//   replication       the server is a master, not a replica (doctor_server.cpp)
//   sentinel          every sentinel names the same master (doctor_topology.cpp)
//   cluster           every slot of the cluster is served (doctor_topology.cpp)
//   tls               rediss://: the server's certificate and its expiry
//                     (doctor_topology.cpp)
//   server-run        the database carries simba's marker of this server run
//                     (doctor_marker.cpp)
//
// In a Redis Cluster the per-server checks run on every master, their
// details naming it.
#include "backend/diagnosis.hpp"

#include <cstdint>
#include <string>

namespace simba::backend::redis {

class Client;

// Appends the findings; never throws (a check that cannot be made is a
// finding, fail, saying why).
void diagnose(Client& client, Diagnosis& found, const DiagnoseOptions& options);

// simba doctor --init (docs/backends/redis.md "A database you know is new"):
// writes simba's marker of the current server run into the database (each
// master's, in a cluster), so that its first lease waits no quarantine.
// Refuses, with `why` (one line), a database that holds keys under the
// URI's prefix or any marker already (of this run: already in use; of
// another: the server restarted or failed over since simba used it, and
// may have lost a lease), and a URI with quarantine=off. True when marked;
// `why` then says what was written.
bool mark_database_new(Client& client, int64_t timeout_ms, std::string& why);

} // namespace simba::backend::redis
