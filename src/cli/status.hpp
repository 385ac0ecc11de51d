#pragma once
#include "cli/options.hpp"

namespace simba::cli {

struct StatusOptions {
  CommonOptions common;
  bool json = false;
};

CLI::App* add_status_command(CLI::App& app, StatusOptions& o);
int status_command(const StatusOptions& o);

struct ReleaseOptions {
  CommonOptions common;
  bool force = false;
};

CLI::App* add_release_command(CLI::App& app, ReleaseOptions& o);
int release_command(const ReleaseOptions& o);

} // namespace simba::cli
