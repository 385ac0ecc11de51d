// The interface's defaults: what a backend without done records, slots,
// marks or history answers (backend.hpp says which calls have one).
#include "backend/backend.hpp"

namespace simba::backend {
namespace {

Reply no_done_records() {
  return Reply::failure(Reply::Status::failed, "this backend keeps no done records (--once-per)");
}

} // namespace

Reply Backend::acquire_once(const std::string&, const std::string&, int64_t, int64_t,
                            const core::OncePer&, const std::string&, const std::string&, int64_t) {
  return no_done_records();
}

Reply Backend::release_once(const std::string&, const std::string&, uint64_t, int, int64_t) {
  return no_done_records();
}

Reply Backend::guard_mark(const std::string& mutex, const std::string& contender, uint64_t token,
                          int64_t ttl_ms, int64_t transition_ms, bool, int64_t timeout_ms) {
  return guard(mutex, contender, token, ttl_ms, transition_ms, timeout_ms);
}

Reply Backend::acquire_slot(const std::string& mutex, const std::string& contender, int slots,
                            int64_t ttl_ms, int64_t transition_ms, int64_t timeout_ms) {
  if (slots == 1) return acquire(mutex, contender, ttl_ms, transition_ms, timeout_ms);
  return Reply::failure(Reply::Status::failed, describe() + " has no --slots above 1");
}

Reply Backend::done_record(const std::string&, int64_t) { return no_done_records(); }

Reply Backend::end_revoked(const std::string&, const std::string&, uint64_t, int64_t) {
  return Reply::failure(Reply::Status::failed,
                        describe() + " keeps a revoked lease until its transition ends");
}

History Backend::history(const std::string&, int64_t, int64_t) {
  History h;
  h.ok = true;
  return h;
}

Reply Backend::record_lost(const std::string&, const std::string&, const LostLease&, int64_t) {
  return Reply::failure(Reply::Status::failed, describe() + " keeps no history");
}

void Backend::diagnose(Diagnosis&, const DiagnoseOptions&) {}

Reply Backend::record_skipped(const std::string&, const std::string&, const SkippedRun&, int64_t) {
  return Reply::failure(Reply::Status::failed, describe() + " keeps no history");
}

} // namespace simba::backend
