// CMD's environment under a lease (command.hpp).
#include "cli/command.hpp"

#include <cstring>

extern char** environ;

namespace simba::cli {

std::vector<std::string> child_env(const Command& command, const core::ContenderConfig& config,
                                   const core::Lease& lease) {
  static const char* const k_ours[] = {
      "SIMBA_MUTEX=",         "SIMBA_CONTENDER_ID=", "SIMBA_OWNER_ID=",
      "SIMBA_FENCING_TOKEN=", "SIMBA_ACQUIRED_AT=",  "SIMBA_TTL_MS=",
      "SIMBA_TRANSITION_MS=", "SIMBA_SLOT=",         "SIMBA_SLOTS="};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    bool skip = false;
    for (const char* p : k_ours) skip = skip || strncmp(*e, p, strlen(p)) == 0;
    for (const auto& x : command.extra_env) {
      skip = skip || strncmp(*e, x.c_str(), x.find('=') + 1) == 0;
    }
    if (!skip) env.emplace_back(*e);
  }
  env.push_back("SIMBA_MUTEX=" + config.mutex);
  env.push_back("SIMBA_CONTENDER_ID=" + config.label);
  env.push_back("SIMBA_OWNER_ID=" + config.contender_id);
  env.push_back("SIMBA_FENCING_TOKEN=" + std::to_string(lease.fencing_token));
  env.push_back("SIMBA_ACQUIRED_AT=" + std::to_string(lease.acquired_at));
  env.push_back("SIMBA_TTL_MS=" + std::to_string(config.ttl_ms));
  env.push_back("SIMBA_TRANSITION_MS=" + std::to_string(config.transition_ms));
  env.push_back("SIMBA_SLOT=" + std::to_string(lease.slot));
  env.push_back("SIMBA_SLOTS=" + std::to_string(config.slots));
  for (const auto& x : command.extra_env) env.push_back(x);
  return env;
}

} // namespace simba::cli
