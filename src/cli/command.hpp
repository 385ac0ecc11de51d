#pragma once
// CMD as simba runs it: what to execute, and the environment it gets under
// a lease (DESIGN §6).
#include "core/contender.hpp"
#include "core/lease.hpp"

#include <string>
#include <vector>

namespace simba::cli {

struct Command {
  std::string path;                   // resolved executable
  std::vector<std::string> argv;      // as the user wrote it
  std::vector<std::string> extra_env; // "K=V" added to simba's environment
};

// The child's environment: ours, minus the SIMBA_ lease variables an outer
// simba set, plus the lease. SIMBA_CONTENDER_ID is the label the user chose
// (--contender-id); SIMBA_OWNER_ID the unique owner id that `status` shows.
std::vector<std::string> child_env(const Command& command, const core::ContenderConfig& config,
                                   const core::Lease& lease);

} // namespace simba::cli
