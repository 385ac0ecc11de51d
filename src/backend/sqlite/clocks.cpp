// The two clocks of an operation (clocks.hpp), and the tests' shifted wall
// clock.
#include "backend/sqlite/clocks.hpp"

#include "backend/sqlite/sqlite_backend.hpp"
#include "sys/clock.hpp"

#include "sys/fd.hpp"

#include <atomic>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace simba::backend::sqlite {
namespace {

// Julian day of the Unix epoch in milliseconds (SQLite's VFS clock).
constexpr int64_t k_unix_epoch_julian_ms = 210866760000000;

// The two clocks are read one after the other, each rounded to the
// millisecond: their difference wobbles by a millisecond from one reading to
// the next. It changes for real only when the wall clock steps; a smaller
// change is the wobble, and the last difference is kept, so that a lease
// shows the same times in every reply of a process.
constexpr int64_t k_wall_step_ms = 10;

} // namespace

const std::string& boot_id() {
  static const std::string id = [] {
    char buf[64] = {};
    sys::Fd fd(open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!fd) return std::string();
    ssize_t n = read(fd.get(), buf, sizeof buf - 1);
    std::string s(buf, n > 0 ? size_t(n) : 0);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }();
  return id;
}

void OperationClocks::read(sqlite3_vfs* vfs) {
  m_now.boot = sys::boottime_ms();
  sqlite3_int64 julian_ms = 0;
  vfs->xCurrentTimeInt64(vfs, &julian_ms);
  m_now.wall = julian_ms - k_unix_epoch_julian_ms;
  int64_t diff = m_now.wall - m_now.boot;
  if (!m_boot_to_wall_known || std::abs(diff - m_boot_to_wall) >= k_wall_step_ms)
    m_boot_to_wall = diff;
  m_boot_to_wall_known = true;
}

namespace {

// Test hook: the wall clock SQLite sees (julianday('now'), and the VFS's
// clock) runs a set number of milliseconds ahead of the system's (behind,
// when negative), as after a step of the system clock, which a test cannot
// make. A copy of the default VFS with only its clock replaced, installed
// as the default for connections opened from then on; set from
// SIMBA_TEST_WALL_CLOCK_SHIFT_MS at the first open, or by the backend tests.
std::atomic<int64_t> g_wall_shift_ms{0};
sqlite3_vfs* g_system_vfs = nullptr;
sqlite3_vfs g_shifted_vfs;

int shifted_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
  int rc = g_system_vfs->xCurrentTimeInt64(g_system_vfs, out);
  *out += g_wall_shift_ms.load();
  return rc;
}

int shifted_time(sqlite3_vfs*, double* out) {
  sqlite3_int64 ms = 0;
  int rc = shifted_time_int64(nullptr, &ms);
  *out = double(ms) / 86400000.0;
  return rc;
}

void install_shifted_clock() {
  if (g_system_vfs) return;
  g_system_vfs = sqlite3_vfs_find(nullptr);
  g_shifted_vfs = *g_system_vfs;
  g_shifted_vfs.zName = "simba-shifted-clock";
  g_shifted_vfs.pNext = nullptr;
  g_shifted_vfs.xCurrentTime = shifted_time;
  g_shifted_vfs.xCurrentTimeInt64 = shifted_time_int64;
  sqlite3_vfs_register(&g_shifted_vfs, 1);
}

} // namespace
} // namespace simba::backend::sqlite

namespace simba::backend::testing {
void shift_sqlite_wall_clock(int64_t ms) {
  sqlite::g_wall_shift_ms = ms;
  sqlite::install_shifted_clock();
}
} // namespace simba::backend::testing
