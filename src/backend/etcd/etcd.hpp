#pragma once
// backend/etcd/: the etcd v3 backend, a consensus store many hosts share;
// leases are etcd's, timed on its leader's monotonic clock (README.md:
// how they map onto simba's leases, and why that is safe).
//
//   etcd.hpp      this factory, all that open_backend() sees
//   backend.cpp   the Backend: the queue of keys, the lease operations
//   listing.cpp   inspect(): the mutexes, their holders and waiters
//   slots.cpp     --slots N: the N oldest keys own the slots
//   run_mark.cpp  guard_mark(): schedule's last run, a key of its own
//   once_per.cpp  --once-per: the done record, a key of its own
//   history.cpp   history and counters: a record and a ring of events
//   wakeups.*     a waiter watches its predecessor's key; an owner its own
//   doctor.*      simba doctor's checks: members, leader, versions, rights
//   store.*       the etcd calls the backend makes, typed
//   keys.*        the key layout and values, the requests' JSON (no I/O)
//   client.*      the JSON gateway: members in turn, the login, errors sorted
//   http.*        HTTP/1.1 on one connection: whole answers, and streams
#include "backend/backend.hpp"
#include "backend/uri.hpp"

#include <memory>

namespace simba::backend {

// Makes the backend; connects at the first call (a member that does not
// answer then is a failed call, as on any later call).
std::unique_ptr<Backend> open_etcd(EtcdUri uri);

} // namespace simba::backend
