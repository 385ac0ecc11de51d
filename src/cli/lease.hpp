#pragma once
// The split-phase lease of a CI job (docs/recipes.md "A lock across the steps of a
// job"): simba acquire takes a lease and leaves no process behind; its
// handle (core/lease_handle.hpp) lets later processes run steps under it
// (run --lease, cli/run.cpp), renew it and release it.
#include "cli/driver.hpp"
#include "cli/options.hpp"
#include "core/lease_handle.hpp"

#include <string>

namespace simba::cli {

struct AcquireOptions {
  AcquireOptions() { common.ttl.clear(); } // --ttl is required
  CommonOptions common;
  std::string timeout;
  bool no_wait = false;
  std::string env_file;
  int slots = 1; // --slots N (core/slots.hpp)
};

struct RenewOptions {
  CommonOptions common;
  std::string lease;
  std::string ttl; // empty: the handle's
};

constexpr const char* k_acquire_description =
    "Wait for the mutex and take a lease that outlives simba (for the steps of a CI job); "
    "print its handle";
constexpr const char* k_renew_description = "Extend a lease of simba acquire (--lease H)";

// The exit code of release --lease when the handle's lease was not held
// any more (expired, released, revoked or replaced): nothing was changed.
constexpr int k_release_not_held = 76;

CLI::App* add_acquire_command(CLI::App& app, AcquireOptions& o);
Outcome acquire_command(const AcquireOptions& o);
CLI::App* add_renew_command(CLI::App& app, RenewOptions& o);
int renew_command(const RenewOptions& o);
// renew's one call: a lease between steps stays marked as only held, one a
// step guards stays guarded (Backend::extend decides it atomically, so a
// step starting meanwhile is never marked as nothing running). Throws
// UnavailableError when the backend does not answer.
backend::Reply renew_lease(backend::Backend& backend, const core::LeaseHandle& h, int64_t ttl_ms);
// release --lease H (the release subcommand's other form).
int release_lease_command(const CommonOptions& o, const std::string& lease);

// Throws UsageError unless `h` is a handle of `backend`.
void check_lease_backend(const core::LeaseHandle& h, const backend::Backend& backend);

} // namespace simba::cli
