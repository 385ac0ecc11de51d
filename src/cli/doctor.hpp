#pragma once
// simba doctor: is a backend fit for simba? Each check one finding, ok,
// warn or fail with its fix (docs/commands.md, "simba doctor"): the ones
// every backend shares here (connection, clock, quarantine), then the
// backend's own (Backend::diagnose).
#include "cli/options.hpp"

namespace simba::cli {

struct DoctorOptions {
  CommonOptions common; // --backend, and the --ttl, --transition judged against
  bool json = false;
  // The admin steps a backend may offer instead of its checks, each
  // handled in doctor_command: --init marks a new Redis database as new;
  // --sql postgres|mysql prints the SQL an admin runs for simba's tables.
  bool init = false;
  std::string sql;
};

constexpr const char* k_doctor_description =
    "Check that a backend is fit for simba: one line per check, ok, warn or fail with its fix";

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& o);
// 0 all ok, 1 any warn, 69 any fail (docs/exit-codes.md).
int doctor_command(const DoctorOptions& o);

} // namespace simba::cli
