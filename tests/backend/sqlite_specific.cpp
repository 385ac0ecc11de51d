// Checks that only concern the SQLite backend (files, modes, filesystem
// refusal) and the URI parsing of open_backend(). The SQLite cases make
// their own databases in a temporary directory; they are skipped when the
// suite runs against another backend.
#include "support.hpp"

#include "backend/sqlite/sqlite_backend.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using simba::backend::open_backend;
using simba::backend::Reply;
using simba::test::k_timeout;
using namespace simba::test;

namespace {

// A fresh directory (symlinks resolved) removed at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/simba-conf-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    char real[PATH_MAX];
    REQUIRE(realpath(tmpl, real) != nullptr);
    path = real;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

unsigned mode_of(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// The cases of this file run only against SQLite: main() (conformance.cpp)
// filters the file out for other backends, and doctest counts its cases as
// skipped. Reached anyway, a case fails: it must never pass without running.
#define SKIP_UNLESS_SQLITE()                                                                       \
  if (!simba::test::backend_is_sqlite()) {                                                         \
    FAIL("a sqlite-only case ran against " << simba::test::backend_uri()                           \
                                           << " (files tests/backend/sqlite* are filtered out)");  \
  }

} // namespace

TEST_CASE("uri: malformed or unknown URIs are usage errors") {
  for (const char* uri : {"sqlite:", "sqlite://", "sqlite://host/x.db", "sqlite:/tmp/dir/",
                          "foo:bar", "nonsense", "://x", "1abc:x"}) {
    CAPTURE(uri);
    std::string msg = error_of<simba::UsageError>([&] { open_backend(uri); });
    CHECK_FALSE(msg.empty());
  }
  std::string msg = error_of<simba::UsageError>([] { open_backend("foo:bar"); });
  CHECK(msg.find("foo") != std::string::npos);
}

TEST_CASE("uri: a password never appears in an error") {
  for (const char* uri : {"foo://user:hunter2@host/x", "redis://:hunter2@127.0.0.1:1/0",
                          "redis://user:hunter2@127.0.0.1:1", "hunter2@host"}) {
    CAPTURE(uri);
    try {
      open_backend(uri);
      FAIL("opened " << uri);
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("hunter2") == std::string::npos);
    }
  }
}

TEST_CASE("sqlite: the default location gets directories 0700 and a file 0600") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/a/b/simba.db";
  std::unique_ptr<simba::backend::Backend> b;
  {
    ScopedEnv home("SIMBA_HOME", (t.path + "/a/b").c_str());
    b = open_backend("");
  }
  CHECK(b->describe() == "sqlite://" + db);
  CHECK(mode_of(t.path + "/a") == 0700);
  CHECK(mode_of(t.path + "/a/b") == 0700);
  CHECK(mode_of(db) == 0600);

  // Usable at once, and the notification directory is private too.
  auto r = b->acquire("m", "A", 1000, 1000, k_timeout);
  REQUIRE(r.ok());
  REQUIRE(b->release("m", "A", 0, k_timeout).changed);
  REQUIRE(b->wakeups("m", "W").wait() >= 0); // a waiter makes the notify directory
  CHECK(mode_of(db + ".notify") == 0700);

  // An existing directory and file keep their modes.
  REQUIRE(chmod(db.c_str(), 0640) == 0);
  REQUIRE(chmod((t.path + "/a/b").c_str(), 0750) == 0);
  b.reset();
  auto again = open_backend("sqlite:" + db);
  CHECK(mode_of(db) == 0640);
  CHECK(mode_of(t.path + "/a/b") == 0750);
  auto g = again->get("m", k_timeout);
  REQUIRE(g.ok());
  CHECK(g.observed.lease.fencing_token == r.observed.lease.fencing_token);
}

