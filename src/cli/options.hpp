#pragma once
// Options shared by the subcommands (DESIGN §6) and what they turn into.
#include "backend/open_backend.hpp"
#include "core/contender.hpp"

#include <memory>
#include <string>
#include <vector>

// CLI11 is named only: its header costs each file that includes it ~5 s of
// compile time and a copy of its validators' static objects; the files that
// build the command line include it.
namespace CLI {
class App;
class Validator;
} // namespace CLI

namespace simba::cli {

struct CommonOptions {
  std::string mutex;
  std::string backend;
  std::string ttl = "10s";
  std::string transition = "2s";
  std::string contender_id;
  bool quiet = false;
  bool verbose = false;
};

// --backend (SIMBA_BACKEND) alone.
void add_backend_option(CLI::App& cmd, CommonOptions& o);
// --backend (SIMBA_BACKEND), -q (described by `quiet_help`), -v.
void add_backend_options(CLI::App& cmd, CommonOptions& o, const char* quiet_help);

// A check for a numeric option: decimal digits only. CLI11 reads integers
// in C's base 0 (`010` is 8, `0x10` is 16); a count a person types is
// decimal, so `010` means 10 and anything else is a usage error.
const CLI::Validator& decimal_number();
// --mutex (SIMBA_MUTEX), --ttl, --transition, --contender-id and the above.
void add_contend_options(CLI::App& cmd, CommonOptions& o);

// Validates the common options into a contender configuration (mutex name,
// durations, contender id; a default id from pid, host and a random nonce).
core::ContenderConfig contender_config(const CommonOptions& o);

// --no-wait and --timeout (run, acquire) into `config`; both given: 64.
void apply_wait_options(core::ContenderConfig& config, bool no_wait, const std::string& timeout);

// `inspect` (status, release): creates nothing (backend::Access).
std::unique_ptr<backend::Backend> open_backend(const CommonOptions& o,
                                               backend::Access access = backend::Access::use);

// A Redis URI (redis://, rediss://, redis+...): its quarantine notice
// names doctor --init, which only Redis has.
bool is_redis_uri(const std::string& uri);

// This process's host name and pid, each read once (gethostname, getpid).
const std::string& this_host();
long this_pid();

// Who this process is, for the leases it takes (Backend::set_holder): `via`
// the subcommand, `command` CMD's argv[0] only ("" for acquire).
backend::Holder this_holder(const char* via, const std::string& command);
// ... and, waiting with --timeout, when it gives up (status shows it).
backend::Holder this_holder(const char* via, const std::string& command,
                            const core::ContenderConfig& config);

// A uniform integer source for the jitter, seeded from the kernel.
core::ContendPeriod::Uniform random_uniform();

} // namespace simba::cli
