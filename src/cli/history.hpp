#pragma once
// simba history: what happened to the mutexes (Backend::history), newest
// last: a line per event for people, JSON for programs.
#include "cli/options.hpp"

namespace simba::cli {

struct HistoryOptions {
  CommonOptions common;
  std::string since; // --since D: the events of the last D
  bool json = false;
};

constexpr const char* k_history_description =
    "Show what happened: acquired, released, forced, expired, handed over, lost";

CLI::App* add_history_command(CLI::App& app, HistoryOptions& o);
int history_command(const HistoryOptions& o);

} // namespace simba::cli