TEST_CASE("sqlite: the schema and WAL mode of a new database") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  open_backend("sqlite://" + db)->acquire("m", "A", 1000, 1000, k_timeout);

  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))) == "wal");
  sqlite3_finalize(s);
  REQUIRE(sqlite3_prepare_v2(
              h, "SELECT name, type, \"notnull\", pk FROM pragma_table_info('simba_mutex')", -1, &s,
              nullptr) == SQLITE_OK);
  std::string cols;
  while (sqlite3_step(s) == SQLITE_ROW) {
    cols += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    cols += ":";
    cols += reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    cols += sqlite3_column_int(s, 2) ? ":nn" : "";
    cols += sqlite3_column_int(s, 3) ? ":pk" : "";
    cols += " ";
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  // WITHOUT ROWID: the primary key is NOT NULL implicitly (one page per write)
  CHECK(cols == "mutex:TEXT:nn:pk owner_id:TEXT:nn acquired_at:INTEGER ttl_at:INTEGER "
                "transition_at:INTEGER fencing_token:INTEGER:nn boot_id:TEXT "
                "boot_acquired_at:INTEGER boot_ttl_at:INTEGER boot_transition_at:INTEGER "
                "boot_token:INTEGER holding:INTEGER holder:TEXT holder_token:INTEGER "
                "history_seq:INTEGER acquisitions:INTEGER losses:INTEGER lost_token:INTEGER ");
}

TEST_CASE("sqlite: the WAL stays bounded: releases and renewals checkpoint, acquires never") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  auto wal_size = [&] {
    struct stat st {};
    return stat((db + "-wal").c_str(), &st) == 0 ? int64_t(st.st_size) : int64_t(0);
  };
  // 150 runs, each with a connection of its own as in a process of its own
  // (the first to attach rebuilds the WAL index from the WAL), each two
  // pages (the lease row's and the history ring's) for the acquire and two
  // for the release: 600 frames (over 2.4 MB) without checkpoints; a
  // checkpoint is due at 64 (connection.cpp).
  for (int i = 0; i < 150; ++i) {
    auto run = open_backend("sqlite://" + db);
    REQUIRE(run->acquire("m", "A", 1000, 1000, k_timeout).ok());
    REQUIRE(run->release("m", "A", 0, k_timeout).changed);
  }
  CHECK(wal_size() < 70 * 4120 + 32);
  auto b = open_backend("sqlite://" + db);
  // A leader that only renews: the same bound.
  simba::backend::Reply held = b->acquire("m", "A", 60000, 1000, k_timeout);
  REQUIRE(held.ok());
  uint64_t token = held.observed.lease.fencing_token;
  for (int i = 0; i < 150; ++i) REQUIRE(b->guard("m", "A", token, 60000, 1000, k_timeout).changed);
  CHECK(wal_size() < 70 * 4120 + 32);
  // Acquires alone (processes killed before their release) grow it; the
  // next release brings it back in bounds.
  for (int i = 0; i < 60; ++i) {
    auto other = "X" + std::to_string(i);
    REQUIRE(b->acquire("n" + std::to_string(i), other, 60000, 1000, k_timeout).ok());
  }
  int64_t grown = wal_size();
  REQUIRE(b->release("m", "A", 0, k_timeout).changed);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(b->acquire("m", "A", 1000, 1000, k_timeout).ok());
    REQUIRE(b->release("m", "A", 0, k_timeout).changed);
  }
  CHECK(grown > 70 * 4120); // the acquires did not checkpoint
  // The release checkpointed and emptied the WAL.
  CHECK(wal_size() < grown);
}

