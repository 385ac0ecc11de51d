// simba status's table (cli/status_table.cpp) laid out for a given width:
// no line wider, the widest fields cut with "~", the lines under a row
// broken after a comma (nothing lost); no limit: every field whole; the
// command's file name; VIA; revoked leases and slots.
#include "cli/status_table.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace simba;

namespace {

constexpr int64_t k_now = 1796540000000;

backend::Listing one_holder() {
  backend::MutexLease m;
  m.mutex = "deploy/production";
  m.lease.owner_id = "github-actions/deploy-production-eu-west-1-run-4711#0123456789abcdef";
  m.lease.acquired_at = k_now - 5000;
  m.lease.ttl_at = k_now + 15000;
  m.lease.transition_at = k_now + 20000;
  m.lease.fencing_token = 1796100553843000;
  m.holder = backend::Holder{"lead", 4711, "build-host-3.example.org",
                             "/opt/some/long/dir/deploy-the-whole-fleet.sh", 0};
  backend::Waiter w;
  w.owner_id = "patient#0123456789abcdef";
  w.since = k_now - 2000;
  w.holder = backend::Holder{"run", 5120, "build-host-4.example.org", "sh", 0};
  w.gives_up_at = k_now + 180000;
  m.waiters.push_back(w);
  backend::Listing l;
  l.ok = true;
  l.now = k_now;
  l.mutexes.push_back(m);
  return l;
}

std::vector<std::string> lines_of(const backend::Listing& l, size_t width) {
  std::ostringstream out;
  cli::print_status_table(out, l, width);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE("status table: no limit, every field whole, the command's file name, VIA") {
  auto lines = lines_of(one_holder(), cli::k_unlimited_width);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind("MUTEX", 0) == 0);
  CHECK(lines[0].find("VIA") != std::string::npos);
  CHECK(lines[1].find("github-actions/deploy-production-eu-west-1-run-4711  lead  "
                      "build-host-3.example.org  4711  deploy-the-whole-fleet.sh") !=
        std::string::npos);
  CHECK(lines[1].find("/opt/") == std::string::npos);
  CHECK(lines[4].find(", gives up 2026-") != std::string::npos);
  CHECK(lines[4].find("(in 3m)") != std::string::npos);
}

TEST_CASE("status table: fitted to a width, the wide fields cut, the details broken") {
  for (size_t width : {100u, 80u, 72u, 60u, 40u, 20u}) {
    CAPTURE(width);
    auto lines = lines_of(one_holder(), width);
    std::string all;
    for (const std::string& line : lines) {
      CHECK(line.size() <= width);
      all += line + "\n";
    }
    CHECK(lines[0].rfind("MUTEX", 0) == 0);
    CAPTURE(all);
    if (width >= 72) {
      // The mutex, state, VIA and pid stay whole; the label gives way.
      CHECK(lines[1].find("deploy/production  held   github-") == 0);
      CHECK(lines[1].find("~") != std::string::npos);
      CHECK(lines[1].find(" lead ") != std::string::npos);
      CHECK(lines[1].find(" 4711 ") != std::string::npos);
    }
    if (width >= 60) {
      // The token and the waiter's times are all there, on lines of their own.
      CHECK(all.find("token 1796100553843000") != std::string::npos);
      CHECK(all.find("gives up 2026-") != std::string::npos);
    }
  }
}

TEST_CASE("status table: a revoked lease, revoked slots") {
  backend::Listing l = one_holder();
  backend::MutexLease& m = l.mutexes.front();
  m.lease.owner_id.clear(); // release --force: no owner until transition_at
  m.waiters.clear();
  backend::MutexLease s;
  s.mutex = "slotted";
  s.lease.owner_id = "#slots:2";
  s.lease.ttl_at = k_now - 1;
  s.lease.transition_at = k_now + 20000;
  backend::SlotLease revoked;
  revoked.lease.slot = 0;
  revoked.lease.ttl_at = k_now - 1;
  revoked.lease.transition_at = k_now + 20000;
  revoked.lease.fencing_token = 7;
  s.slots = {revoked, backend::SlotLease{}};
  s.slots[1].lease.slot = 1;
  l.mutexes.push_back(s);
  auto lines = lines_of(l, cli::k_unlimited_width);
  REQUIRE(lines.size() == 5);
  CHECK(lines[1].rfind("deploy/production  revoked  -  ", 0) == 0);
  CHECK(lines[2].rfind("  revoked (its command may still be stopping), free ", 0) == 0);
  CHECK(lines[3].rfind("slotted            revoked  -  ", 0) == 0);
  CHECK(lines[3].find("slots") == std::string::npos);
  CHECK(lines[4].rfind("  slot 0: revoked (its command may still be stopping), free ", 0) == 0);
}
