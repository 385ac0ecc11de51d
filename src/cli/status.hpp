#pragma once
#include "cli/options.hpp"

namespace simba::cli {

struct StatusOptions {
  CommonOptions common;
  bool json = false;
  bool all = false;   // --all: free mutexes too
  bool wide = false;  // --wide: the table's fields whole on a terminal
  std::string format; // --format: table, json, openmetrics
};

constexpr const char* k_status_description = "Show who holds what, until when";
constexpr const char* k_release_description =
    "Break a lock (admin): revoke the lease; its owner stops CMD at once, and the mutex is free "
    "when the revoked lease would have ended";

CLI::App* add_status_command(CLI::App& app, StatusOptions& o);
int status_command(const StatusOptions& o);

struct ReleaseOptions {
  CommonOptions common;
  bool force = false;
  std::string token; // --token: only the lease with this fencing token
  std::string lease; // --lease H: end the lease of simba acquire (cli/lease.cpp)
  bool lease_given = false;
};

CLI::App* add_release_command(CLI::App& app, ReleaseOptions& o);
int release_command(const ReleaseOptions& o);

} // namespace simba::cli