TEST_CASE("sqlite: a hand-over leaves the checkpoint to the next owner's upkeep") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  auto wal_frames = [&] {
    struct stat st {};
    return stat((db + "-wal").c_str(), &st) == 0 ? (int64_t(st.st_size) - 32) / 4120 : int64_t(0);
  };
  open_backend("sqlite://" + db); // the schema
  // The owner A is queued before the waiter, so that the FIFO gate
  // (core/fifo.hpp) lets it take the mutex again at once after each release.
  auto h = open_backend("sqlite://" + db);
  // A waiter in a process of its own (a release skips its own process's
  // place), queued after A: every release below wakes it, i.e. hands over.
  auto fork_waiter = [&] {
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    pid_t waiter = fork();
    REQUIRE(waiter >= 0);
    if (waiter == 0) {
      auto w = open_backend("sqlite://" + db);
      bool queued = w->wakeups("m", "W").wait() >= 0;
      ssize_t ignored = write(ready[1], &queued, 1);
      (void)ignored;
      pause();
      _exit(0);
    }
    bool queued = false;
    REQUIRE(read(ready[0], &queued, 1) == 1);
    REQUIRE(queued);
    close(ready[0]);
    close(ready[1]);
    return waiter;
  };
  auto hand_over = [&](int n) {
    for (int i = 0; i < n; ++i) {
      REQUIRE(h->acquire("m", "A", 1000, 1000, k_timeout).changed);
      REQUIRE(h->release("m", "A", 0, k_timeout).changed);
    }
  };
  REQUIRE(h->wakeups("m", "A").wait() >= 0);
  pid_t waiter = fork_waiter();
  // 40 hand-overs, 160 frames: no checkpoint on their path (the fsyncs would
  // hold up the woken owner's commit).
  hand_over(40);
  int64_t grown = wal_frames();
  // The owner's upkeep, once its CMD runs (it settles), does it: the WAL is emptied.
  h->wakeups("m", "A").settle();
  int64_t after_upkeep = wal_frames();
  // Settled, A left the queue: queued again, then a new waiter after it.
  kill(waiter, SIGKILL);
  waitpid(waiter, nullptr, 0);
  REQUIRE(h->wakeups("m", "A").wait() >= 0);
  waiter = fork_waiter();
  // CMDs too short for any upkeep: the WAL stays bounded all the same.
  hand_over(150);
  int64_t bounded = wal_frames();
  kill(waiter, SIGKILL);
  waitpid(waiter, nullptr, 0);
  CHECK(grown >= 80);
  CHECK(after_upkeep <= 1);
  CHECK(bounded <= 4 * 64 + 4);
}

TEST_CASE("sqlite: relative and default paths") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  char cwd[PATH_MAX];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(chdir(t.path.c_str()) == 0);
  std::string desc;
  try {
    REQUIRE(mkdir("rel", 0700) == 0);
    desc = open_backend("sqlite:rel/x.db")->describe();
  } catch (...) {
    REQUIRE(chdir(cwd) == 0);
    throw;
  }
  REQUIRE(chdir(cwd) == 0);
  CHECK(desc == "sqlite://" + t.path + "/rel/x.db");

  {
    ScopedEnv home("SIMBA_HOME", (t.path + "/sh").c_str());
    CHECK(open_backend("")->describe() == "sqlite://" + t.path + "/sh/simba.db");
  }
  {
    ScopedEnv home("SIMBA_HOME", nullptr);
    ScopedEnv xdg("XDG_STATE_HOME", (t.path + "/xdg").c_str());
    CHECK(open_backend("")->describe() == "sqlite://" + t.path + "/xdg/simba/simba.db");
  }
  {
    ScopedEnv home("SIMBA_HOME", nullptr);
    ScopedEnv xdg("XDG_STATE_HOME", nullptr);
    ScopedEnv h("HOME", (t.path + "/h").c_str());
    CHECK(open_backend("")->describe() == "sqlite://" + t.path + "/h/.local/state/simba/simba.db");
    CHECK(mode_of(t.path + "/h/.local/state/simba") == 0700);
  }
  {
    // A relative XDG_STATE_HOME is invalid (XDG spec): ignored.
    ScopedEnv home("SIMBA_HOME", nullptr);
    ScopedEnv xdg("XDG_STATE_HOME", "relative/state");
    ScopedEnv h("HOME", (t.path + "/h").c_str());
    CHECK(open_backend("")->describe() == "sqlite://" + t.path + "/h/.local/state/simba/simba.db");
  }
}

