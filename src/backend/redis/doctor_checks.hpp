#pragma once
// The Redis doctor's checks (doctor.hpp), one function each, and the
// findings' shape. Each appends its findings to `found`; none throws.
#include "backend/diagnosis.hpp"
#include "backend/redis/doctor_link.hpp"

#include <string>

namespace simba::backend::redis {

Finding ok_finding(const std::string& check, const std::string& detail);
Finding warn_finding(const std::string& check, const std::string& detail, const std::string& fix);
Finding fail_finding(const std::string& check, const std::string& detail, const std::string& fix);

// "at host:port: " in a cluster (several servers), else "".
std::string server_label(const DoctorLink& link, size_t i);

// doctor_server.cpp: persistence, maxmemory-policy, replication of server i.
void check_server(DoctorLink& link, size_t i, Diagnosis& found, int64_t deadline);
// doctor_acl.cpp: the user's rights (on the first server; a cluster's
// scripts on the master of the probe's key).
void check_acl(DoctorLink& link, Diagnosis& found, int64_t deadline);
// doctor_marker.cpp: the marker of server i.
void check_marker(DoctorLink& link, size_t i, Diagnosis& found, int64_t deadline);
// doctor_topology.cpp: Sentinel's views, a cluster's slots, TLS.
void check_sentinels(const RedisUri& uri, Diagnosis& found, int64_t deadline);
void check_cluster(DoctorLink& link, Diagnosis& found, int64_t deadline);
void check_tls(DoctorLink& link, Diagnosis& found, int64_t deadline);

} // namespace simba::backend::redis
