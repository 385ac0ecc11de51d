#pragma once
// simba doctor's checks of an etcd backend (backend/diagnosis.hpp):
//
//   members   each member of the URI answers its status (and its version)
//   leader    the members that answer agree on a leader (none: no quorum)
//   versions  every member runs the same etcd version (warn when not)
//   rights    simba's prefix can be read with the URI's user (or none)
//   lease-clock  irrelevant offsets: leases run on the leader's monotonic clock
#include "backend/diagnosis.hpp"
#include "backend/etcd/client.hpp"
#include "backend/uri.hpp"

namespace simba::backend::etcd {

void diagnose(const EtcdUri& uri, Client& client, Diagnosis& found,
              const DiagnoseOptions& options);

} // namespace simba::backend::etcd