TEST_CASE("sqlite: a file that is not a SQLite database is refused") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  for (std::string content : {std::string(5000, 'x'), std::string("hello\n")}) {
    std::string path = t.path + "/junk-" + std::to_string(content.size());
    std::ofstream(path) << content;
    std::string msg = error_of<simba::UnavailableError>([&] { open_backend("sqlite://" + path); });
    CAPTURE(msg);
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find("not a SQLite database") != std::string::npos);
  }
  std::string msg = error_of<simba::UnavailableError>([&] { open_backend("sqlite://" + t.path); });
  CHECK(msg.find(t.path) != std::string::npos);
}

TEST_CASE("sqlite: a database on a network filesystem is refused (SIMBA_TEST_FSTYPE hook)") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  {
    ScopedEnv fs("SIMBA_TEST_FSTYPE", "nfs");
    std::string msg = error_of<simba::UnavailableError>([&] { open_backend("sqlite://" + db); });
    CHECK(msg.find("network filesystem") != std::string::npos);
    CHECK(msg.find("NFS") != std::string::npos);
  }
  open_backend("sqlite://" + db); // exists now
  {
    ScopedEnv fs("SIMBA_TEST_FSTYPE", "cifs");
    std::string msg = error_of<simba::UnavailableError>([&] { open_backend("sqlite://" + db); });
    CHECK(msg.find("SMB/CIFS") != std::string::npos);
  }
}

TEST_CASE("sqlite: a directory that cannot be created is refused") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string file = t.path + "/plain";
  std::ofstream(file) << "x";
  // A parent that is a regular file fails for root too.
  std::string msg;
  {
    ScopedEnv home("SIMBA_HOME", (file + "/x").c_str());
    msg = error_of<simba::UnavailableError>([&] { open_backend(""); });
  }
  CHECK(msg.find(file + "/x") != std::string::npos);
  CHECK(msg.find("not a directory") != std::string::npos);

  if (geteuid() != 0) {
    std::string ro = t.path + "/ro";
    REQUIRE(mkdir(ro.c_str(), 0500) == 0);
    std::string m2;
    {
      ScopedEnv home("SIMBA_HOME", (ro + "/sub").c_str());
      m2 = error_of<simba::UnavailableError>([&] { open_backend(""); });
    }
    CHECK(m2.find("permission denied") != std::string::npos);
    std::string m3 =
        error_of<simba::UnavailableError>([&] { open_backend("sqlite://" + ro + "/simba.db"); });
    CHECK(m3.find("permission denied") != std::string::npos);
    chmod(ro.c_str(), 0700);
  } else {
    MESSAGE("running as root: the permission case is covered by the file-as-parent case only");
  }
}

TEST_CASE("sqlite: several processes creating the same new database at once") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string uri = "sqlite://" + t.path + "/new/simba.db";
  REQUIRE(mkdir((t.path + "/new").c_str(), 0700) == 0);
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int i = 0; i < 6; ++i) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 1;
      try {
        auto b = open_backend(uri);
        auto r = b->acquire("m" + std::to_string(i), "A", 1000, 1000, k_timeout);
        code = r.ok() && r.changed ? 0 : 2;
        if (code) std::fprintf(stderr, "child %d: %s\n", i, r.error.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto listing = open_backend(uri)->inspect("", k_timeout);
  REQUIRE(listing.ok);
  CHECK(listing.mutexes.size() == 6);
}

TEST_CASE("sqlite: a busy database fails the call within its timeout") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  auto b = open_backend("sqlite://" + db);
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_exec(h, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  auto r = b->acquire("m", "A", 1000, 1000, 100);
  CHECK(r.status == simba::backend::Reply::Status::failed);
  CHECK(r.error == "database is busy");
  // Reads are not blocked by a writer (WAL).
  CHECK(b->get("m", 100).ok());
  sqlite3_exec(h, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  CHECK(b->acquire("m", "A", 1000, 1000, 100).ok());
}

// The wall clock SQLite sees steps (backend::testing); leases are timed on
// CLOCK_BOOTTIME, so a step changes only the times shown.
struct WallClockShift {
  explicit WallClockShift(int64_t ms) { simba::backend::testing::shift_sqlite_wall_clock(ms); }
  ~WallClockShift() { simba::backend::testing::shift_sqlite_wall_clock(0); }
  void to(int64_t ms) { simba::backend::testing::shift_sqlite_wall_clock(ms); }
};

TEST_CASE("sqlite: a step of the wall clock neither ends nor stretches a lease") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string db = t.path + "/simba.db";
  WallClockShift clock(0); // before the opens: their connections see the shift
  auto a = open_backend("sqlite://" + db);
  auto b = open_backend("sqlite://" + db);
  Reply mine = require_ok(a->acquire("m", "A", 10000, 2000, k_timeout));
  REQUIRE(mine.changed);

  // An hour forward (NTP step, date -s): A's lease is not over.
  clock.to(3600000);
  Reply other = require_ok(b->acquire("m", "B", 10000, 2000, k_timeout));
  CHECK_FALSE(other.changed);
  CHECK(other.observed.lease.owner_id == "A");
  CHECK(other.observed.lease.transition_at - other.observed.now > 10000);
  // The times shown follow the wall clock: acquired a moment ago, by the
  // clock that now reads an hour later.
  CHECK(other.observed.now - mine.observed.now >= 3600000);
  CHECK(other.observed.now - other.observed.lease.acquired_at >= 0);
  CHECK(other.observed.now - other.observed.lease.acquired_at < 5000);
  Reply renewed =
      require_ok(a->guard("m", "A", mine.observed.lease.fencing_token, 10000, 2000, k_timeout));
  CHECK(renewed.changed);
  CHECK(renewed.observed.lease.fencing_token == mine.observed.lease.fencing_token);

  // An hour back, and A renews then: its lease is not shortened for B when
  // the clock is put right again.
  clock.to(-3600000);
  REQUIRE(require_ok(a->guard("m", "A", mine.observed.lease.fencing_token, 10000, 2000, k_timeout))
              .changed);
  clock.to(0);
  other = require_ok(b->acquire("m", "B", 10000, 2000, k_timeout));
  CHECK_FALSE(other.changed);
  CHECK(other.observed.lease.owner_id == "A");

  auto listing = b->inspect("", k_timeout);
  REQUIRE(listing.ok);
  REQUIRE(listing.mutexes.size() == 1);
  CHECK(listing.mutexes[0].lease.owner_id == "A");
  CHECK(listing.mutexes[0].lease.transition_at - listing.now > 10000);

  // A released: B takes it, with a larger token.
  REQUIRE(require_ok(a->release("m", "A", mine.observed.lease.fencing_token, k_timeout)).changed);
  Reply taken = require_ok(b->acquire("m", "B", 10000, 2000, k_timeout));
  CHECK(taken.changed);
  CHECK(taken.observed.lease.fencing_token > mine.observed.lease.fencing_token);
}

namespace {
void exec_sql(sqlite3* h, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  REQUIRE_MESSAGE(rc == SQLITE_OK, sql << ": " << msg);
}

std::string query_text(sqlite3* h, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  else
    out = "NULL";
  sqlite3_finalize(s);
  return out;
}

int64_t wall_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
} // namespace

TEST_CASE("sqlite: an older simba's database is migrated in place; its wall-clock leases keep "
          "their meaning and tokens") {
  SKIP_UNLESS_SQLITE();
  WallClockShift clock(0);
  TempDir t;
  std::string db = t.path + "/simba.db";
  int64_t wall = wall_ms();
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  // The table of the first wave: leases on the wall clock only.
  exec_sql(h, "PRAGMA journal_mode=WAL");
  exec_sql(h, "CREATE TABLE simba_mutex(mutex TEXT PRIMARY KEY, owner_id TEXT NOT NULL, "
              "acquired_at INTEGER, ttl_at INTEGER, transition_at INTEGER, "
              "fencing_token INTEGER NOT NULL) WITHOUT ROWID");
  auto insert = [&](const std::string& m, const std::string& owner, int64_t acquired,
                    int64_t ttl_at, int64_t transition_at, int64_t token) {
    exec_sql(h, "INSERT INTO simba_mutex VALUES ('" + m + "', '" + owner + "', " +
                    std::to_string(acquired) + ", " + std::to_string(ttl_at) + ", " +
                    std::to_string(transition_at) + ", " + std::to_string(token) + ")");
  };
  insert("held", "old", wall - 1000, wall + 50000, wall + 60000, 7000);
  insert("ended", "old", wall - 20000, wall - 10000, wall - 5000, 8000);

  auto b = open_backend("sqlite://" + db);
  // Held for another minute by the wall clock, as its writer sees it.
  Reply r = require_ok(b->acquire("held", "B", 10000, 2000, k_timeout));
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "old");
  CHECK(r.observed.lease.fencing_token == 7000);
  int64_t left = r.observed.lease.transition_at - r.observed.now;
  CHECK(left > 55000);
  CHECK(left <= 60000);
  // Over: taken, with a larger token; the row is now timed on the boot clock,
  // and holds its holder (the columns the migration added).
  b->set_holder(simba::backend::Holder{"run", 55, "host-b", "make"});
  r = require_ok(b->acquire("ended", "B", 10000, 2000, k_timeout));
  CHECK(r.changed);
  {
    auto seen = b->inspect("ended", k_timeout);
    REQUIRE(seen.ok);
    REQUIRE(seen.mutexes.at(0).holder);
    CHECK(seen.mutexes.at(0).holder->pid == 55);
  }
  CHECK(r.observed.lease.fencing_token > 8000);
  CHECK(query_text(h, "SELECT boot_token = fencing_token FROM simba_mutex WHERE mutex = 'ended'") ==
        "1");
  CHECK(query_text(h, "SELECT boot_token FROM simba_mutex WHERE mutex = 'held'") == "NULL");
  CHECK(query_text(h, "SELECT transition_at - " + std::to_string(wall) +
                          " BETWEEN 11000 AND 20000 FROM simba_mutex WHERE mutex = 'ended'") ==
        "1");

  // An older simba still running takes the mutex after B's release: it
  // writes only the wall-clock columns (and a new token); the boot columns
  // B left say "released", but the row is judged on the wall clock.
  REQUIRE(require_ok(b->release("ended", "B", r.observed.lease.fencing_token, k_timeout)).changed);
  exec_sql(h, "UPDATE simba_mutex SET owner_id = 'old2', acquired_at = " + std::to_string(wall) +
                  ", ttl_at = " + std::to_string(wall + 50000) +
                  ", transition_at = " + std::to_string(wall + 60000) +
                  ", fencing_token = fencing_token + 1 WHERE mutex = 'ended'");
  r = require_ok(b->acquire("ended", "B", 10000, 2000, k_timeout));
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "old2");
  // It wrote no holder: B's is not shown as old2's.
  CHECK_FALSE(b->inspect("ended", k_timeout).mutexes.at(0).holder);

  // A lease stamped by an earlier boot is over, whatever its times say.
  exec_sql(h, "INSERT INTO simba_mutex VALUES ('rebooted', 'gone', 0, " +
                  std::to_string(wall + 3600000) + ", " + std::to_string(wall + 3600000) +
                  ", 9000, '00000000-0000-0000-0000-000000000000', 0, 999999999999, 999999999999, "
                  "9000, 0, NULL, NULL, NULL, NULL, NULL, NULL)");
  r = require_ok(b->acquire("rebooted", "B", 10000, 2000, k_timeout));
  CHECK(r.changed);
  CHECK(r.observed.lease.fencing_token > 9000);
  sqlite3_close(h);
}

TEST_CASE("sqlite: a database removed or replaced under its users: the owner's lease is gone, a "
          "waiter opens the path again and waits out the old lease") {
  SKIP_UNLESS_SQLITE();
  TempDir t;
  std::string dir = t.path + "/state";
  std::string db = dir + "/simba.db";
  REQUIRE(mkdir(dir.c_str(), 0700) == 0);
  auto a = open_backend("sqlite://" + db);
  auto w = open_backend("sqlite://" + db);
  Reply held = require_ok(a->acquire("m", "A", 800, 400, k_timeout));
  REQUIRE(held.changed);
  REQUIRE_FALSE(require_ok(w->acquire("m", "W", 800, 400, k_timeout)).changed);

  std::filesystem::remove_all(dir); // rm -rf $SIMBA_HOME

  // The waiter: the path again (a new, empty database), but the lease it
  // saw is still A's until it would have ended.
  Reply r = require_ok(w->acquire("m", "W", 800, 400, k_timeout));
  CHECK_FALSE(r.changed);
  CHECK(r.observed.lease.owner_id == "A");
  CHECK(r.observed.lease.transition_at - r.observed.now > 0);
  CHECK(r.observed.lease.transition_at - r.observed.now <= 1200);
  CHECK(std::filesystem::exists(db));

  // The owner: its lease is gone, whatever it would renew.
  Reply g = require_ok(a->guard("m", "A", held.observed.lease.fencing_token, 800, 400, k_timeout));
  CHECK_FALSE(g.changed);
  CHECK_FALSE(g.observed.lease.owned_by("A", g.observed.now));
  CHECK(g.error.find("removed or replaced") != std::string::npos);
  CHECK_FALSE(require_ok(a->guard("m", "A", held.observed.lease.fencing_token, 800, 400, k_timeout))
                  .observed.lease.owned_by("A", g.observed.now));

  // Once the old lease is over, the waiter takes the mutex in the new file,
  // with a larger token.
  sleep_ms(1300);
  r = require_ok(w->acquire("m", "W", 800, 400, k_timeout));
  CHECK(r.changed);
  CHECK(r.observed.lease.fencing_token > held.observed.lease.fencing_token);
  auto fresh = open_backend("sqlite://" + db); // a new process sees it
  CHECK(require_ok(fresh->get("m", k_timeout)).observed.lease.owner_id == "W");

  // Another database moved over the path (a backup put back, with no WAL
  // of its own): W's lease is gone too.
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open((t.path + "/other.db").c_str(), &h) == SQLITE_OK);
  exec_sql(h, "CREATE TABLE simba_mutex(mutex TEXT PRIMARY KEY, owner_id TEXT NOT NULL, "
              "acquired_at INTEGER, ttl_at INTEGER, transition_at INTEGER, "
              "fencing_token INTEGER NOT NULL) WITHOUT ROWID");
  exec_sql(h, "INSERT INTO simba_mutex VALUES ('x', '', 0, 0, 0, 5)");
  sqlite3_close(h);
  unlink((db + "-wal").c_str());
  unlink((db + "-shm").c_str());
  REQUIRE(std::rename((t.path + "/other.db").c_str(), db.c_str()) == 0);
  g = require_ok(w->guard("m", "W", r.observed.lease.fencing_token, 800, 400, k_timeout));
  CHECK_FALSE(g.observed.lease.owned_by("W", g.observed.now));
  auto listing = w->inspect("", k_timeout);
  REQUIRE(listing.ok);
  REQUIRE(listing.mutexes.size() == 1);
  CHECK(listing.mutexes[0].mutex == "x");
}
